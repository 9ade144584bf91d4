"""Checks on the batches of an append before offsets are assigned (Kafka's ``LogValidator``).

:func:`analyze_append` reads every record of every client batch (protocol/record_walk.py), as
Kafka's validator iterates them, compressed or not, and decides what the append is: refused
(the error kept in the :class:`Analysis`, raised by the log where Kafka's validation raises
it), or accepted with the header changes Kafka makes inside the CRC (the records' max
timestamp, the timestamp type) and, when the topic's ``compression.type`` is another codec,
the batch rebuilt under it. It is a generator of bounded steps (record_walk), so a caller can
spread a large batch over many turns of its event loop; the log's own :meth:`append` runs it
in one go when given no analysis.

Batch-level problems (record count, control batch from a client, missing sequence) are one
:class:`KafkaError`, as Kafka's ``InvalidRecordException``; so are records that do not match
their batch (INVALID_RECORD) and a compressed section its codec cannot read
(UNKNOWN_SERVER_ERROR). Record-level problems (a record without a key on a compacted topic, a
timestamp out of ``message.timestamp.before/after.max.ms``, a producer-set LogAppendTime) are
collected for every record of the batch and raised together as a
:class:`RecordValidationError`; Produce v8+ answers with each record's batch index and message
(``record_errors``) and a summary (``error_message``), which clients report per record.
"""
from __future__ import annotations

from typing import Generator

from minikafka.protocol import record_walk as walk
from minikafka.protocol import records as rec
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.storage.config import COMPRESSION_CODECS, LogConfig

_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1
_SAFE = 1 << 62                    # timestamps this far from 0 compare without Java's overflow
_KEPT_ATTRIBUTES = rec.COMPRESSION_MASK | rec.TRANSACTIONAL_FLAG | rec.CONTROL_FLAG


MAX_RECORD_ERRORS = 10_000
# records of more than this many bytes have their batches' CRCs checked in a step of their own,
# which may go to a worker thread (crc32c lets go of the GIL; tens of MB take milliseconds)
CHECK_IN_STEP_BYTES = 4 << 20


class RecordErrors:
    """The failing records of one batch, as Kafka's ``processRecordErrors`` reports them: every
    error counted, the first :data:`MAX_RECORD_ERRORS` kept (a batch of a million bad records
    would otherwise hold, and answer, a million messages)."""

    def __init__(self):
        self.kept: list[tuple[int, str]] = []
        self.total = 0
        self.timestamp = False

    def add(self, index: int, code: ErrorCode, message) -> None:
        self.total += 1
        if code == ErrorCode.INVALID_TIMESTAMP:
            self.timestamp = True
        if len(self.kept) < MAX_RECORD_ERRORS:
            self.kept.append((index, message()))


class RecordValidationError(KafkaError):
    """Kafka's ``RecordValidationException``: records of a batch failed validation, the whole
    batch is refused. INVALID_TIMESTAMP if any record's timestamp is the reason, else
    INVALID_RECORD; the summary is Kafka's text, word for word."""

    def __init__(self, errors: RecordErrors):
        self.record_errors = errors.kept
        if errors.timestamp:
            super().__init__(ErrorCode.INVALID_TIMESTAMP,
                             "One or more records have been rejected due to invalid timestamp")
        else:
            shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in self.record_errors[:3])
            super().__init__(ErrorCode.INVALID_RECORD,
                             f"One or more records have been rejected due to {errors.total} record errors in "
                             f"total, and only showing the first three errors at most: [{shown}]")


class Analysis:
    """An append's validation, done: ``error`` (raised by the append), or the records to write
    (``records``: the caller's, or the rebuilt batch), their ``batches`` ((position, header)),
    and ``fixes``: (index in batches, max timestamp, attributes) for the batches whose header
    Kafka rewrites inside the CRC. ``now_ms`` is the append's time."""

    __slots__ = ("records", "batches", "fixes", "rebuilt", "now_ms", "error")

    def __init__(self, records, batches, fixes, rebuilt: bool, now_ms: int, error: KafkaError | None = None):
        self.records, self.batches, self.fixes, self.rebuilt = records, batches, fixes, rebuilt
        self.now_ms, self.error = now_ms, error


