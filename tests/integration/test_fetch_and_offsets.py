"""Fetch long-poll, byte limits, and index-backed lookups across rolled segments
(issue 2: Fetch semantics and criterion 5)."""
from __future__ import annotations

import threading
import time

import pytest

from minikafka.protocol import records as rec
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
                # a client's batch starts at offset 0 (Kafka refuses another base offset)
                recs = [rec.Record(i, BASE_TS + 1000 * k + i, b"k", b"v%d" % (10 * k + i) + b"x" * 100, ())
                        for i in range(10)]
                assert c.produce("rolled", 0, rec.build_batch(recs)).error_code == 0
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


def test_unknown_partitions_do_not_cut_a_long_poll_short(broker):
    """KafkaApis reads only the known partitions (ReplicaManager.fetchMessages waits for
    min_bytes over them); the unknown ones are answered with them. With nothing known to read,
    the answer is immediate."""
    body = lambda parts: {"replica_id": -1, "max_wait_ms": 400, "min_bytes": 1, "max_bytes": 1 << 20,  # noqa: E731
                          "isolation_level": 0, "session_id": 0, "session_epoch": -1,
                          "topics": [{"topic": t, "partitions": [{"partition": p, "fetch_offset": 0,
                                                                  "partition_max_bytes": 1 << 20}]} for t, p in parts]}
    with RawClient.to(broker.bootstrap) as c:
        assert c.create_topic("quiet2", 1) == 0
        for parts, waits in (([("quiet2", 0), ("quiet2", 5)], True), ([("quiet2", 0), ("nosuch", 0)], True),
                             ([("nosuch", 0)], False)):
            t0 = time.monotonic()
            r = c.request(1, 12, body(parts))
            elapsed = time.monotonic() - t0
            assert [p.error_code for t in r.responses for p in t.partitions] == ([0, 3] if waits else [3])
            assert (elapsed >= 0.35) == waits, (parts, elapsed)


def test_fetch_answers_a_slice_of_one_segment_file(rolled):
    """Kafka's LogSegment.read: the records are the segment file's bytes from the batch holding
    the fetch offset, cut at the byte limit (the last batch may be partial), a first batch larger
    than the limit whole (KIP-74), never past the segment's end (the next fetch reads the next)."""
    files = sorted(rolled.partition_dir("rolled", 0).glob("*.log"))
    first, second = files[0].read_bytes(), files[1].read_bytes()
    with RawClient.to(rolled.bootstrap) as c:
        small = c.fetch("rolled", 0, 0, max_bytes=10)
        batches = list(rec.iter_batch_headers(small.records))
        assert len(batches) == 1 and bytes(small.records) == first[:batches[0][1].size]
        cut = c.fetch("rolled", 0, 0, max_bytes=2000)
        assert bytes(cut.records) == first[:2000]
        assert sum(h.size for _, h in rec.iter_batch_headers(cut.records)) < 2000  # a partial batch at the end
        assert bytes(c.fetch("rolled", 0, 0, max_bytes=1 << 20).records) == first
        assert bytes(c.fetch("rolled", 0, int(files[1].stem), max_bytes=1 << 20).records) == second


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
            recs = [rec.Record(i, old, b"k", b"x" * 100, ()) for i in range(10)]
            assert c.produce("expiring", 0, rec.build_batch(recs)).error_code == 0
        # Every record is past retention, so the rounds (every 200 ms) delete them all: the
        # start reaches the end. Not just "> 0": a round that runs while the batches are
        # still being produced (a loaded machine) deletes only some segments, and the next
        # round could delete the segment the start pointed at before the fetch below.
        wait_until(lambda: c.list_offset("expiring", 0, -2) == 200, 10)
        start = c.list_offset("expiring", 0, -2)
        assert c.list_offset("expiring", 0, -1) == 200  # the end never moves
        assert c.fetch("expiring", 0, 0).error_code == 1  # below the start: OFFSET_OUT_OF_RANGE
        assert c.fetch("expiring", 0, start).error_code == 0


# ------------------------------------------------- real consumers on Kafka's fetch shape

SHAPE_PARTITIONS = 2


