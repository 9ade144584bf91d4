"""Fetch long-poll, byte limits, and index-backed lookups across rolled segments
(issue 2: Fetch semantics and criterion 5)."""
from __future__ import annotations

import threading
import time

import pytest

from protocol import records as rec
from harness import wait_until
from rawclient import RawClient, make_batch

BASE_TS = 1_700_000_000_000


@pytest.fixture(scope="module")
def rolled(tmp_path_factory):
    """A broker whose topic 'rolled' has many small segments: batch k (10 records,
    offsets 10k..10k+9) has timestamps BASE_TS + 1000*k + i."""
    from harness import BrokerProcess
    b = BrokerProcess(tmp_path_factory.mktemp("rolled") / "data", overrides={"log.segment.bytes": 4096},
                      name="rolled")
    b.start()
    try:
        with RawClient.to(b.bootstrap) as c:
            assert c.create_topic("rolled", 1) == 0
            for k in range(60):
                recs = [rec.Record(10 * k + i, BASE_TS + 1000 * k + i, b"k", b"v%d" % (10 * k + i) + b"x" * 100, ())
                        for i in range(10)]
                assert c.produce("rolled", 0, rec.build_batch(recs, base_offset=10 * k)).error_code == 0
        yield b
    finally:
        b.close()


def test_topic_really_has_rolled_segments(rolled):
    logs = sorted(p.name for p in rolled.partition_dir("rolled", 0).glob("*.log"))
    assert len(logs) >= 10, logs
    assert (rolled.partition_dir("rolled", 0) / logs[3].replace(".log", ".index")).exists()


@pytest.mark.parametrize("target", [0, 7, 155, 333, 599])
def test_fetch_from_the_middle_of_an_old_segment(rolled, target):
    with RawClient.to(rolled.bootstrap) as c:
        p = c.fetch("rolled", 0, target, max_bytes=2000)
        assert p.error_code == 0 and p.high_watermark == 600
        pos, h = next(rec.iter_batch_headers(p.records))
        assert h.base_offset <= target <= h.last_offset  # the batch holding the offset comes first
        _, records = rec.decode_batch(p.records[pos:pos + h.size])
        assert [r.value[:6].rstrip(b"x") for r in records] == [b"v%d" % o for o in range(h.base_offset, h.last_offset + 1)]


@pytest.mark.parametrize("ts,expected", [
    (BASE_TS - 5, 0), (BASE_TS, 0), (BASE_TS + 3, 3), (BASE_TS + 10, 10), (BASE_TS + 25_004, 254),
    (BASE_TS + 25_100, 260), (BASE_TS + 59_009, 599), (BASE_TS + 59_010, -1),
])
def test_list_offsets_by_timestamp_uses_the_indexes(rolled, ts, expected):
    with RawClient.to(rolled.bootstrap) as c:
        assert c.list_offset("rolled", 0, ts) == expected


def test_list_offsets_earliest_latest_max_timestamp(rolled):
    with RawClient.to(rolled.bootstrap) as c:
        assert c.list_offset("rolled", 0, -2) == 0
        assert c.list_offset("rolled", 0, -1) == 600
        assert c.list_offset("rolled", 0, -3) == 599


def test_long_poll_is_woken_by_an_append(broker):
    with RawClient.to(broker.bootstrap) as c:
        assert c.create_topic("longpoll", 1) == 0
    result = {}
    sent = threading.Event()
    body = {"replica_id": -1, "max_wait_ms": 20_000, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": "longpoll", "partitions": [{"partition": 0, "fetch_offset": 0,
                                                             "partition_max_bytes": 1 << 20}]}]}

    def poll():
        with RawClient.to(broker.bootstrap) as c:
            corr = c.send(1, 12, body)
            t0 = time.monotonic()
            sent.set()
            p = c.receive(1, 12, corr).responses[0].partitions[0]
            result["elapsed"] = time.monotonic() - t0
            result["records"] = p.records

    th = threading.Thread(target=poll)
    th.start()
    assert sent.wait(10)
    with RawClient.to(broker.bootstrap) as c:
        assert c.produce("longpoll", 0, make_batch([b"wake"])).error_code == 0
    th.join(25)
    assert result["records"], "long poll returned no data"
    assert result["elapsed"] < 10, result


def test_long_poll_times_out_with_no_data(broker):
    with RawClient.to(broker.bootstrap) as c:
        assert c.create_topic("quiet", 1) == 0
        t0 = time.monotonic()
        p = c.fetch("quiet", 0, 0, max_wait_ms=400)
        elapsed = time.monotonic() - t0
    assert p.error_code == 0 and not p.records
    assert 0.35 <= elapsed < 5


def test_partition_max_bytes_returns_whole_batches_at_least_one(rolled):
    with RawClient.to(rolled.bootstrap) as c:
        small = c.fetch("rolled", 0, 0, max_bytes=10)  # smaller than one batch: still one whole batch
        batches = list(rec.iter_batch_headers(small.records))
        assert len(batches) == 1 and batches[0][1].size == len(small.records)
        big = c.fetch("rolled", 0, 0, max_bytes=5000)
        sizes = [h.size for _, h in rec.iter_batch_headers(big.records)]
        assert sum(sizes) == len(big.records) <= 5000 and len(sizes) > 1


def test_out_of_range_fetch(rolled):
    with RawClient.to(rolled.bootstrap) as c:
        assert c.fetch("rolled", 0, 601).error_code == 1  # OFFSET_OUT_OF_RANGE


