"""Producer state in storage: idempotence, transactions, LSO, aborted index, snapshots, reload."""
from __future__ import annotations

import os
import struct

import pytest

from minikafka.protocol import records as rec
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.protocol.records import Record
from minikafka.storage.config import LogConfig
from minikafka.storage.log import UnifiedLog
from minikafka.storage.producer_state import (CorruptSnapshotError, ProducerStateEntry, BatchMetadata, decode_snapshot,
                                    encode_snapshot, list_snapshot_offsets)
from minikafka.storage.transaction_index import AbortedTxn

TS = 1_700_000_000_000
INT32_MAX = 2**31 - 1
PID = 1000


def cfg(**overrides) -> LogConfig:
    return LogConfig().with_overrides({k.replace("_", "."): str(v) for k, v in overrides.items()})


def open_log(path, config=None, **kw) -> UnifiedLog:
    return UnifiedLog(str(path), "t", 0, config or cfg(), **kw)


def data(seq: int, n: int = 2, pid: int = PID, epoch: int = 0, txn: bool = False, size: int = 50,
         ts: int = TS) -> bytes:
    return rec.build_batch([Record(None, ts + j, None, bytes([seq % 256]) * size, ()) for j in range(n)],
                           producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=txn)


def plain(n: int = 2, size: int = 50) -> bytes:
    return rec.build_batch([Record(None, TS + j, None, b"p" * size, ()) for j in range(n)])


def marker(commit: bool, pid: int = PID, epoch: int = 0, coordinator_epoch: int = 0) -> bytes:
    return rec.build_control_batch(pid, epoch, commit, coordinator_epoch, TS)


def end_txn(log: UnifiedLog, commit: bool, **kw):
    return log.append(marker(commit, **kw), origin="coordinator")


def code_of(fn) -> ErrorCode:
    with pytest.raises(KafkaError) as ei:
        fn()
    return ei.value.code


def headers(log: UnifiedLog):
    out, off = [], log.log_start_offset
    while True:
        r = log.read(off, 1 << 20, max_offset=log.log_end_offset)
        if not r.records:
            return out
        out += [h for _, h in rec.iter_batch_headers(r.records)]
        off = r.next_offset


@pytest.fixture
def log(tmp_path):
    lg = open_log(tmp_path / "t-0")
    yield lg
    lg.close()


# ---------------------------------------------------------------- idempotence
def test_duplicate_returns_original_offsets_and_is_stored_once(log):
    log.append(plain())
    first = log.append(data(0))
    leo = log.log_end_offset
    again = log.append(data(0))
    assert (again.base_offset, again.last_offset) == (first.base_offset, first.last_offset) == (2, 3)
    assert log.log_end_offset == leo
    assert [h.base_offset for h in headers(log)] == [0, 2]


def test_gap_is_out_of_order_and_nothing_stored(log):
    log.append(data(0))
    assert code_of(lambda: log.append(data(10))) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log.log_end_offset == 2
    assert log.append(data(2)).base_offset == 2  # the right next sequence still works


def test_sequence_wraps_at_int32_max(log):
    # unknown producer: any first sequence is accepted (Kafka 2.5+/4.x)
    a = log.append(data(INT32_MAX - 2, n=3))     # sequences MAX-2..MAX
    b = log.append(data(0, n=2))                # wraps to 0
    c = log.append(data(2, n=1))
    assert (a.base_offset, b.base_offset, c.base_offset) == (0, 3, 5)
    assert log.append(data(0, n=2)).base_offset == 3  # duplicate across the wrap
    # a batch straddling the wrap: MAX-1, MAX, 0
    lg2 = log.producer_state
    assert lg2.last_entry(PID).last_sequence == 2