def validate_client_batch(h: rec.BatchHeader, name: str) -> None:
    """Kafka's ``validateBatch`` for a client's batch (INVALID_RECORD), after the codec check of
    ``analyzeAndValidateRecords``: codec ids 5-7 make Kafka's ``CompressionType.forId`` throw,
    which is no Kafka error (UNKNOWN_SERVER_ERROR)."""
    if h.attributes & rec.COMPRESSION_MASK > rec.Compression.ZSTD:
        raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR,
                         f"Unknown compression type id: {h.attributes & rec.COMPRESSION_MASK}")
    count = h.records_count
    if count <= 0:
        raise KafkaError(ErrorCode.INVALID_RECORD,
                         f"Invalid reported count for record batch: {count} in topic partition {name}.")
    if h.last_offset_delta + 1 != count:
        raise KafkaError(ErrorCode.INVALID_RECORD,
                         f"Inconsistent batch offset range [{h.base_offset}, {h.last_offset}] and count of records "
                         f"{count} in topic partition {name}.")
    if h.attributes & rec.CONTROL_FLAG:
        raise KafkaError(ErrorCode.INVALID_RECORD,
                         f"Clients are not allowed to write control records in topic partition {name}.")
    if h.producer_id >= 0 and h.base_sequence < 0:
        raise KafkaError(ErrorCode.INVALID_RECORD,
                         f"Invalid sequence number {h.base_sequence} in record batch with producerId "
                         f"{h.producer_id} in topic partition {name}.")


def _java_long(x: int) -> int:
    """``x`` as Java's long arithmetic has it (timestamps and bounds overflow so in Kafka)."""
    return (x + (1 << 63)) % (1 << 64) - (1 << 63)


def snappy_block_limit(config: LogConfig) -> int:
    """The largest snappy block the broker inflates: a few times ``max.message.bytes`` (Kafka's
    reader allocates what a block declares, up to its heap)."""
    return max(32 << 20, 4 * config.max_message_bytes)


def analyze_append(records, config: LogConfig, now_ms: int, name: str,
                   from_client: bool) -> Generator[walk.Step, None, Analysis]:
    """Validate an append as Kafka does before assigning offsets (its first checks of
    ``UnifiedLog.append`` and ``analyzeAndValidateRecords``, then ``LogValidator``). Never
    raises: a refusal is the :class:`Analysis`'s ``error``."""
    try:
        return (yield from _analyze(records, config, now_ms, name, from_client))
    except KafkaError as e:
        return Analysis(records, [], [], False, now_ms, e)


def _analyze(records, config: LogConfig, now_ms: int, name: str, from_client: bool):
    buf = records
    if not buf:
        raise KafkaError(ErrorCode.INVALID_RECORD,
                         "Produce requests with version 3 and above must have at least one record batch")
    # Kafka's first check of a client's batch, before its size and CRC
    base = rec.base_offset_of(buf) if from_client and len(buf) >= rec.LOG_OVERHEAD else 0
    if base != 0:
        raise KafkaError(ErrorCode.INVALID_RECORD, f"The baseOffset of the record batch in the append to "
                                                   f"{name} should be 0, but it is {base}")
    if not from_client:
        # the broker's own batches (markers, coordinator records): built a moment ago
        return Analysis(buf, rec.own_batches(buf, config.max_message_bytes), [], False, now_ms)
    if len(buf) > CHECK_IN_STEP_BYTES:
        batches = yield from _validated_in_step(buf, config.max_message_bytes)
    else:
        batches = rec.validate_batches(buf, max_size=config.max_message_bytes)
    for _, h in batches:
        validate_client_batch(h, name)
    target = COMPRESSION_CODECS.get(config.compression_type)      # None: the producer's codec
    block_limit = snappy_block_limit(config)
    fixes = []
    rebuild = []
    for i, (pos, h) in enumerate(batches):
        codec = h.attributes & rec.COMPRESSION_MASK
        summary = yield from walk.walk_records(buf, pos, h.size, h.records_count, codec, block_limit=block_limit)
        max_ts = yield from _validate_records(buf, pos, h, summary, config, now_ms, name, block_limit)
        if target is not None and target != codec:
            rebuild.append((i, max_ts))
            continue
        if codec and not summary.ordered:
            # Kafka rebuilds a compressed batch whose inner offsets are not 0, 1, ... from records it
            # read without their keys and values (LogValidator's skipKeyValueIterator), which throws:
            # the append fails with no Kafka error
            raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, "key is skipped in PartialDefaultRecord")
        if not config.log_append_time:
            attributes = h.attributes & _KEPT_ATTRIBUTES
            if h.timestamp_type != rec.TimestampType.CREATE_TIME or max_ts != h.max_timestamp:
                fixes.append((i, max_ts, attributes))
    if rebuild:
        return (yield from _rebuild(buf, batches, rebuild, target, config, now_ms, block_limit))
    return Analysis(buf, batches, fixes, False, now_ms)


def _validated_in_step(buf, max_size: int):
    """``rec.validate_batches`` as one callable step (its refusal raised here, in the walk)."""
    out = []

    def check():
        try:
            out.append(rec.validate_batches(buf, max_size=max_size))
        except KafkaError as e:
            out.append(e)
    yield check
    if isinstance(out[0], KafkaError):
        raise out[0]
    return out[0]