@pytest.fixture(scope="module")
def cut_fetches(tmp_path_factory):
    """A broker whose topic 'shapes' (2 partitions, 1000-byte segments: about ten each) holds plain
    batches of 1-8 records and transactions over both partitions, every third aborted, one left
    open at the end; returns what each isolation level must deliver per partition."""
    from harness import BrokerProcess
    b = BrokerProcess(tmp_path_factory.mktemp("shapes") / "data", name="shapes")
    b.start()
    visible = {"read_uncommitted": {p: [] for p in range(SHAPE_PARTITIONS)},
               "read_committed": {p: [] for p in range(SHAPE_PARTITIONS)}}
    try:
        with RawClient.to(b.bootstrap) as c:
            assert c.create_topic("shapes", SHAPE_PARTITIONS, {"segment.bytes": "1000"}) == 0
            tid = "shapes-tx"
            c.request(10, 3, {"key": tid, "key_type": 1})
            init = c.init_producer_id(tid)
            pid, epoch = init.producer_id, init.producer_epoch
            seqs = [0] * SHAPE_PARTITIONS
            for k in range(30):
                p = k % SHAPE_PARTITIONS
                plain = [b"plain-%d-%d-" % (k, i) + b"x" * (20 * (k % 4)) for i in range(1 + k % 8)]
                assert c.produce("shapes", p, make_batch(plain)).error_code == 0
                for level in visible.values():
                    level[p] += plain
                commit = k % 3 != 2
                added = c.add_partitions_to_txn(tid, pid, epoch, "shapes", list(range(SHAPE_PARTITIONS)))
                assert set(added.values()) == {0}, added
                for q in range(SHAPE_PARTITIONS):
                    values = [b"txn-%d-%d-%d" % (k, q, i) for i in range(1 + (k + q) % 5)]
                    r = c.produce("shapes", q, make_batch(values, pid, epoch, seqs[q], True), transactional_id=tid)
                    assert r.error_code == 0, r
                    seqs[q] += len(values)
                    visible["read_uncommitted"][q] += values
                    if commit:
                        visible["read_committed"][q] += values
                ends = [c.list_offset("shapes", q) + 1 for q in range(SHAPE_PARTITIONS)]  # past the markers
                assert c.end_txn(tid, pid, epoch, commit) == 0
                wait_until(lambda: [c.list_offset("shapes", q, isolation=1) for q in range(SHAPE_PARTITIONS)]
                           == ends, 10)
            # an open transaction at the end: read_committed stops at its start
            c.add_partitions_to_txn(tid, pid, epoch, "shapes", [0])
            open_values = [b"open-%d" % i for i in range(3)]
            assert c.produce("shapes", 0, make_batch(open_values, pid, epoch, seqs[0], True),
                             transactional_id=tid).error_code == 0
            visible["read_uncommitted"][0] += open_values
            # the limits below give both shapes: answers ending in a cut batch, and first batches
            # over the limit returned whole
            cut = whole_big = 0
            offset = 0
            while offset < c.list_offset("shapes", 0):
                data = bytes(c.fetch("shapes", 0, offset, max_bytes=SMALL["max_partition_fetch_bytes"]).records)
                hs = [h for _, h in rec.iter_batch_headers(data)]
                cut += sum(h.size for h in hs) < len(data)
                whole_big += hs[0].size > SMALL["max_partition_fetch_bytes"]
                offset = hs[-1].next_offset
            assert cut > 5 and whole_big > 5, (cut, whole_big)
        assert min(len(list(b.partition_dir("shapes", q).glob("*.log"))) for q in range(SHAPE_PARTITIONS)) >= 8
        yield b, visible
    finally:
        b.close()


# fetch limits below many batches' size: most answers end in a cut batch, and a partition whose
# first batch exceeds the budget left is skipped in that fetch
SMALL = {"fetch_max_bytes": 300, "max_partition_fetch_bytes": 200}


def _kp_read(bootstrap, isolation, expected):
    from kafka import KafkaConsumer, TopicPartition
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                      auto_offset_reset="earliest", isolation_level=isolation, fetch_max_wait_ms=50, **SMALL)
    out = []
    try:
        c.assign([TopicPartition("shapes", p) for p in range(SHAPE_PARTITIONS)])
        deadline = time.monotonic() + 60
        while len(out) < expected and time.monotonic() < deadline:
            out += [(r.partition, r.offset, r.value) for rs in c.poll(200).values() for r in rs]
        out += [(r.partition, r.offset, r.value) for rs in c.poll(500).values() for r in rs]  # nothing more
    finally:
        c.close()
    return out


def _ck_read(bootstrap, isolation, expected):
    from confluent_kafka import Consumer, TopicPartition
    # librdkafka wants fetch.max.bytes >= message.max.bytes, whose least value is 1000
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "shapes-unused", "enable.auto.commit": False,
                  "isolation.level": isolation, "fetch.max.bytes": 1000, "message.max.bytes": 1000,
                  "max.partition.fetch.bytes": SMALL["max_partition_fetch_bytes"], "fetch.wait.max.ms": 50})
    out = []
    try:
        c.assign([TopicPartition("shapes", p, 0) for p in range(SHAPE_PARTITIONS)])
        deadline = time.monotonic() + 60
        while len(out) < expected and time.monotonic() < deadline:
            for m in c.consume(500, 0.2):
                assert m.error() is None, m.error()
                out.append((m.partition(), m.offset(), m.value()))
        out += [(m.partition(), m.offset(), m.value()) for m in c.consume(500, 0.5) if m.error() is None]
    finally:
        c.close()
    return out