def fetch_parts(c: RawClient, parts, isolation: int = 1, version: int = 12):
    """One Fetch for [(topic, topic_id, partition, offset, current_leader_epoch)]: partition answers in order."""
    body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": isolation,
            "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": t, "topic_id": tid, "partitions": [
                {"partition": p, "fetch_offset": off, "partition_max_bytes": 1 << 20, "current_leader_epoch": le,
                 "log_start_offset": -1}]} for t, tid, p, off, le in parts]}
    return [(q.error_code, q.high_watermark, q.last_stable_offset, q.log_start_offset,
             None if q.aborted_transactions is None else list(q.aborted_transactions), bytes(q.records or b""))
            for r in c.request(1, version, body).responses for q in r.partitions]


def test_fetch_errors_carry_no_partition_state(broker_factory, unique_topic):
    """As Kafka 4.1 (probed): a partition whose read fails (OFFSET_OUT_OF_RANGE below the log
    start after DeleteRecords and kill -9, or past the log end; UNKNOWN_LEADER_EPOCH) answers
    high watermark, LSO and log start -1 and a null aborted list (createLogReadResult(e)); an
    unknown partition or topic id answers -1 with an empty aborted list (KafkaApis' erroneous
    partitions); the other partitions of the same request keep their state."""
    import uuid
    t = unique_topic("fetch-err")
    b = broker_factory()
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic(t, 2) == 0
        assert c.produce(t, 0, make_batch([b"a", b"b", b"c"])).error_code == 0
        assert c.produce(t, 1, make_batch([b"d"])).error_code == 0
        tid = f"{t}-tid"
        c.request(10, 3, {"key": tid, "key_type": 1})
        init = c.init_producer_id(tid)
        c.request(24, 3, {"v3_and_below_transactional_id": tid, "v3_and_below_producer_id": init.producer_id,
                          "v3_and_below_producer_epoch": init.producer_epoch,
                          "v3_and_below_topics": [{"name": t, "partitions": [0]}]})
        assert c.produce(t, 0, make_batch([b"open"], init.producer_id, init.producer_epoch, 0, True),
                         transactional_id=tid).error_code == 0  # an open transaction at offset 3
        deleted = c.request(21, 2, {"topics": [{"name": t, "partitions": [{"partition_index": 0, "offset": 2}]}],
                                    "timeout_ms": 10000})
        assert deleted.topics[0].partitions[0].error_code == 0
        topic_id = c.request(3, 12, {"topics": [{"name": t, "topic_id": None}], "allow_auto_topic_creation": False,
                                     "include_topic_authorized_operations": False}).topics[0].topic_id
    b.restart(kill=True)
    unknown_read, unknown_topic = (-1, -1, -1, None, b""), (-1, -1, -1, [], b"")
    with RawClient.to(b.bootstrap) as c:
        for iso in (0, 1):
            got = fetch_parts(c, [(t, None, 0, 0, -1), (t, None, 1, 0, -1)], iso)
            assert got[0] == (1, *unknown_read), "below the log start"
            assert got[1][:4] == (0, 1, 1, 0) and got[1][5], "the other partition keeps its state"
            assert fetch_parts(c, [(t, None, 0, 5, -1)], iso) == [(1, *unknown_read)], "past the log end"
            assert fetch_parts(c, [(t, None, 0, 2, 100)], iso) == [(75, *unknown_read)]
            assert fetch_parts(c, [(t, None, 7, 0, -1)], iso) == [(3, *unknown_topic)]
            assert fetch_parts(c, [(f"{t}-nope", None, 0, 0, -1)], iso) == [(3, *unknown_topic)]
            assert fetch_parts(c, [("", uuid.uuid4(), 0, 0, -1)], iso, version=13) == [(100, *unknown_topic)]
        ok = fetch_parts(c, [("", topic_id, 0, 2, -1)], 1, version=13)
        assert ok[0][:5] == (0, 4, 3, 2, []) and ok[0][5]
    # a real consumer positioned below the log start is reset to it (auto.offset.reset)
    from kafka import KafkaConsumer, TopicPartition
    consumer = KafkaConsumer(bootstrap_servers=b.bootstrap, auto_offset_reset="earliest", enable_auto_commit=False,
                             isolation_level="read_committed", fetch_max_wait_ms=100)
    try:
        tp = TopicPartition(t, 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        got = []
        wait_until(lambda: got.extend(r.value for rs in consumer.poll(200).values() for r in rs) or got, 30)
        assert got == [b"c"]  # the open transaction's record stays hidden
    finally:
        consumer.close()


def test_background_retention_advances_the_log_start(broker_factory):
    b = broker_factory(overrides={"log.retention.check.interval.ms": 200})
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic("expiring", 1, {"retention.ms": "1000", "segment.bytes": "2048"}) == 0
        old = int(time.time() * 1000) - 60_000  # records a minute old: past retention at once
        for k in range(20):
            recs = [rec.Record(10 * k + i, old, b"k", b"x" * 100, ()) for i in range(10)]
            assert c.produce("expiring", 0, rec.build_batch(recs, base_offset=10 * k)).error_code == 0
        wait_until(lambda: c.list_offset("expiring", 0, -2) > 0, 10)
        start = c.list_offset("expiring", 0, -2)
        assert c.list_offset("expiring", 0, -1) == 200  # the end never moves
        assert c.fetch("expiring", 0, 0).error_code == 1  # below the start: OFFSET_OUT_OF_RANGE
        assert c.fetch("expiring", 0, start).error_code == 0
