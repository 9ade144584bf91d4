"""broker/handlers/fetch.py's _read_all answers a partition with nothing to return (caught up,
or no byte budget left under read_uncommitted) without reading its log, and in an incremental
session leaves out, unbuilt, a partition the session would not answer. Both must give what
reading every partition gives (Kafka's readFromLog reads them all): here against a reference
that reads each partition through UnifiedLog.read, as the handler did before, over logs with
aborted and open transactions, a moved log start, out-of-range offsets and leader epochs."""
from __future__ import annotations

import itertools
import uuid

import pytest

from minikafka.broker.broker import Broker
from minikafka.broker.config import BrokerConfig
from minikafka.broker.fetch_session import ZERO_UUID, FetchManager, PartitionData, partition_key
from minikafka.broker.handlers.fetch import INT32_MAX, _diverging_epoch, _error, _read_all
from minikafka.broker.handlers.common import check_leader_epoch
from minikafka.protocol import records as rec
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.protocol.schema import Msg
from minikafka.storage.file_slice import FileSlice

TS = 1_700_000_000_000


def reference_read_all(b, parts, req, version):
    """Every partition read through lg.read: _read_all's answers as they were before it
    learned to skip the read (erroneous partitions last)."""
    committed = req.isolation_level == 1
    remaining = min(req.max_bytes if req.max_bytes > 0 else INT32_MAX, b.config["fetch.max.bytes"])
    total, answered, erroneous = 0, [], []
    for key, pd in parts:
        lg = b.ctx.replicas.get_log(pd.topic, pd.partition)
        if lg is None:
            erroneous.append((key, pd, _error(pd.partition, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])))
            continue
        try:
            if pd.topic_id is not ZERO_UUID and lg.topic_id != pd.topic_id:
                raise KafkaError(ErrorCode.INCONSISTENT_TOPIC_ID)
            check_leader_epoch(lg, pd.current_leader_epoch if pd.current_leader_epoch >= 0 else None)
            hw, lso = lg.high_watermark, lg.last_stable_offset
            r = {"partition_index": pd.partition, "error_code": 0, "high_watermark": hw, "last_stable_offset": lso,
                 "log_start_offset": lg.log_start_offset, "aborted_transactions": None, "preferred_read_replica": -1,
                 "records": b""}
            if pd.last_fetched_epoch >= 0:
                diverging = _diverging_epoch(lg, pd.fetch_offset, pd.last_fetched_epoch)
                if diverging is not None:
                    r["diverging_epoch"] = diverging
                    answered.append((key, pd, r))
                    continue
            limit = max(min(pd.max_bytes, remaining), 0)
            rr = lg.read(pd.fetch_offset, limit, max_offset=lso if committed else hw, min_one=total == 0,
                         include_aborted=committed)
            if not rr.first_entry_incomplete:
                if rr.slice is not None:
                    r["records"] = rr.slice
                    total += len(rr.slice)
                    remaining -= len(rr.slice)
                if rr.aborted is not None:
                    r["aborted_transactions"] = [{"producer_id": p, "first_offset": f} for p, f in rr.aborted]
        except KafkaError as e:
            r = _error(pd.partition, e.code, None)
            if e.code == ErrorCode.FENCED_LEADER_EPOCH and version >= 16:
                r["current_leader"] = {"leader_id": b.ctx.node_id, "leader_epoch": lg.leader_epoch}
        answered.append((key, pd, r))
    return answered + erroneous


def comparable(answered) -> list:
    """(key, answer) with each record slice as (file position, size): slices do not compare."""
    out = []
    for key, _, r in answered:
        r = dict(r)
        if isinstance(r["records"], FileSlice):
            r["records"] = (r["records"].position, r["records"].size)
        out.append((key, r))
    return out


def batch(n: int, pid: int = -1, txn: bool = False) -> bytes:
    records = [rec.Record(i, TS, None, b"v" * 40, ()) for i in range(n)]
    if pid < 0:
        return rec.build_batch(records)
    return rec.build_batch(records, producer_id=pid, producer_epoch=0, base_sequence=0, is_transactional=txn)