def _validate_records(buf, pos: int, h: rec.BatchHeader, summary: walk.RecordSummary, config: LogConfig,
                      now_ms: int, name: str, block_limit: int):
    """Kafka's ``validateRecord`` for every record of one batch: the key on a compacted topic
    first, then the timestamp. Raises :class:`RecordValidationError` listing every failing
    record; returns the records' max timestamp as Kafka computes it (from -1)."""
    check_keys = config.compact_enabled
    create_time = not config.log_append_time
    producer_lat = bool(h.attributes & rec.TIMESTAMP_TYPE_MASK)
    before, after = config.message_timestamp_before_max_ms, config.message_timestamp_after_max_ms
    keyless = summary.keyless if check_keys else 0
    base = h.base_timestamp

    def timestamp_error(ts: int):
        if create_time and ts != rec.NO_TIMESTAMP:
            diff = _java_long(now_ms - ts)
            if diff > before or _java_long(-diff) > after:
                return "out of range"
            return None
        return "log append time" if producer_lat else None

    if producer_lat:
        # every record carries the batch's max timestamp (DefaultRecordBatch's logAppendTime)
        lo = hi = h.max_timestamp
        exact = True
    else:
        lo, hi = base + summary.lo, base + summary.hi
        exact = -_SAFE < lo and hi < _SAFE and 0 <= now_ms < _SAFE
    if exact and not keyless and timestamp_error(lo) is None and timestamp_error(hi) is None:
        # no record fails: the bounds hold at both ends, and nothing in between overflows
        return max(rec.NO_TIMESTAMP, hi)
    errors = RecordErrors()
    top = [rec.NO_TIMESTAMP]

    def visit(index, td, od, kl, vl, _key):
        ts = h.max_timestamp if producer_lat else _java_long(base + td)
        if ts > top[0]:
            top[0] = ts
        if kl < 0 and check_keys:
            errors.add(index, ErrorCode.INVALID_RECORD,
                       lambda: f"Compacted topic cannot accept message without key in topic partition {name}")
            return
        reason = timestamp_error(ts)
        if reason == "out of range":
            errors.add(index, ErrorCode.INVALID_TIMESTAMP, lambda: (
                f"Timestamp {ts} of message with offset {od} is out of range. The timestamp should be within "
                f"[{_java_long(now_ms - before)}, {_java_long(now_ms + after)}]"))
        elif reason is not None:
            errors.add(index, ErrorCode.INVALID_TIMESTAMP, lambda: (
                f"Invalid timestamp type in message DefaultRecord(offset={od}, timestamp={ts}, key={max(kl, 0)} "
                f"bytes, value={max(vl, 0)} bytes). Producer should not set timestamp type to LogAppendTime."))

    yield from walk.walk_records(buf, pos, h.size, h.records_count, h.attributes & rec.COMPRESSION_MASK,
                                 visit=visit, block_limit=block_limit)
    if errors.total:
        raise RecordValidationError(errors)
    return top[0]


def _rebuild(buf, batches, rebuild, target: int, config: LogConfig, now_ms: int, block_limit: int):
    """Batches whose codec is not the topic's ``compression.type``, rebuilt under it as Kafka's
    ``buildRecordsAndAssignOffsets`` does: fresh inner offsets, timestamps from the first
    record's; MESSAGE_TOO_LARGE if the result passes ``max.message.bytes``."""
    level = {1: config.compression_gzip_level, 4: config.compression_zstd_level}.get(target)
    limit = config.max_message_bytes - rec.HEADER_SIZE
    by_index = dict(rebuild)
    out = bytearray()
    for i, (pos, h) in enumerate(batches):
        if i not in by_index:
            out += buf[pos:pos + h.size]
            continue
        producer_lat = bool(h.attributes & rec.TIMESTAMP_TYPE_MASK)
        section, first = yield from walk.rebuild_records(
            buf, pos, h.size, h.records_count, h.attributes & rec.COMPRESSION_MASK, target, level=level,
            same_timestamps=producer_lat, limit=limit, block_limit=block_limit)
        base_ts = h.max_timestamp if producer_lat else _java_long(h.base_timestamp + first)
        out += rec.frame_batch(section, compression=target, last_offset_delta=h.records_count - 1,
                               base_timestamp=base_ts, max_timestamp=by_index[i], producer_id=h.producer_id,
                               producer_epoch=h.producer_epoch, base_sequence=h.base_sequence,
                               is_transactional=h.is_transactional, records_count=h.records_count)
    batches = rec.validate_batches(out)
    for _, h in batches:
        # re-encoded batches may have grown past max.message.bytes (Kafka checks them again)
        if h.size > config.max_message_bytes:
            raise KafkaError(ErrorCode.MESSAGE_TOO_LARGE,
                             f"Message batch size is {h.size} bytes which exceeds the maximum configured size of "
                             f"{config.max_message_bytes}.")
    return Analysis(out, batches, [], True, now_ms)
