"""Per-record produce errors (Kafka's LogValidator / RecordValidationException).

A batch with invalid records is refused whole. Produce v8+ answers which records
failed (``record_errors``: batch index + message) and a summary (``error_message``);
v3-v7 only the error code. INVALID_TIMESTAMP wins over INVALID_RECORD when both
occur. Other errors carry no ``error_message`` (Kafka sends one only for record
validation). Expected texts are the reference Kafka 4.1 broker's answers.
"""
from __future__ import annotations

import pytest

from harness import now_ms
from protocol import records as rec
from protocol.errors import ErrorCode
from rawclient import RawClient, make_batch


@pytest.fixture
def client(broker):
    with RawClient.to(broker.bootstrap) as c:
        yield c


def _keyless(topic: str) -> str:
    return f"Compacted topic cannot accept message without key in topic partition {topic}-0"


def _batch(records, **kw) -> bytes:
    return rec.build_batch([rec.Record(None, ts, key, b"v", ()) for key, ts in records], **kw)


@pytest.mark.parametrize("compression", [0, 1])
def test_keyless_records_on_a_compacted_topic(client, unique_topic, compression):
    topic = unique_topic("keyless")
    assert client.create_topic(topic, 1, {"cleanup.policy": "compact"}) == 0
    t = now_ms()
    bad = _batch([(b"k", t), (None, t), (None, t)], compression=compression)
    r = client.produce(topic, 0, bad, version=7)
    assert (r.error_code, r.base_offset, r.log_start_offset) == (ErrorCode.INVALID_RECORD, -1, 0)
    for version in (8, 12):
        r = client.produce(topic, 0, bad, version=version)
        assert (r.error_code, r.base_offset, r.log_start_offset) == (ErrorCode.INVALID_RECORD, -1, 0)
        assert [(e.batch_index, e.batch_index_error_message) for e in r.record_errors] == \
            [(1, _keyless(topic)), (2, _keyless(topic))]
        assert r.error_message == (
            "One or more records have been rejected due to 2 record errors in total, and only showing the first "
            f"three errors at most: [RecordError(batchIndex=1, message='{_keyless(topic)}'), "
            f"RecordError(batchIndex=2, message='{_keyless(topic)}')]")
    five = client.produce(topic, 0, _batch([(None, t)] * 5), version=12)
    assert [e.batch_index for e in five.record_errors] == [0, 1, 2, 3, 4]
    assert five.error_message.count("RecordError(") == 3  # "only showing the first three"
    assert client.list_offset(topic, 0) == 0, "a refused batch was partly stored"
    assert client.produce(topic, 0, _batch([(b"k", t)]), version=12).base_offset == 0


def test_timestamps_out_of_range_per_record(client, unique_topic):
    topic = unique_topic("ts")
    assert client.create_topic(topic, 1, {"message.timestamp.before.max.ms": "60000",
                                          "message.timestamp.after.max.ms": "60000"}) == 0
    t = now_ms()
    r = client.produce(topic, 0, _batch([(b"k", t), (b"k", t - 3_600_000), (b"k", t + 3_600_000)]), version=12)
    assert (r.error_code, r.log_start_offset) == (ErrorCode.INVALID_TIMESTAMP, 0)
    assert r.error_message == "One or more records have been rejected due to invalid timestamp"
    assert [e.batch_index for e in r.record_errors] == [1, 2]
    for e, ts in zip(r.record_errors, (t - 3_600_000, t + 3_600_000)):
        head = f"Timestamp {ts} of message with offset {e.batch_index} is out of range. The timestamp should be within ["
        assert e.batch_index_error_message.startswith(head), e
        low, high = map(int, e.batch_index_error_message[len(head):-1].split(", "))
        assert high - low == 120_000 and abs(low + 60_000 - t) < 60_000
    assert client.produce(topic, 0, _batch([(b"k", t - 3_600_000)]), version=7).record_errors == []