def marker(pid: int, commit: bool) -> bytes:
    return rec.build_control_batch(pid, 0, commit, 0, TS)


@pytest.fixture
def fbroker(tmp_path):
    b = Broker(BrokerConfig.load(None, [f"log.dirs={tmp_path}", "listeners=PLAINTEXT://127.0.0.1:0"]))
    b.load()
    b.ctx.topics.create("t", 4)
    logs = [b.ctx.replicas.get_log("t", p) for p in range(4)]
    for _ in range(3):                                   # p0: plain batches
        logs[0].append(batch(4))
    logs[1].append(batch(3))                             # p1: two aborted transactions around plain data
    logs[1].append(batch(2, pid=7, txn=True))
    logs[1].append(batch(2))
    logs[1].append(marker(7, False), origin="coordinator")
    logs[1].append(batch(2, pid=8, txn=True))
    logs[1].append(marker(8, False), origin="coordinator")
    logs[1].append(batch(3))
    logs[2].append(batch(2))                             # p2: an open transaction holds the LSO
    logs[2].append(batch(2, pid=9, txn=True))
    logs[2].append(batch(3))
    for _ in range(3):                                   # p3: the log start moved past the first batch
        logs[3].append(batch(2))
    logs[3].delete_records_before(3)
    yield b
    b.close()


def request(isolation: int, max_bytes: int) -> Msg:
    return Msg(isolation_level=isolation, max_bytes=max_bytes)


def parts_at(b, offsets, leader_epoch=-1, last_fetched_epoch=-1, by_id=True) -> list:
    out = []
    for p, off in enumerate(offsets):
        topic_id = b.ctx.replicas.get_log("t", 0).topic_id if by_id else ZERO_UUID
        out.append((partition_key("t", topic_id, p),
                    PartitionData("t", topic_id, p, off, -1, 1 << 20, leader_epoch, last_fetched_epoch)))
    return out


