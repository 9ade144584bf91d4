"""Produce (0): batches stay opaque (read-only views of the request's frame, see
protocol/schema.py, written to the segment file as they are); storage validates
headers/CRC and assigns offsets.
v12+ adds a transactional batch's partition to its transaction (KIP-890 part 2); v13 names
topics by id (KIP-516). Versions 0-2 are advertised, as Kafka 4.x advertises them (some
librdkafka versions need that, KAFKA-18659), and refused as Kafka refuses them: the
connection is closed."""
from minikafka.protocol import records as rec
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.storage.validator import RecordValidationError
from ..replica_manager import TransactionSupportedOperation, TransactionVerificationError
from ..security.authorizer import TOPIC, TRANSACTIONAL_ID, WRITE
from .common import CloseConnection, resolve_topic

FIRST_SERVED_VERSION = 3  # Kafka 4.0 removed 0-2 (KIP-896) but still advertises them
MIXED_PRODUCERS = "Transactional records contained more than one producer ID"


def _check_single_batch(records, version: int):
    """Kafka's ProduceRequest.validateRecords: v3+ carries exactly one whole magic-2 batch (bytes
    after it that make no whole batch are ignored, as Kafka's readers ignore them: the batch
    alone is returned); zstd needs v7+. Header fields only: the log validates the rest."""
    size = rec.next_batch_size(records) if records else None
    if size is None:
        raise KafkaError(ErrorCode.INVALID_RECORD, f"Produce requests with version {version} must have at least one "
                                                   f"record batch per partition")
    if records[rec.MAGIC_OFFSET] != rec.MAGIC:
        raise KafkaError(ErrorCode.INVALID_RECORD, f"Produce requests with version {version} are only allowed to "
                                                   f"contain record batches with magic version 2")
    if version < 7 and size >= rec.HEADER_SIZE and _codec(records) == rec.Compression.ZSTD:
        raise KafkaError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"Produce requests with version {version} are "
                                                                 f"not allowed to use ZStandard compression")
    if size == len(records):
        return records
    if rec.next_batch_size(records, size) is not None:
        raise KafkaError(ErrorCode.INVALID_RECORD, f"Produce requests with version {version} are only allowed to "
                                                   f"contain exactly one record batch per partition")
    return records[:size]


def _v2_header(records, size: int | None) -> bool:
    """Whether a first batch of ``size`` bytes (next_batch_size) has a whole magic-2 header."""
    return size is not None and size >= rec.HEADER_SIZE and records[rec.MAGIC_OFFSET] == rec.MAGIC


def _codec(records) -> int:
    return records[rec.ATTRIBUTES_OFFSET + 1] & rec.COMPRESSION_MASK


def _unknown_codec_before_v7(conn, req, by_id: bool) -> KafkaError | None:
    """Produce v3-v6: Kafka's validateRecords reads the codec of the batch of every partition it
    serves (to refuse zstd); a codec id of 5-7 makes that read throw (CompressionType.forId), no
    Kafka error, before anything is appended: every partition of the request gets
    UNKNOWN_SERVER_ERROR."""
    ctx = conn.ctx
    for t in req["topic_data"]:
        name, topic_err = resolve_topic(ctx, t["name"], t["topic_id"], by_id)
        if topic_err is not None or not conn.authorize(WRITE, TOPIC, name):
            continue
        for p in t["partition_data"]:
            records = p["records"]
            if not records or ctx.replicas.get_log(name, p["index"]) is None:
                continue
            try:
                size = rec.next_batch_size(records)
            except KafkaError:
                continue
            if _v2_header(records, size) and _codec(records) > rec.Compression.ZSTD:
                return KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"Unknown compression type id: {_codec(records)}")
    return None


# (The loops over partitions read the decoded request by subscript: an attribute of a decoded
# message costs about 15 times as much, and a Produce request can carry thousands of them.)


def _has_transactional_records(req) -> bool:
    """Kafka's RequestUtils.hasTransactionalRecords: whether the first batch of some partition is
    transactional, reading partitions in order up to the first that is. Reading a first batch
    whose declared size is below any batch's or whose magic is unknown fails the whole request
    (CORRUPT_MESSAGE, raised here with Kafka's text)."""
    for t in req["topic_data"]:
        for p in t["partition_data"]:
            records = p["records"]
            size = rec.next_batch_size(records) if records else None
            if _v2_header(records, size) and records[rec.ATTRIBUTES_OFFSET + 1] & rec.TRANSACTIONAL_FLAG:
                return True
    return False


def _by_partition(req, by_id: bool) -> list[tuple[dict, dict]]:
    """The request's topics, each once, with {partition: records}: Kafka keys a Produce request's
    partitions by topic and partition (handleProduceRequest's maps), so a partition named twice
    is appended and answered once, with the records named last, and a topic named twice is one
    entry of the answer."""
    topics: dict = {}
    for t in req["topic_data"]:
        key = t["topic_id"] if by_id else t["name"]
        entry = topics.get(key)
        if entry is None:
            entry = topics[key] = (t, {})
        by_index = entry[1]
        for p in t["partition_data"]:
            by_index[p["index"]] = p["records"]
    return list(topics.values())


