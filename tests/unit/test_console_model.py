"""The console's pieces without a cluster or a browser (issue 34): the read_committed lag count
on record batches as Kafka's consumer filters them, the transaction-log timelines, the chart's
history ring, and the command line's answers to bad options (exit 2, one line)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from minikafka.console.lag import count_delivered
from minikafka.console.model import History, PartitionState
from minikafka.console.txnlog import TxnLogReader
from minikafka.coordinator.transaction.state import TransactionMetadata, TxnState, encode_key, encode_value
from minikafka.protocol import records as rec

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


def batch(base: int, n: int, pid: int = -1, transactional: bool = False) -> bytes:
    return rec.build_batch([rec.Record(base + i, 1000, None, b"v", ()) for i in range(n)], base_offset=base,
                           producer_id=pid, producer_epoch=0 if pid >= 0 else -1,
                           base_sequence=0 if pid >= 0 else -1, is_transactional=transactional)


def marker(offset: int, pid: int, commit: bool) -> bytes:
    return rec.build_control_batch(pid, 0, commit, 0, 1000, base_offset=offset)


# producer 1: 0-2 committed (marker 3); producer 2: 4-5 aborted (marker 6); plain 7-8
LOG = batch(0, 3, 1, True) + marker(3, 1, True) + batch(4, 2, 2, True) + marker(6, 2, False) + batch(7, 2)
ABORTED = [(4, 2)]  # what a read_committed Fetch answer lists: (first offset, producer id)


@pytest.mark.parametrize("start,end,expected", [
    (0, 9, 5),   # 3 committed + 2 plain; the markers and the aborted records are not delivered
    (1, 9, 4),   # from inside the first batch: its records before the start are not counted
    (3, 9, 2),   # from the commit marker (where a consumer that read to the end commits): 2 plain
    (0, 4, 3),
    (7, 9, 2),
    (9, 9, 0),
])
def test_read_committed_lag_counts_what_a_consumer_receives(start, end, expected):
    count, position = count_delivered(LOG, ABORTED, start, end)
    assert count == expected
    assert position == (9 if end == 9 else 4)


def test_an_aborted_producer_is_delivered_again_after_its_abort_marker():
    log = batch(0, 2, 5, True) + marker(2, 5, False) + batch(3, 2, 5, True) + marker(5, 5, True)
    assert count_delivered(log, [(0, 5)], 0, 6) == (2, 6)


def test_a_scan_resumes_where_it_stopped():
    first, position = count_delivered(LOG[:len(batch(0, 3, 1, True) + marker(3, 1, True))], ABORTED, 0, 9)
    assert (first, position) == (3, 4)
    assert count_delivered(LOG, ABORTED, position, 9, first) == (5, 9)


def record_batch(offset: int, entries: list[tuple[str, TransactionMetadata | None]]) -> bytes:
    recs = [rec.Record(offset + i, 1000, encode_key(tid), None if md is None else encode_value(md), ())
            for i, (tid, md) in enumerate(entries)]
    return rec.build_batch(recs, base_offset=offset)


def md(state: TxnState, t: int, parts=(), start: int = -1, epoch: int = 0) -> TransactionMetadata:
    return TransactionMetadata("app-1", 7, epoch, state=state, partitions=set(parts), txn_start_ms=start,
                               txn_last_update_ms=t)


def test_transaction_log_timeline():
    reader = TxnLogReader(max_entries=4)
    reader._read(0, record_batch(0, [
        ("app-1", md(TxnState.EMPTY, 10)),
        ("app-1", md(TxnState.ONGOING, 20, [("t", 0)], start=20)),
        ("app-1", md(TxnState.ONGOING, 21, [("t", 0), ("t", 1)], start=20)),  # another AddPartitionsToTxn
        ("app-1", md(TxnState.PREPARE_COMMIT, 30, [("t", 0), ("t", 1)], start=20)),
    ]))
    line = reader.timelines["app-1"]
    assert [(e.state, e.time_ms, e.partitions) for e in line] == [
        ("Empty", 10, 0), ("Ongoing", 21, 2), ("PrepareCommit", 30, 2)]
    assert reader.positions[0] == 4
    assert reader.latest["app-1"].state == "PrepareCommit"
    # records already read are skipped; the timeline keeps its last max_entries
    reader._read(0, record_batch(0, [("app-1", md(TxnState.EMPTY, 10))]) + record_batch(4, [
        ("app-1", md(TxnState.COMPLETE_COMMIT, 31)), ("app-1", md(TxnState.ONGOING, 40, [("t", 0)], start=40)),
        ("app-1", None)]))
    assert [e.state for e in reader.timelines["app-1"]] == ["PrepareCommit", "CompleteCommit", "Ongoing", "Deleted"]
    assert "app-1" not in reader.latest  # a tombstone
    assert reader.positions[0] == 7


def test_transaction_log_ids_are_bounded():
    reader = TxnLogReader(max_ids=2)
    reader._read(0, record_batch(0, [(f"id-{i}", md(TxnState.EMPTY, i)) for i in range(3)]))
    assert list(reader.timelines) == ["id-1", "id-2"]


def test_history_ring():
    h = History(size=3)
    for t in range(5):
        h.add(t * 1000, {("a", 0): PartitionState("a", 0, 1, False, hwm=t, lso=t - 1)}
              | ({("b", 0): PartitionState("b", 0, 1, False, hwm=9, lso=9)} if t == 4 else {}))
    assert h.of(("a", 0)) == {"t": [2, 3, 4], "hwm": [2, 3, 4], "lso": [1, 2, 3]}
    assert h.of(("b", 0)) == {"t": [2, 3, 4], "hwm": [None, None, 9], "lso": [None, None, 9]}
    assert h.of(("c", 0))["hwm"] == [None, None, None]


@pytest.mark.parametrize("args,says", [
    (["--bootstrap-server", "nohost"], "--bootstrap-server must be HOST:PORT"),
    (["--bootstrap-server", "127.0.0.1:9092", "--listen", "8080"], "--listen must be HOST:PORT"),
    (["--bootstrap-server", "127.0.0.1:9092", "--command-config", "/nonexistent/client.properties"],
     "--command-config"),
    (["--bootstrap-server", "127.0.0.1:9092", "--interval", "0"], "--interval must be positive"),
])
def test_bad_options_get_one_line_and_exit_2(args, says):
    r = subprocess.run([sys.executable, "-m", "minikafka", "console", *args], cwd=ROOT, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2, r
    assert says in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
