"""The aborted-transaction index (``.txnindex``): Kafka's byte layout, ordering, truncation, search."""
from __future__ import annotations

import random
import struct

import pytest

from minikafka.storage.transaction_index import ENTRY_SIZE, AbortedTxn, TransactionIndex, decode_entries


def test_entry_layout_is_kafkas_34_bytes(tmp_path):
    idx = TransactionIndex(str(tmp_path / "00000000000000000000.txnindex"), 0)
    assert not (tmp_path / "00000000000000000000.txnindex").exists()  # created on first entry, like Kafka
    idx.append(AbortedTxn(7, 10, 20, 15))
    data = (tmp_path / "00000000000000000000.txnindex").read_bytes()
    assert ENTRY_SIZE == 34
    assert data == struct.pack(">hqqqq", 0, 7, 10, 20, 15)
    assert decode_entries(data) == [AbortedTxn(7, 10, 20, 15)]


def test_append_order_truncate_and_reload(tmp_path):
    path = str(tmp_path / "00000000000000000100.txnindex")
    idx = TransactionIndex(path, 100)
    for i in range(5):
        idx.append(AbortedTxn(i, 100 + 10 * i, 105 + 10 * i, 106 + 10 * i))
    with pytest.raises(ValueError):
        idx.append(AbortedTxn(9, 100, 105, 106))  # last offsets must increase
    idx.truncate_to(125)  # drops entries whose marker is at or after 125
    assert [e.last_offset for e in idx.entries] == [105, 115]
    again = TransactionIndex(path, 100)
    assert again.entries == idx.entries


def test_torn_tail_is_ignored_and_trimmed(tmp_path):
    path = tmp_path / "00000000000000000000.txnindex"
    good = AbortedTxn(1, 0, 5, 6).encode()
    path.write_bytes(good + good[:10])
    idx = TransactionIndex(str(path), 0)
    assert idx.entries == [AbortedTxn(1, 0, 5, 6)]
    assert path.read_bytes() == good


def test_insert_keeps_order_and_skips_existing(tmp_path):
    idx = TransactionIndex(str(tmp_path / "x.txnindex"), 0)
    idx.append(AbortedTxn(1, 0, 10, 11))
    idx.append(AbortedTxn(2, 12, 30, 31))
    idx.insert(AbortedTxn(3, 15, 20, 12))
    idx.insert(AbortedTxn(1, 0, 10, 11))  # already there
    assert [e.producer_id for e in idx.entries] == [1, 3, 2]
    assert [e.producer_id for e in TransactionIndex(str(tmp_path / "x.txnindex"), 0).entries] == [1, 3, 2]


def test_collect_aborted_txns_overlap_and_completion(tmp_path):
    idx = TransactionIndex(str(tmp_path / "x.txnindex"), 0)
    idx.append(AbortedTxn(1, 0, 10, 5))    # txn 2 was still open when txn 1 aborted: LSO 5
    idx.append(AbortedTxn(2, 5, 20, 21))
    idx.append(AbortedTxn(3, 30, 40, 41))
    out = []
    assert not idx.collect_aborted_txns(11, 100, out)  # no entry's LSO reaches 100: continue in next segment
    assert [e.producer_id for e in out] == [2, 3]
    out = []
    assert idx.collect_aborted_txns(0, 6, out)  # complete: entry 2's LSO 21 >= 6
    assert [e.producer_id for e in out] == [1, 2]
    out = []
    idx.collect_aborted_txns(21, 30, out)
    assert out == []  # txn 3 starts at the (exclusive) upper bound


def test_reset_and_delete(tmp_path):
    path = tmp_path / "x.txnindex"
    idx = TransactionIndex(str(path), 0)
    idx.append(AbortedTxn(1, 0, 10, 11))
    idx.reset()
    assert idx.entries == [] and path.read_bytes() == b""
    idx.append(AbortedTxn(1, 0, 10, 11))
    idx.flush()
    idx.delete()
    assert not path.exists() and idx.entries == []


def kafkas_walk(entries, fetch_offset, upper_bound_offset):
    """Kafka's TransactionIndex.collectAbortedTxns: every entry from the first."""
    out = []
    for e in entries:
        if e.last_offset >= fetch_offset and e.first_offset < upper_bound_offset:
            out.append(e)
        if e.last_stable_offset >= upper_bound_offset:
            return out, True
    return out, False


def test_collect_starts_at_the_range_and_answers_as_kafkas_walk(tmp_path):
    """A log of interleaved transactions, some aborted: every (fetch offset, bound) answers what
    Kafka's walk from the first entry answers."""
    rng = random.Random(7)
    idx = TransactionIndex(str(tmp_path / "r.txnindex"), 0)
    open_txns: dict[int, int] = {}  # producer -> first offset
    offset = 0
    for _ in range(600):
        pid = rng.randrange(6)
        if pid in open_txns and rng.random() < 0.3:
            first = open_txns.pop(pid)
            marker = offset
            offset += 1
            lso = min(open_txns.values(), default=offset)
            if rng.random() < 0.5:
                idx.append(AbortedTxn(pid, first, marker, lso))
        else:
            open_txns.setdefault(pid, offset)
            offset += rng.randrange(1, 4)
    entries = idx.entries
    assert len(entries) > 50
    assert all(a.last_stable_offset <= b.last_stable_offset for a, b in zip(entries, entries[1:]))
    for _ in range(3000):
        fetch = rng.randrange(offset + 5)
        bound = fetch + rng.randrange(60)
        out = []
        done = idx.collect_aborted_txns(fetch, bound, out)
        assert (out, done) == kafkas_walk(entries, fetch, bound), (fetch, bound)
