"""Poison batches (issue 32): a batch whose CRC is right but whose records are not. Seen on main
before the fix: count 2 over one record, or one record then trailing bytes, was answered 0 and
written, and kafka-python then raised CorruptRecordError at that offset forever. Each is
refused with Kafka 4.1's answer (recorded in tests/conformance/scenarios/record_validation.py),
nothing is written, a consumer reads past the place, and the bystander keeps working."""
from __future__ import annotations

import pytest

from adversarial import batches as bad
from harness import unique_name
from minikafka.protocol import records as rec
from rawclient import RawClient

INVALID_RECORD, UNKNOWN_SERVER_ERROR = 87, -1
CODECS = {"uncompressed": 0, **bad.CODECS}


def poison(codec: int) -> list[tuple[str, bytes, int]]:
    cases = [("header says 2, holds 1", bad.header_says_two_holds_one(codec), INVALID_RECORD),
             ("one record then trailing bytes", bad.one_record_then_trailing_bytes(codec), INVALID_RECORD),
             # Kafka stores this one when compressed, and no consumer can read it
             # (DIFFERENCES.md record-decodable); refused here as Kafka refuses it uncompressed
             ("record length one more", bad.record_length_one_more(codec), INVALID_RECORD)]
    if codec:
        cases.append(("not the codec's stream", bad.not_the_codecs_stream(codec), UNKNOWN_SERVER_ERROR))
    return cases


@pytest.mark.parametrize("codec_name", list(CODECS))
def test_poison_batches_are_refused_and_consumers_read_on(broker, bystander, codec_name):
    codec = CODECS[codec_name]
    b = bystander(broker.bootstrap)
    mark = b.mark()
    topic = unique_name(f"poison-{codec_name}")
    with RawClient("127.0.0.1", broker.port) as c:
        assert c.create_topic(topic) == 0
        for name, batch, code in poison(codec):
            p = c.produce(topic, 0, batch)
            assert (p.error_code, p.base_offset) == (code, -1), (name, p)
            assert c.list_offset(topic, 0) == 0, f"{name}: something was written"
        good = rec.build_batch([rec.Record(None, None, b"k", b"after the poison", ())], compression=codec)
        assert c.produce(topic, 0, good).error_code == 0
    b.wait_progress()
    assert b.p99(since=mark) < 2, b.p99(since=mark)

    # what a consumer sees: the one good record, no CorruptRecordError at any offset
    from kafka import KafkaConsumer
    consumer = KafkaConsumer(topic, bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=5000)
    try:
        values = []
        for msg in consumer:
            values.append(msg.value)
            if values:
                break
    finally:
        consumer.close()
    assert values == [b"after the poison"]
    assert broker.running and "Traceback" not in broker.log_text(), broker.describe()