def test_partitions_with_nothing_to_read_answer_as_the_read_does(fbroker):
    b = fbroker
    """Every mix of offsets (start, middle, the LSO, the high watermark, past the end, below
    the log start), budgets (spent by the first batch, some, plenty) and isolation levels."""
    ends = [b.ctx.replicas.get_log("t", p).log_end_offset for p in range(4)]
    assert b.ctx.replicas.get_log("t", 2).last_stable_offset < ends[2]    # (the open transaction)
    choices = [sorted({0, 1, 2, b.ctx.replicas.get_log("t", p).last_stable_offset, ends[p], ends[p] + 3})
               for p in range(4)]
    seen_budgetless = seen_out_of_range = 0
    for offsets in itertools.product(*choices):
        for isolation, max_bytes in itertools.product((0, 1), (1, 300, 1 << 20)):
            req, parts = request(isolation, max_bytes), parts_at(b, offsets)
            got = _read_all(b.ctx, parts, req, 16)[0]
            assert comparable(got) == comparable(reference_read_all(b, parts, req, 16)), (offsets, isolation)
            seen_out_of_range += any(r["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE for _, _, r in got)
            seen_budgetless += max_bytes == 1 and isolation == 1 and any(
                r["aborted_transactions"] for _, _, r in got[1:])
    assert seen_out_of_range and seen_budgetless  # (the cases the brief names were reached)


@pytest.mark.parametrize("leader_epoch, last_fetched_epoch", [(-1, -1), (0, -1), (5, -1), (0, 0), (-1, 3)])
def test_leader_epochs_and_divergence_are_checked_as_the_read_does(fbroker, leader_epoch, last_fetched_epoch):
    b = fbroker
    b.ctx.replicas.get_log("t", 3).become_leader(2)             # p3 moves on: epoch 0 is fenced there
    for offsets in ((0, 0, 0, 3), (12, 12, 7, 6), (99, 0, 0, 0)):
        for isolation, max_bytes in itertools.product((0, 1), (1, 1 << 20)):
            req = request(isolation, max_bytes)
            parts = parts_at(b, offsets, leader_epoch, last_fetched_epoch)
            got = _read_all(b.ctx, parts, req, 16)[0]
            assert comparable(got) == comparable(reference_read_all(b, parts, req, 16))


def test_unknown_topic_id_and_partition_keep_their_place():
    # (no log needed: answered before any read)
    class NoLogs:
        config = {"fetch.max.bytes": 1 << 20}

        class replicas:
            @staticmethod
            def get_log(topic, partition):
                return None
    pd = PartitionData(None, uuid.uuid4(), 0, 0, -1, 100, -1, -1)
    answered, total, now, _ = _read_all(NoLogs, [("k", pd)], request(0, 100), 16)
    assert [r["error_code"] for _, _, r in answered] == [ErrorCode.UNKNOWN_TOPIC_ID] and now and total == 0


def run_sessions(b, steps) -> list:
    """Two sessions driven in step, one reading with omit_unchanged and one without, through
    steps of (offsets to fetch at, isolation, max_bytes, a change to the logs first): the
    first a full fetch, then incremental ones naming each partition whose offset changed;
    what each answer lists (session ids left out: each manager draws its own)."""
    answers = {True: [], False: []}
    sessions = {omit: [FetchManager(10, lambda: 0), 0] for omit in answers}
    last = [None] * 4
    for epoch, (offsets, isolation, max_bytes, change) in enumerate(steps):
        change()
        changed = {k: pd for (k, pd), old in zip(parts_at(b, offsets), last) if pd.fetch_offset != old}
        for omit, session in sessions.items():
            fm, sid = session
            ctx = fm.new_context(16, sid, epoch, dict(changed), [])
            answered = _read_all(b.ctx, ctx.partitions(lambda _: "t"), request(isolation, max_bytes), 16, None,
                                 omit and ctx.omits_unchanged)[0]
            error, session[1], out = ctx.respond(answered, 0)
            answers[omit].append((error, comparable(out)))
        last = list(offsets)
    return answers[True], answers[False]


def test_an_incremental_session_answers_the_same_without_building_quiet_partitions(fbroker):
    b = fbroker
    logs = [b.ctx.replicas.get_log("t", p) for p in range(4)]
    nothing = lambda: None  # noqa: E731
    with_omit, without = run_sessions(b, [
        ((0, 0, 0, 3), 0, 300, nothing),                     # full: all answered
        ((0, 0, 0, 3), 0, 300, nothing),                     # nothing new: an empty answer
        ((4, 0, 0, 3), 0, 1 << 20, nothing),                 # one moved on: the rest read, quiet ones left out
        ((12, 3, 2, 5), 1, 1, lambda: logs[0].append(batch(2))),   # the high watermark moved
        ((14, 3, 2, 5), 1, 1, lambda: (logs[3].delete_records_before(5),   # log starts moved: with data
                                       logs[0].delete_records_before(10))),  # and caught up
        ((14, 3, 99, 7), 1, 1 << 20, nothing),               # out of range: errors, answered while they last
        ((14, 3, 2, 7), 1, 1 << 20, nothing),                # p2's error gone: answered once more
        ((14, 15, 2, 7), 0, 1 << 20, nothing),
        ((14, 15, 2, 7), 0, 1 << 20, nothing),
    ])
    assert with_omit == without
    # (partition, error, records?) answered: quiet partitions left out, errors always in
    assert [[(k[1], r["error_code"], r["records"] != b"") for k, r in out] for _, out in with_omit] == [
        [(0, 0, True), (1, 0, False), (2, 0, False), (3, 0, False)],
        [(0, 0, True)],
        [(1, 0, True), (2, 0, True), (3, 0, True), (0, 0, True)],
        [(1, 0, True), (0, 0, False)],
        [(3, 0, True), (0, 0, False)],
        [(2, 1, False), (1, 0, True), (3, 1, False)],
        [(2, 0, False), (3, 1, False), (1, 0, True)],
        [(2, 0, True), (3, 1, False), (1, 1, False)],
        [(3, 1, False), (1, 1, False), (2, 0, True)]]
