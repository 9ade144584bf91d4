"""The ``minikafka`` Python streaming source's reader, without a JVM.

The reader's driver side (offsets) and executor side (``read``) are plain
Python over kafka-python, so they are tested here directly against a broker:
offsets are last stable offsets (an open transaction holds the batch end),
ranges skip aborted records and control records, and rows have the Kafka
source's shape.  The Spark end-to-end runs are in ``test_spark_pipeline.py``.
"""
from __future__ import annotations

import datetime as dt
import json

import pytest

pytest.importorskip("pyspark", reason="pyspark not installed (pip install -e '.[spark]')")

from kafka import KafkaProducer  # noqa: E402
from kafka.admin import KafkaAdminClient, NewTopic  # noqa: E402

from harness import now_ms, wait_transaction_done  # noqa: E402
from pipeline.source import (KAFKA_SCHEMA, MiniKafkaDataSource, Options,  # noqa: E402
                             RangePartition, parse_offsets)


def make_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        admin.close()


def txn_producer(bootstrap: str, tid: str) -> KafkaProducer:
    p = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid, linger_ms=2)
    p.init_transactions()
    return p


def reader_for(bootstrap: str, topic: str, **extra):
    ds = MiniKafkaDataSource({"kafka.bootstrap.servers": bootstrap, "subscribe": topic, **extra})
    return ds.streamReader(ds.schema())


def read_all(reader, start: dict, end: dict) -> list[tuple]:
    rows = []
    for part in reader.partitions(start, end):
        rows.extend(reader.read(part))
    return rows


def test_schema_is_the_kafka_source_schema():
    # Spark's KafkaRecordToRowConverter with includeHeaders=true.
    assert KAFKA_SCHEMA.simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,"
        "timestamp:timestamp,timestampType:int,headers:array<struct<key:string,value:binary>>>")
    no_headers = MiniKafkaDataSource({"includeHeaders": "false"}).schema()
    assert no_headers.fieldNames() == ["key", "value", "topic", "partition", "offset",
                                       "timestamp", "timestampType"]


def test_options_are_validated():
    with pytest.raises(ValueError, match="bootstrap"):
        Options({"subscribe": "t"})
    with pytest.raises(ValueError, match="subscribe"):
        Options({"kafka.bootstrap.servers": "h:1"})
    with pytest.raises(ValueError, match="maxoffsetspertrigger"):
        Options({"kafka.bootstrap.servers": "h:1", "subscribe": "t", "maxOffsetsPerTrigger": "5"})
    # Spark hands options over case-insensitively
    o = Options({"KAFKA.BOOTSTRAP.SERVERS": "h:1", "Subscribe": "a, b", "failOnDataLoss": "false"})
    assert (o.bootstrap, o.topics, o.fail_on_data_loss) == ("h:1", ["a", "b"], False)


def test_reader_offsets_and_rows_read_committed(broker, unique_topic):
    topic = unique_topic("src")
    make_topic(broker.bootstrap, topic, 2)
    ts = now_ms() - 5_000
    a = txn_producer(broker.bootstrap, f"{topic}-a")
    b = txn_producer(broker.bootstrap, f"{topic}-b")
    try:
        committed = []
        for t in range(6):  # t = 2, 5 aborted
            a.begin_transaction()
            for i in range(5):
                n = t * 5 + i
                a.send(topic, partition=n % 2, key=b"k%d" % n, value=json.dumps({"n": n}).encode(),
                       headers=[("n", str(n).encode())], timestamp_ms=ts + n)
            if t % 3 == 2:
                a.abort_transaction()
            else:
                a.commit_transaction()
                committed.extend(range(t * 5, t * 5 + 5))
        wait_transaction_done(broker.bootstrap, f"{topic}-a")  # the markers follow the EndTxn answer
        reader = reader_for(broker.bootstrap, topic)
        start = reader.initialOffset()
        assert parse_offsets(start) == {topic: {0: 0, 1: 0}}
        end = reader.latestOffset()
        rows = read_all(reader, start, end)
        got = sorted(json.loads(r[1])["n"] for r in rows)
        assert got == committed, "read_committed range must hold exactly the committed records"
        # Row shape: Kafka source columns and types
        r = next(r for r in rows if json.loads(r[1])["n"] == 1)
        assert r[0] == b"k1" and r[2] == topic and r[3] == 1 and isinstance(r[4], int)
        assert r[5] == dt.datetime.fromtimestamp((ts + 1) / 1000, tz=dt.timezone.utc)
        assert r[6] == 0 and r[7] == [("n", b"1")]
        # Offsets per partition increase, with gaps (markers, aborted batches)
        for p in (0, 1):
            offs = [row[4] for row in rows if row[3] == p]
            assert offs == sorted(offs) and len(offs) < parse_offsets(end)[topic][p]

        # An open transaction holds the end offset (LSO) of its partition.
        b.begin_transaction()
        for i in range(3):
            b.send(topic, partition=0, value=json.dumps({"n": 100 + i}).encode())
        b.flush()
        a.begin_transaction()
        a.send(topic, partition=1, value=json.dumps({"n": 200}).encode())
        a.commit_transaction()
        wait_transaction_done(broker.bootstrap, f"{topic}-a")
        end2 = reader.latestOffset()
        assert parse_offsets(end2)[topic][0] == parse_offsets(end)[topic][0], \
            "the open transaction's first offset caps partition 0"
        assert parse_offsets(end2)[topic][1] > parse_offsets(end)[topic][1]
        rows2 = read_all(reader, end, end2)
        assert [json.loads(r[1])["n"] for r in rows2] == [200]
        b.commit_transaction()
        wait_transaction_done(broker.bootstrap, f"{topic}-b")
        end3 = reader.latestOffset()
        rows3 = read_all(reader, end2, end3)
        assert sorted(json.loads(r[1])["n"] for r in rows3) == [100, 101, 102]
        # Planning: nothing to read -> no partitions; new ranges are per partition
        assert reader.partitions(end3, end3) == []
        parts = reader.partitions(start, end3)
        assert all(isinstance(p, RangePartition) for p in parts) and len(parts) == 2
        # startingOffsets=latest and JSON
        assert reader_for(broker.bootstrap, topic, startingOffsets="latest").initialOffset() == end3
        js = json.dumps({topic: {"0": -2, "1": 3}})
        assert parse_offsets(reader_for(broker.bootstrap, topic, startingOffsets=js)
                             .initialOffset()) == {topic: {0: 0, 1: 3}}
        reader.stop()
    finally:
        a.close()
        b.close()
