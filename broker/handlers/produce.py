"""Produce (0): batches stay opaque bytes; storage validates headers/CRC and assigns offsets.
v12+ adds a transactional batch's partition to its transaction (KIP-890 part 2); v13 names
topics by id (KIP-516). Versions 0-2 are advertised, as Kafka 4.x advertises them (some
librdkafka versions need that, KAFKA-18659), and refused as Kafka refuses them: the
connection is closed."""
from minikafka.protocol import records as rec
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.storage.validator import RecordValidationError
from ..broker import TransactionVerificationError
from ..security.authorizer import TOPIC, TRANSACTIONAL_ID, WRITE
from .common import CloseConnection, resolve_topic

API_KEY = 0
VERSIONS = (0, 13)
FIRST_SERVED_VERSION = 3  # Kafka 4.0 removed 0-2 (KIP-896) but still advertises them
MIXED_PRODUCERS = "Transactional records contained more than one producer ID"


def _check_single_batch(records) -> None:
    """Kafka's ProduceRequest.validateRecords: v3+ carries exactly one magic-2 batch."""
    if not records:
        raise KafkaError(ErrorCode.INVALID_RECORD, "Produce request carries no record batch")
    if len(records) < rec.HEADER_SIZE:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, "Record batch is shorter than its header")
    h = rec.parse_header(records, 0)
    if h.magic != rec.MAGIC:
        raise KafkaError(ErrorCode.INVALID_RECORD, "Produce requests with version 3+ may only contain record batches with magic version 2")
    if h.size < len(records):
        raise KafkaError(ErrorCode.INVALID_RECORD, "Produce requests with version 3+ may only contain a single record batch")


# (The loops over partitions read the decoded request by subscript: an attribute of a decoded
# message costs about 15 times as much, and a Produce request can carry thousands of them.)


def _has_transactional_records(req) -> bool:
    """Kafka's RequestUtils.hasTransactionalRecords (first batch of each partition)."""
    for t in req["topic_data"]:
        for p in t["partition_data"]:
            records = p["records"]
            if records and len(records) >= rec.HEADER_SIZE and rec.parse_header(records, 0).is_transactional:
                return True
    return False


def _transactional_producers(broker, req, by_id: bool) -> set[tuple[int, int]]:
    """(producer id, epoch) of the transactional batches bound for existing partitions with
    well-formed records (what Kafka's ReplicaManager.handleProduceAppend receives)."""
    found = set()
    for t in req["topic_data"]:
        name, topic_err = resolve_topic(broker, t["name"], t["topic_id"], by_id)
        if topic_err is not None:
            continue
        for p in t["partition_data"]:
            if broker.get_log(name, p["index"]) is None:
                continue
            records = p["records"]
            try:
                _check_single_batch(records)
            except KafkaError:
                continue
            h = rec.parse_header(records, 0)
            if h.is_transactional and h.producer_id >= 0:
                found.add((h.producer_id, h.producer_epoch))
    return found


async def handle(conn, header, req):
    if header.api_version < FIRST_SERVED_VERSION:
        raise CloseConnection(f"Produce v{header.api_version} is no longer served")
    broker = conn.broker
    acks = req["acks"]
    transactional_id = req["transactional_id"]
    by_id = header.api_version >= 13
    failed = False
    responses = []
    # transactional records need a transactional id the principal may WRITE (Kafka's
    # handleProduceRequest): else the whole request is refused
    transactional = _has_transactional_records(req)
    refused = transactional and (
        transactional_id is None or not conn.authorize(WRITE, TRANSACTIONAL_ID, transactional_id))
    # transactional batches of more than one producer (id and epoch) in one request: Kafka's
    # handleProduceAppend throws InvalidPidMappingException before appending anything, and
    # every partition of the request gets it (ProduceRequest.getErrorResponse). (Without a
    # transactional first batch there is no transactional producer: the scan is skipped.)
    mixed = transactional and not refused and len(_transactional_producers(broker, req, by_id)) > 1
    for t in req["topic_data"]:
        name, topic_err = resolve_topic(broker, t["name"], t["topic_id"], by_id)
        parts = []
        for p in t["partition_data"]:
            index, records = p["index"], p["records"]
            r = {"index": index, "error_code": 0, "base_offset": -1, "log_append_time_ms": -1,
                 "log_start_offset": -1, "record_errors": [], "error_message": None}
            try:
                if refused:
                    r["error_code"] = int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)  # no message, as Kafka
                    failed = True
                    parts.append(r)
                    continue
                if mixed:
                    raise KafkaError(ErrorCode.INVALID_PRODUCER_ID_MAPPING, MIXED_PRODUCERS)
                if topic_err is not None:
                    raise KafkaError(topic_err)
                if not conn.authorize(WRITE, TOPIC, name):
                    raise KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                if acks not in (0, 1, -1):
                    raise KafkaError(ErrorCode.INVALID_REQUIRED_ACKS)
                if broker.is_internal(name):
                    # Kafka refuses client writes to internal topics
                    raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Cannot append to internal topic {name}")
                lg = broker.require_log(name, index)
                _check_single_batch(records)
                res = await broker.append_records(lg, records, transactional_id, header.api_version)
                if res.flush_needed:
                    # flush.messages reached by this append: Kafka fsyncs before it answers
                    await broker.flush_log(lg, res.last_offset + 1)
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
                elif isinstance(e, TransactionVerificationError) or mixed:
                    r.update(error_message=e.message)  # Kafka's own text for some (hasCustomErrorMessage)
            parts.append(r)
        responses.append({"name": t["name"], "topic_id": t["topic_id"], "partition_responses": parts})
    if acks == 0:
        if failed:
            raise CloseConnection("acks=0 produce failed")
        return None
    return {"responses": responses, "throttle_time_ms": 0}
