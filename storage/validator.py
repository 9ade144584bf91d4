"""Checks on the batches of an append before offsets are assigned (Kafka's ``LogValidator``).

Batch-level problems (record count, control batch from a client, missing sequence)
are one :class:`KafkaError`, as Kafka's ``InvalidRecordException``. Record-level
problems (a record without a key on a compacted topic, a timestamp out of
``message.timestamp.before/after.max.ms``, a producer-set LogAppendTime) are
collected for every record of the batch and raised together as a
:class:`RecordValidationError`; Produce v8+ answers with each record's batch index and
message (``record_errors``) and a summary (``error_message``), which clients report
per record.

Records are decoded only when a record-level check can fail: on compacted topics, when
``message.timestamp.before.max.ms`` is bounded, when the header's max timestamp is past
``message.timestamp.after.max.ms``, or when the producer set LogAppendTime. Otherwise the
batch stays opaque bytes (the header's max timestamp stands for its records, as every
client writes it); a decoded batch gets its records' max timestamp in its header, as Kafka
writes it.
"""
from __future__ import annotations

from minikafka.protocol import records as rec
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.storage.config import LONG_MAX, LogConfig


class RecordValidationError(KafkaError):
    """Kafka's ``RecordValidationException``: records of a batch failed validation, the whole
    batch is refused. INVALID_TIMESTAMP if any record's timestamp is the reason, else
    INVALID_RECORD; the summary is Kafka's text, word for word."""

    def __init__(self, errors: list[tuple[int, str, ErrorCode]]):
        self.record_errors = [(index, message) for index, message, _ in errors]
        if any(code == ErrorCode.INVALID_TIMESTAMP for _, _, code in errors):
            super().__init__(ErrorCode.INVALID_TIMESTAMP,
                             "One or more records have been rejected due to invalid timestamp")
        else:
            shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in self.record_errors[:3])
            super().__init__(ErrorCode.INVALID_RECORD,
                             f"One or more records have been rejected due to {len(errors)} record errors in "
                             f"total, and only showing the first three errors at most: [{shown}]")


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
    """``x`` as Java's long arithmetic has it (the bounds in Kafka's message overflow so)."""
    return (x + (1 << 63)) % (1 << 64) - (1 << 63)


def validate_records(buf, batches, config: LogConfig, now_ms: int, name: str,
                     check_keys: bool) -> list[tuple[int, int]]:
    """Kafka's ``validateRecord`` for every record of every batch: the key (``check_keys``: a
    client's append to a compacted topic) first, then the timestamp. Raises
    :class:`RecordValidationError` listing every failing record of the first failing batch.

    Returns ``[(index in batches, max timestamp)]`` for the decoded CreateTime batches whose
    header's max timestamp is not their records' (Kafka writes the records' into the header);
    batches not decoded keep the header's, which stands for their records."""
    fixes = []
    before = config.message_timestamp_before_max_ms
    after = config.message_timestamp_after_max_ms
    create_time = config.message_timestamp_type == "CreateTime"
    for i, (pos, h) in enumerate(batches):
        if h.attributes & rec.CONTROL_FLAG:
            continue
        producer_lat = bool(h.attributes & rec.TIMESTAMP_TYPE_MASK)
        if not (check_keys or producer_lat or (create_time and (
                before != LONG_MAX or (after != LONG_MAX and h.max_timestamp - now_ms > after)))):
            continue
        _, records = rec.decode_batch(buf, pos)
        errors = []
        for index, r in enumerate(records):
            if check_keys and r.key is None:
                errors.append((index, f"Compacted topic cannot accept message without key in topic partition "
                                      f"{name}", ErrorCode.INVALID_RECORD))
            elif create_time and r.timestamp != rec.NO_TIMESTAMP:
                diff = now_ms - r.timestamp
                if diff > before or -diff > after:
                    errors.append((index, f"Timestamp {r.timestamp} of message with offset {r.offset} is out of "
                                          f"range. The timestamp should be within [{_java_long(now_ms - before)}, "
                                          f"{_java_long(now_ms + after)}]", ErrorCode.INVALID_TIMESTAMP))
            elif producer_lat:
                errors.append((index, f"Invalid timestamp type in message DefaultRecord(offset={r.offset}, "
                                      f"timestamp={r.timestamp}, key={len(r.key or b'')} bytes, "
                                      f"value={len(r.value or b'')} bytes). Producer should not set timestamp type "
                                      f"to LogAppendTime.", ErrorCode.INVALID_TIMESTAMP))
        if errors:
            raise RecordValidationError(errors)
        if create_time and not producer_lat:
            # Kafka's maxBatchTimestamp starts at NO_TIMESTAMP (-1)
            true_max = max(rec.NO_TIMESTAMP, max(r.timestamp for r in records)) if records else rec.NO_TIMESTAMP
            if true_max != h.max_timestamp:
                fixes.append((i, true_max))
    return fixes