def test_batch_straddling_the_wrap(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append(data(INT32_MAX - 1, n=3))  # MAX-1, MAX, 0
    assert log.producer_state.last_entry(PID).last_sequence == 0
    assert log.append(data(1, n=1)).base_offset == 3
    assert code_of(lambda: log.append(data(3, n=1))) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    log.close()


def test_unknown_producer_accepts_any_sequence(log):
    assert log.append(data(42)).base_offset == 0
    assert log.append(data(44)).base_offset == 2
    assert code_of(lambda: log.append(data(50))) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_epoch_bump_must_restart_at_zero_and_stale_epoch_is_refused(log):
    log.append(data(0, epoch=0))
    log.append(data(2, epoch=0))
    assert code_of(lambda: log.append(data(4, epoch=1))) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log.append(data(0, epoch=1)).base_offset == 4
    assert code_of(lambda: log.append(data(4, epoch=0))) == ErrorCode.INVALID_PRODUCER_EPOCH
    # old epoch's retained batches are gone: its exact retry is a stale epoch, not a duplicate
    assert code_of(lambda: log.append(data(2, epoch=0))) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert log.log_end_offset == 6


def test_five_pipelined_batches_with_the_middle_one_retried(log):
    offs = [log.append(data(2 * i)).base_offset for i in range(5)]
    assert offs == [0, 2, 4, 6, 8]
    assert log.append(data(4)).base_offset == 4      # the middle one again: duplicate
    for i in range(5):                               # every one of the 5 is in the window
        assert log.append(data(2 * i)).base_offset == offs[i]
    assert log.log_end_offset == 10
    log.append(data(10))                              # 6th pushes the first out of the window
    assert code_of(lambda: log.append(data(0))) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log.append(data(2)).base_offset == 2


def test_batches_of_one_append_are_checked_against_each_other(log):
    log.append(data(0))
    assert log.append(data(2) + data(4)).base_offset == 2
    assert code_of(lambda: log.append(data(6) + data(9))) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log.log_end_offset == 6
    # a duplicate anywhere in a multi-batch append answers with the duplicate (Kafka)
    assert log.append(data(4) + data(6)).base_offset == 4
    assert log.log_end_offset == 6
    # two producers in one append
    r = log.append(data(6) + data(0, pid=PID + 1))
    assert (r.base_offset, r.last_offset) == (6, 9)


def test_duplicate_keeps_log_append_time_semantics(tmp_path):
    log = open_log(tmp_path / "t-0", cfg(message_timestamp_type="LogAppendTime"))
    first = log.append(data(0), now_ms=TS + 500)
    dup = log.append(data(0), now_ms=TS + 900)
    assert first.log_append_time_ms == TS + 500
    assert (dup.base_offset, dup.log_append_time_ms) == (0, TS + 500)
    log.close()


# ---------------------------------------------------------------- transactions / LSO / index
def test_transaction_holds_lso_until_commit(log):
    log.append(plain())
    t = log.append(data(0, txn=True))
    assert log.has_ongoing_transaction(PID)
    log.append(plain())
    log.append(data(2, txn=True))
    assert log.high_watermark == 8 and log.last_stable_offset == t.base_offset == 2
    assert code_of(lambda: log.append(data(4, txn=False))) == ErrorCode.INVALID_TXN_STATE
    m = end_txn(log, commit=True)
    assert m.base_offset == 8
    assert not log.has_ongoing_transaction(PID)
    assert log.last_stable_offset == log.high_watermark == 9
    assert log.aborted_transactions(0, 9) == []
    assert log.append(data(4, txn=False)).base_offset == 9  # sequences continue after the marker


def test_abort_writes_txn_index_entry_with_lso(tmp_path, log):
    a, b = PID, PID + 1
    log.append(data(0, pid=a, txn=True))          # 0-1
    log.append(data(0, pid=b, txn=True))          # 2-3
    log.append(data(2, pid=a, txn=True))          # 4-5
    end_txn(log, commit=False, pid=a)             # 6: abort a; b still open -> LSO at b's first offset
    assert log.last_stable_offset == 2
    end_txn(log, commit=False, pid=b)             # 7
    assert log.last_stable_offset == 8
    assert log.active_segment.txn_index.entries == [AbortedTxn(a, 0, 6, 2), AbortedTxn(b, 2, 7, 8)]
    raw = open(os.path.join(log.dir, "00000000000000000000.txnindex"), "rb").read()
    assert raw == struct.pack(">hqqqq", 0, a, 0, 6, 2) + struct.pack(">hqqqq", 0, b, 2, 7, 8)
    assert log.aborted_transactions(0, 8) == [(a, 0), (b, 2)]
    assert log.aborted_transactions(7, 8) == [(b, 2)]
    assert log.aborted_transactions(0, 1) == [(a, 0)]
    assert log.aborted_transactions(8, 8) == []


def test_control_batch_from_client_is_invalid_record(log):
    assert code_of(lambda: log.append(marker(True))) == ErrorCode.INVALID_RECORD
    assert log.log_end_offset == 0


def test_marker_epoch_checks(log):
    log.append(data(0, epoch=3, txn=True))
    assert code_of(lambda: end_txn(log, True, epoch=2)) == ErrorCode.INVALID_PRODUCER_EPOCH
    end_txn(log, True, epoch=3, coordinator_epoch=5)
    log.append(data(2, epoch=3, txn=True))
    assert code_of(lambda: end_txn(log, False, epoch=3, coordinator_epoch=4)) == \
        ErrorCode.TRANSACTION_COORDINATOR_FENCED
    assert log.has_ongoing_transaction(PID)
    # a fencing abort with a bumped epoch (TV1) completes the transaction and bumps the epoch
    end_txn(log, False, epoch=4, coordinator_epoch=5)
    e = log.producer_state.last_entry(PID)
    assert (e.producer_epoch, e.coordinator_epoch, e.current_txn_first_offset) == (4, 5, -1)
    assert code_of(lambda: log.append(data(4, epoch=3))) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert code_of(lambda: log.append(data(4, epoch=4))) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log.append(data(0, epoch=4)).base_offset == log.log_end_offset - 2


def test_marker_without_open_transaction_is_appended_without_index_entry(log):
    r = end_txn(log, False, pid=77)
    assert r.base_offset == 0 and log.log_end_offset == 1
    assert log.active_segment.txn_index.entries == []
    assert log.producer_state.last_entry(77).producer_epoch == 0


def test_coordinator_transactional_batch_without_sequence(log):
    # what the group coordinator writes for TxnOffsetCommit: producer id/epoch, sequence -1
    b = data(-1, txn=True)
    log.append(b, origin="coordinator")
    assert log.has_ongoing_transaction(PID) and log.last_stable_offset == 0
    end_txn(log, True)
    assert log.last_stable_offset == log.log_end_offset


def test_describe_producers_fields(log):
    log.append(data(0, n=3, ts=TS + 7))
    log.append(data(0, pid=5, txn=True))
    got = {e.producer_id: e for e in log.active_producers()}
    e = got[PID]
    assert (e.producer_epoch, e.last_sequence, e.last_timestamp, e.coordinator_epoch,
            e.current_txn_first_offset) == (0, 2, TS + 9, -1, -1)
    assert got[5].current_txn_first_offset == 3


def test_aborted_txn_spanning_segments(tmp_path):
    log = open_log(tmp_path / "t-0", cfg(segment_bytes=1000))
    log.append(data(0, txn=True, size=300))       # 0-1 in segment 0
    while log.num_segments() < 3:
        log.append(plain(size=300))
    end_txn(log, commit=False)
    m = log.log_end_offset - 1
    # the entry lives in the segment holding the marker
    assert log.segments[0].txn_index.entries == []
    assert log.active_segment.txn_index.entries == [AbortedTxn(PID, 0, m, m + 1)]
    assert log.aborted_transactions(0, 2) == [(PID, 0)]
    assert log.aborted_transactions(2, m) == [(PID, 0)]   # fetch from a middle segment still sees it
    assert log.aborted_transactions(m + 1, m + 1) == []
    log.close()


# ---------------------------------------------------------------- expiry / retention
def test_expiry_keeps_open_transactions(log):
    log.append(data(0, pid=1, ts=TS))
    log.append(data(0, pid=2, txn=True, ts=TS))
    log.append(data(0, pid=3, ts=TS + 10_000))
    assert log.expire_producers(TS + 10_000, 5_000) == 1
    assert sorted(e.producer_id for e in log.active_producers()) == [2, 3]
    # an expired producer is unknown again: any sequence is accepted
    assert log.append(data(40, pid=1)).base_offset == 6


def test_retention_keeps_producers_and_drops_index_entries_of_deleted_segments(tmp_path):
    log = open_log(tmp_path / "t-0", cfg(segment_bytes=1000))
    log.append(data(0, pid=1, txn=True, size=300))
    end_txn(log, False, pid=1)
    log.append(data(0, pid=2, size=300))
    while log.num_segments() < 3:
        log.append(plain(size=300))
    log.append(data(0, pid=3))
    first_seg_txnindex = log.segments[0].txn_index.path
    assert os.path.exists(first_seg_txnindex)
    cut = log.segments[-1].base_offset
    log.delete_records_before(cut)
    assert log.log_start_offset == cut and not os.path.exists(first_seg_txnindex)
    # KIP-360: only producer.id.expiration.ms removes a producer, and a retry is still a duplicate
    assert sorted(e.producer_id for e in log.active_producers()) == [1, 2, 3]
    assert log.append(data(0, pid=2, size=300)).base_offset < cut
    # the state is in a snapshot at the log end offset, and none is left below the log start
    snaps = log.producer_state.snapshots
    assert snaps[-1] == log.log_end_offset and min(snaps) >= cut
    assert log.aborted_transactions(cut, log.log_end_offset) == []
    log.close()


# ---------------------------------------------------------------- snapshots
def test_snapshot_bytes_are_kafkas_format():
    e1 = ProducerStateEntry(7, 2, 3, TS, -1, [BatchMetadata(10, 14, 104, 4, TS)])
    e2 = ProducerStateEntry(8, 0, -1, TS + 1, 50, [])
    data_ = encode_snapshot([e1, e2])
    body = struct.pack(">i", 2) + struct.pack(">qhiqiqiq", 7, 2, 14, 104, 4, TS, 3, -1) \
        + struct.pack(">qhiqiqiq", 8, 0, -1, -1, 0, TS + 1, -1, 50)
    assert data_ == struct.pack(">hI", 1, rec.crc32c(body)) + body
    back = decode_snapshot(data_)
    assert [(e.producer_id, e.producer_epoch, e.coordinator_epoch, e.last_timestamp, e.current_txn_first_offset,
             e.batches) for e in back] == [(7, 2, 3, TS, -1, [BatchMetadata(10, 14, 104, 4, TS)]),
                                          (8, 0, -1, TS + 1, 50, [])]
    bad = bytearray(data_)
    bad[-1] ^= 1
    with pytest.raises(CorruptSnapshotError):
        decode_snapshot(bytes(bad))
    with pytest.raises(CorruptSnapshotError):
        decode_snapshot(data_[:-3])


def test_snapshot_first_sequence_across_the_wrap():
    e = ProducerStateEntry(1, 0, -1, TS, -1, [BatchMetadata(INT32_MAX - 1, 1, 10, 3, TS)])
    (back,) = decode_snapshot(encode_snapshot([e]))
    assert back.batches[0].first_seq == INT32_MAX - 1


def test_clean_reload_keeps_dedup_open_txn_and_index(tmp_path):
    path = tmp_path / "t-0"
    log = open_log(path)
    log.append(data(0))
    log.append(data(2))
    log.append(data(0, pid=9, txn=True))
    end_txn(log, False, pid=9)
    log.append(data(2, pid=9, txn=True))           # open transaction at offset 7
    lso = log.last_stable_offset
    log.close()
    assert list_snapshot_offsets(str(path)) == [log.log_end_offset]
    log2 = open_log(path)
    assert log2.last_stable_offset == lso == 7 and log2.has_ongoing_transaction(9)
    assert log2.append(data(2)).base_offset == 2   # the last batch is recognised
    assert log2.append(data(4)).base_offset == 9
    assert log2.aborted_transactions(0, 9) == [(9, 4)]
    end_txn(log2, True, pid=9)
    assert log2.last_stable_offset == log2.log_end_offset
    log2.close()


def test_crash_reload_replays_tail_with_full_window(tmp_path):
    path = tmp_path / "t-0"
    c = cfg(segment_bytes=3000)
    log = open_log(path, c)
    i = 0
    while log.num_segments() < 3:              # several rolls, snapshots on roll
        log.append(data(2 * i, size=200))
        i += 1
    log.roll()
    for _ in range(6):                         # then more than a window after the last roll
        log.append(data(2 * i, size=20))
        i += 1
    n = i
    log.append(data(0, pid=9, txn=True))
    log.append(plain())
    end_txn(log, False, pid=9)
    log.append(data(2, pid=9, txn=True))
    log.flush()
    leo, lso = log.log_end_offset, log.last_stable_offset
    aborted = log.aborted_transactions(0, leo)
    assert aborted
    snaps = list_snapshot_offsets(str(path))
    assert 1 <= len(snaps) <= 2
    # crash: no close; also lose the .txnindex file (rebuilt by the replay)
    for seg in log.segments:
        seg._close_fd()
    os.unlink(log.active_segment.txn_index.path)
    log2 = open_log(path, c, had_clean_shutdown=False, recovery_point=0)
    assert log2.log_end_offset == leo and log2.last_stable_offset == lso
    assert log2.aborted_transactions(0, leo) == aborted
    # the whole 5-batch window survives: the batches after the latest snapshot are replayed
    # (a snapshot keeps only each producer's last batch, as Kafka's does)
    for i in range(n - 5, n):
        assert log2.append(data(2 * i, size=20)).base_offset == 2 * i
    assert code_of(lambda: log2.append(data(2 * (n - 6), size=20))) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log2.log_end_offset == leo
    log2.close()


def test_snapshot_beyond_truncated_tail_is_ignored(tmp_path):
    path = tmp_path / "t-0"
    log = open_log(path)
    log.append(data(0))
    log.append(data(2))
    log.append(data(4))
    size_after_two = log.active_segment.size * 2 // 3
    log.close()                                     # snapshot at 6
    assert list_snapshot_offsets(str(path)) == [6]
    with open(os.path.join(str(path), "00000000000000000000.log"), "r+b") as f:
        f.truncate(size_after_two + 5)              # torn third batch
    log2 = open_log(path, had_clean_shutdown=False)
    assert log2.log_end_offset == 4
    assert list_snapshot_offsets(str(path)) == []   # the snapshot at 6 described lost data
    assert log2.producer_state.last_entry(PID).last_sequence == 3
    assert log2.append(data(4)).base_offset == 4    # not a "duplicate" of the lost batch
    log2.close()


def test_truncate_to_rebuilds_state(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append(data(0))
    log.append(data(0, pid=9, txn=True))
    assert log.last_stable_offset == 2
    log.truncate_to(2)
    assert not log.has_ongoing_transaction(9) and log.last_stable_offset == 2
    assert log.append(data(2)).base_offset == 2
    log.close()


def test_roll_writes_snapshots_keeping_two(tmp_path):
    path = tmp_path / "t-0"
    log = open_log(path, cfg(segment_bytes=1000))
    for i in range(20):
        log.append(data(2 * i, size=300))
    bases = [s.base_offset for s in log.segments]
    assert len(bases) > 3
    assert list_snapshot_offsets(str(path)) == bases[-2:]
    log.close()
    assert list_snapshot_offsets(str(path)) == [bases[-1], log.log_end_offset]


def test_corrupt_latest_snapshot_falls_back(tmp_path):
    path = tmp_path / "t-0"
    c = cfg(segment_bytes=1000)
    log = open_log(path, c)
    for i in range(10):
        log.append(data(2 * i, size=300))
    log.close()
    latest = list_snapshot_offsets(str(path))[-1]
    with open(os.path.join(str(path), f"{latest:020d}.snapshot"), "r+b") as f:
        f.seek(8)
        f.write(b"\xff\xff")
    log2 = open_log(path, c)
    assert log2.producer_state.last_entry(PID).last_sequence == 19
    assert log2.append(data(18, size=300)).base_offset == 18
    log2.close()


def test_marker_with_negative_coordinator_epoch_is_fenced_like_any(log):
    """Kafka's checkCoordinatorEpoch has no admin exception: -1 (KIP-664 tools, kafka-python's
    default) is accepted while the partition has seen no coordinator epoch, and becomes it;
    after a coordinator's marker it is TRANSACTION_COORDINATOR_FENCED."""
    log.append(data(0, txn=True))
    end_txn(log, False, coordinator_epoch=-1)
    assert log.producer_state.last_entry(PID).coordinator_epoch == -1
    log.append(data(2, n=1, txn=True))
    end_txn(log, True, coordinator_epoch=3)
    log.append(data(3, n=1, txn=True))
    end = log.log_end_offset
    assert code_of(lambda: end_txn(log, False, coordinator_epoch=-1)) == ErrorCode.TRANSACTION_COORDINATOR_FENCED
    assert log.log_end_offset == end and log.has_ongoing_transaction(PID)
    end_txn(log, False, coordinator_epoch=3)
    e = log.producer_state.last_entry(PID)
    assert (e.current_txn_first_offset, e.coordinator_epoch) == (-1, 3)
    assert log.aborted_transactions(0, log.log_end_offset) == [(PID, 0), (PID, 5)]


def test_marker_with_higher_producer_epoch_bumps_it_with_or_without_transaction(log):
    log.append(data(0, txn=True))
    end_txn(log, False, epoch=2)                          # open transaction, epoch 0 -> 2
    end_txn(log, True, pid=55, epoch=7)                   # a producer never seen here
    end_txn(log, False, epoch=2)                          # nothing open: written, aborts nothing
    assert [(e.producer_id, e.producer_epoch, e.current_txn_first_offset, e.last_sequence)
            for e in log.active_producers()] == [(PID, 2, -1, -1), (55, 7, -1, -1)]
    assert log.aborted_transactions(0, log.log_end_offset) == [(PID, 0)]
    assert code_of(lambda: log.append(data(2, epoch=0, txn=True))) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert log.log_end_offset == 5


@pytest.mark.parametrize("pid,epoch,commit,coordinator_epoch,base,leader_epoch", [
    (PID, 0, True, 0, 0, -1), (2**62, 32767, False, 2**31 - 1, 10**12, 7), (0, 1, True, -1, 5, 0)])
def test_markers_built_and_read_in_place_match_the_generic_codec(pid, epoch, commit, coordinator_epoch, base,
                                                                 leader_epoch):
    """build_control_batch writes its record directly and parse_marker reads a marker in place:
    the same bytes as build_batch, the same answer as decoding the batch."""
    from minikafka.storage.producer_state import parse_marker
    key = struct.pack(">hh", 0, rec.ControlRecordType.COMMIT if commit else rec.ControlRecordType.ABORT)
    generic = rec.build_batch([Record(base, TS, key, struct.pack(">hi", 0, coordinator_epoch), ())], base_offset=base,
                              producer_id=pid, producer_epoch=epoch, is_transactional=True, is_control=True,
                              partition_leader_epoch=leader_epoch)
    built = rec.build_control_batch(pid, epoch, commit, coordinator_epoch, TS, base, leader_epoch)
    assert built == generic
    assert parse_marker(b"xx" + built, 2) == (commit, coordinator_epoch, TS)
    stamped = bytearray(built)
    rec.set_log_append_time(stamped, 0, TS + 99)  # LogAppendTime: the batch's max timestamp
    assert parse_marker(stamped) == (commit, coordinator_epoch, TS + 99)
    # any other shape goes through the generic decode: a header on the record, a negative version
    with_header = rec.build_batch([Record(base, TS, key, struct.pack(">hi", 0, coordinator_epoch), (("h", b"v"),))],
                                  base_offset=base, producer_id=pid, producer_epoch=epoch, is_transactional=True,
                                  is_control=True)
    assert parse_marker(with_header) == (commit, coordinator_epoch, TS)
    bad = bytearray(built)
    struct.pack_into(">h", bad, rec.HEADER_SIZE + 10, -1)
    with pytest.raises(KafkaError) as e:
        parse_marker(bad)
    assert e.value.code == ErrorCode.CORRUPT_MESSAGE