def _aio_read(bootstrap, isolation, expected):
    import asyncio
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def run():
        c = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest",
                             isolation_level=isolation, fetch_max_wait_ms=50, **SMALL)
        await c.start()
        out = []
        try:
            tps = [TopicPartition("shapes", p) for p in range(SHAPE_PARTITIONS)]
            c.assign(tps)
            await c.seek_to_beginning(*tps)
            deadline = time.monotonic() + 60
            while len(out) < expected and time.monotonic() < deadline:
                for rs in (await c.getmany(timeout_ms=200)).values():
                    out += [(r.partition, r.offset, r.value) for r in rs]
            for rs in (await c.getmany(timeout_ms=500)).values():
                out += [(r.partition, r.offset, r.value) for r in rs]
        finally:
            await c.stop()
        return out

    return asyncio.run(run())


def _java_read(java_client, bootstrap, isolation, expected):
    import json
    import subprocess
    r = subprocess.run(["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp",
                        java_client.classpath, "TxnTool", "consume", "--bootstrap", bootstrap, "--topics", "shapes",
                        "--partitions", str(SHAPE_PARTITIONS), "--isolation", isolation, "--expected", str(expected),
                        "--timeout-ms", "60000", "--linger-ms", "500",
                        "--max-partition-fetch-bytes", str(SMALL["max_partition_fetch_bytes"]),
                        "--fetch-max-bytes", str(SMALL["fetch_max_bytes"])],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    return [(d["partition"], d["offset"], d["value"].encode()) for d in map(json.loads, r.stdout.splitlines())
            if d["type"] == "record"]


@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
@pytest.mark.parametrize("client", ["kafka-python", "confluent-kafka", "aiokafka", "java"])
def test_consumers_read_cut_fetches_exactly_once(cut_fetches, client, isolation, request):
    """Fetch answers as Kafka's (one segment per partition, ending in a cut batch, partitions
    sharing max_bytes): every client, at both isolation levels, gets each record it should once,
    in offset order, across every segment boundary."""
    b, visible = cut_fetches
    want = visible[isolation]
    expected = sum(len(v) for v in want.values())
    if client == "java":
        got = _java_read(request.getfixturevalue("java_client"), b.bootstrap, isolation, expected)
    else:
        read = {"kafka-python": _kp_read, "confluent-kafka": _ck_read, "aiokafka": _aio_read}[client]
        got = read(b.bootstrap, isolation, expected)
    for p in range(SHAPE_PARTITIONS):
        mine = [(o, v) for q, o, v in got if q == p]
        offsets = [o for o, _ in mine]
        assert offsets == sorted(set(offsets)), f"partition {p}: records repeated or out of order"
        assert [v for _, v in mine] == want[p], f"partition {p}: {len(mine)} records, want {len(want[p])}"


def test_partitions_past_the_byte_budget_and_caught_up(broker_factory, unique_topic):
    """The Fetch handler answers a caught-up partition, and (read_uncommitted) one the spent
    max_bytes leaves no bytes for, without reading its log: the answer must be the read's, as
    Kafka's (readFromLog reads every partition). After the first partition's batch has taken the
    budget (KIP-74: whole, past max_bytes), a partition with data answers no records, no error
    and its offsets, a null aborted list under read_uncommitted and an empty one under
    read_committed; a fetch offset past the log end is still OFFSET_OUT_OF_RANGE; a caught-up
    partition answers as the read at the high watermark (or LSO) does."""
    t = unique_topic("budget")
    b = broker_factory()
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic(t, 3) == 0
        for p, values in ((0, [b"a", b"b"]), (1, [b"c"]), (2, [b"d", b"e"])):
            for v in values:
                assert c.produce(t, p, make_batch([v])).error_code == 0

        def fetch(parts, isolation, max_bytes=1):
            body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": max_bytes,
                    "isolation_level": isolation, "session_id": 0, "session_epoch": -1,
                    "topics": [{"topic": t, "partitions": [
                        {"partition": p, "fetch_offset": off, "partition_max_bytes": 1 << 20,
                         "current_leader_epoch": -1, "log_start_offset": -1} for p, off in parts]}]}
            return [(q.partition_index, q.error_code, q.high_watermark, q.last_stable_offset,
                     None if q.aborted_transactions is None else list(q.aborted_transactions),
                     len(list(rec.iter_batch_headers(q.records or b""))))
                    for r in c.request(1, 12, body).responses for q in r.partitions]

        for iso, no_list in ((0, None), (1, [])):
            assert fetch([(0, 0), (1, 0), (2, 5)], iso) == [
                (0, 0, 2, 2, no_list, 1),           # the first batch, whole
                (1, 0, 1, 1, no_list, 0),           # data, but no budget left
                (2, 1, -1, -1, None, 0)], iso       # past the log end: an error, whatever the budget
            assert fetch([(0, 2), (1, 1), (2, 0)], iso, max_bytes=1 << 20) == [
                (0, 0, 2, 2, no_list, 0),           # caught up
                (1, 0, 1, 1, no_list, 0),
                (2, 0, 2, 2, no_list, 2)], iso      # the budget is all the third partition's