def test_invalid_timestamp_wins_and_producer_set_log_append_time(client, unique_topic):
    both = unique_topic("both")
    assert client.create_topic(both, 1, {"cleanup.policy": "compact",
                                         "message.timestamp.before.max.ms": "60000"}) == 0
    t = now_ms()
    r = client.produce(both, 0, _batch([(None, t - 3_600_000), (b"k", t - 3_600_000)]), version=12)
    assert r.error_code == ErrorCode.INVALID_TIMESTAMP
    assert r.error_message == "One or more records have been rejected due to invalid timestamp"
    assert r.record_errors[0].batch_index_error_message == _keyless(both)
    assert r.record_errors[1].batch_index_error_message.startswith(f"Timestamp {t - 3_600_000} of message")

    lat = unique_topic("lat")
    assert client.create_topic(lat, 1, {"message.timestamp.type": "LogAppendTime"}) == 0
    r = client.produce(lat, 0, _batch([(b"k", t)], timestamp_type=1), version=12)
    assert r.error_code == ErrorCode.INVALID_TIMESTAMP
    assert [(e.batch_index, e.batch_index_error_message) for e in r.record_errors] == [
        (0, f"Invalid timestamp type in message DefaultRecord(offset=0, timestamp={t}, key=1 bytes, value=1 bytes). "
            "Producer should not set timestamp type to LogAppendTime.")]


def test_default_after_max_is_one_hour(client, unique_topic):
    """Kafka 4.x: message.timestamp.after.max.ms defaults to 3600000."""
    topic = unique_topic("future")
    assert client.create_topic(topic, 1) == 0
    t = now_ms()
    assert client.produce(topic, 0, _batch([(b"k", t + 1_800_000)])).error_code == 0
    assert client.produce(topic, 0, _batch([(b"k", t + 7_200_000)])).error_code == ErrorCode.INVALID_TIMESTAMP


def test_other_errors_carry_only_the_code(client, unique_topic):
    topic = unique_topic("plain")
    assert client.create_topic(topic, 1) == 0
    pid = client.init_producer_id().producer_id
    assert client.produce(topic, 0, make_batch([b"a"], pid, 0, 0), version=12).error_code == 0
    r = client.produce(topic, 0, make_batch([b"b"], pid, 0, 5), version=12)
    assert (r.error_code, r.error_message, r.record_errors, r.log_start_offset) == \
        (ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, None, [], 0)
    r = client.produce(topic, 0, make_batch([b"c"], 123456, 0, -1), version=12)  # idempotent without a sequence
    assert (r.error_code, r.error_message, r.log_start_offset) == (ErrorCode.INVALID_RECORD, None, 0)


def test_clients_report_the_failing_records(broker, unique_topic):
    """What the applications see (same answers as against the reference Kafka 4.1): librdkafka
    fails the keyless records with INVALID_RECORD and the keyed one of the same batch with
    _INVALID_DIFFERENT_RECORD; kafka-python raises InvalidRecordError with the record's message."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    kafka = pytest.importorskip("kafka")
    topic = unique_topic("clients")
    with RawClient.to(broker.bootstrap) as c:
        assert c.create_topic(topic, 1, {"cleanup.policy": "compact"}) == 0

    reports = []
    p = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 50})
    for i in range(3):
        p.produce(topic, key=b"k" if i == 0 else None, value=b"v%d" % i,
                  on_delivery=lambda err, msg: reports.append(err.code() if err else None))
    assert p.flush(15) == 0
    KE = confluent_kafka.KafkaError
    assert reports == [KE._INVALID_DIFFERENT_RECORD, KE.INVALID_RECORD, KE.INVALID_RECORD]

    kp = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=50, retries=0)
    try:
        futures = [kp.send(topic, key=b"k" if i == 0 else None, value=b"v%d" % i) for i in range(3)]
        kp.flush(15)
        errors = [f.exception for f in futures]
    finally:
        kp.close()
    assert "part of a batch which had one more more invalid records" in str(errors[0])
    for e in errors[1:]:
        assert type(e).__name__ == "InvalidRecordError" and _keyless(topic) in str(e), e
