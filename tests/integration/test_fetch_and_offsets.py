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