def _names_several_partitions(req) -> bool:
    """Whether the request names more than one partition (with one, there is one producer)."""
    topics = req["topic_data"]
    return len(topics) > 1 or (len(topics) == 1 and len(topics[0]["partition_data"]) > 1)


def _transactional_producers(ctx, req, by_id: bool, version: int) -> set[tuple[int, int]]:
    """(producer id, epoch) of the transactional batches bound for existing partitions with
    well-formed records (what Kafka's ReplicaManager.handleProduceAppend receives)."""
    found = set()
    for t in req["topic_data"]:
        name, topic_err = resolve_topic(ctx, t["name"], t["topic_id"], by_id)
        if topic_err is not None:
            continue
        for p in t["partition_data"]:
            if ctx.replicas.get_log(name, p["index"]) is None:
                continue
            records = p["records"]
            try:
                records = _check_single_batch(records, version)
            except KafkaError:
                continue
            h = rec.parse_header(records, 0)
            if h.is_transactional and h.producer_id >= 0:
                found.add((h.producer_id, h.producer_epoch))
    return found


async def handle(conn, header, req):
    if header.api_version < FIRST_SERVED_VERSION:
        raise CloseConnection(f"Produce v{header.api_version} is no longer served")
    ctx = conn.ctx
    acks = req["acks"]
    transactional_id = req["transactional_id"]
    by_id = header.api_version >= 13
    failed = False
    responses = []
    # transactional records need a transactional id the principal may WRITE (Kafka's
    # handleProduceRequest): else the whole request is refused
    try:
        transactional = _has_transactional_records(req)
        request_error = None
    except KafkaError as e:
        # Kafka fails the whole request when it cannot read a first batch: every partition
        # gets the error and its text (ProduceRequest.getErrorResponse)
        transactional, request_error = False, e
    refused = transactional and (
        transactional_id is None or not conn.authorize(WRITE, TRANSACTIONAL_ID, transactional_id))
    if request_error is None and not refused and header.api_version < 7:
        request_error = _unknown_codec_before_v7(conn, req, by_id)
    # transactional batches of more than one producer (id and epoch) in one request: Kafka's
    # handleProduceAppend throws InvalidPidMappingException before appending anything, and
    # every partition of the request gets it, as above. (Without a transactional first batch
    # there is no transactional producer, with one partition only one: the scan is skipped.)
    if (request_error is None and transactional and not refused and _names_several_partitions(req)
            and len(_transactional_producers(ctx, req, by_id, header.api_version)) > 1):
        request_error = KafkaError(ErrorCode.INVALID_PRODUCER_ID_MAPPING, MIXED_PRODUCERS)
    for t, by_index in _by_partition(req, by_id):
        name, topic_err = resolve_topic(ctx, t["name"], t["topic_id"], by_id)
        parts = []
        for index, records in by_index.items():
            r = {"index": index, "error_code": 0, "base_offset": -1, "log_append_time_ms": -1,
                 "log_start_offset": -1, "record_errors": [], "error_message": None}
            try:
                if refused:
                    r["error_code"] = int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)  # no message, as Kafka
                    failed = True
                    parts.append(r)
                    continue
                if request_error is not None:
                    raise request_error
                if topic_err is not None:
                    raise KafkaError(topic_err)
                if not conn.authorize(WRITE, TOPIC, name):
                    raise KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                # Kafka's order: the partition exists, its records pass validateRecords
                # (handleProduceRequest), then acks and internal topics (ReplicaManager)
                lg = ctx.replicas.require_log(name, index)
                records = _check_single_batch(records, header.api_version)
                if acks not in (0, 1, -1):
                    raise KafkaError(ErrorCode.INVALID_REQUIRED_ACKS)
                if ctx.topics.is_internal(name):
                    # Kafka refuses client writes to internal topics
                    raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Cannot append to internal topic {name}")
                res = await ctx.replicas.append_records(
                    lg, records, transactional_id, TransactionSupportedOperation.of_produce(header.api_version))
                if res.flush_needed:
                    # flush.messages reached by this append: Kafka fsyncs before it answers
                    await ctx.replicas.flush_log(lg, res.last_offset + 1)
                r.update(base_offset=res.base_offset, log_append_time_ms=res.log_append_time_ms,
                         log_start_offset=res.log_start_offset)
            except KafkaError as e:
                failed = True
                # Kafka sends error_message and record_errors (v8+) only for per-record validation
                # failures (RecordValidationException) and a few transaction verification failures;
                # other errors carry just the code. The log
                # start offset comes with errors found by the log's validation.
                r.update(error_code=int(e.code), log_start_offset=getattr(e, "log_start_offset", -1))
                if isinstance(e, RecordValidationError):
                    r.update(error_message=e.message,
                             record_errors=[{"batch_index": i, "batch_index_error_message": m}
                                            for i, m in e.record_errors])
                elif isinstance(e, TransactionVerificationError) or e is request_error:
                    r.update(error_message=e.message)  # Kafka's own text for some (hasCustomErrorMessage)
            parts.append(r)
        responses.append({"name": t["name"], "topic_id": t["topic_id"], "partition_responses": parts})
    if acks == 0:
        if failed:
            raise CloseConnection("acks=0 produce failed")
        return None
    return {"responses": responses, "throttle_time_ms": 0}
