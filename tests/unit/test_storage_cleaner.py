"""storage/cleaner.py: log compaction with Kafka's LogCleaner semantics."""
from __future__ import annotations

import os

import pytest

from minikafka.protocol import records as rec
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.protocol.records import Record
from minikafka.storage.cleaner import (CLEANER_OFFSET_CHECKPOINT, LogCleaner, LogCleaningAborted, OffsetMap,
                             complete_interrupted_swaps)
from minikafka.storage.config import LogConfig
from minikafka.storage.log import UnifiedLog
from minikafka.storage.producer_state import list_snapshot_offsets, snapshot_path

TS = 1_700_000_000_000
DAY = 86_400_000
PID = 4000


def cfg(**overrides) -> LogConfig:
    base = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01", "segment.bytes": "1000"}
    base.update({k.replace("_", "."): str(v) for k, v in overrides.items()})
    return LogConfig().with_overrides(base)


class FakeManager:
    """The slice of LogManager the cleaner uses."""

    def __init__(self, root, *logs):
        self.log_dirs = [str(root)]
        self._logs = list(logs)

    def logs(self):
        return list(self._logs)

    def log_dir_of(self, topic, partition):
        return self.log_dirs[0]

    def future_log(self, topic, partition):
        return None  # no partition is moving to another log dir


def open_log(root, config=None, name="t-0") -> UnifiedLog:
    topic, _, part = name.rpartition("-")
    return UnifiedLog(str(root / name), topic, int(part), config or cfg())


def kv(key, value, ts=TS, **kw) -> bytes:
    return rec.build_batch([Record(None, ts, key, value, ())], **kw)


def many(pairs, ts=TS, **kw) -> bytes:
    return rec.build_batch([Record(None, ts + i, k, v, ()) for i, (k, v) in enumerate(pairs)], **kw)


def marker(commit, pid=PID, epoch=0) -> bytes:
    return rec.build_control_batch(pid, epoch, commit, 0, TS)


def batches(lg: UnifiedLog, start=None):
    """[(header, records)] from the log start (or `start`) to the LEO, CRCs verified."""
    out, off = [], lg.log_start_offset if start is None else start
    while True:
        r = lg.read(off, 1 << 20, max_offset=lg.log_end_offset)
        if not r.records:
            return out
        for pos, h in rec.iter_batch_headers(r.records):
            out.append(rec.decode_batch(r.records, pos, verify_crc=True))
        off = r.next_offset


def records(lg, start=None):
    return [(r.offset, r.key, r.value) for h, rs in batches(lg, start) if not h.is_control for r in rs]


def latest_per_key(pairs_with_offsets):
    out = {}
    for off, k, v in pairs_with_offsets:
        out[k] = (off, v)
    return out


def roll(lg):
    lg.roll()


def clean(lg, root, now=TS + 1000, cleaner=None):
    cleaner = cleaner or LogCleaner(FakeManager(root, lg))
    return cleaner.clean_one(now, lg)


# ---------------------------------------------------------------- basics
def test_offset_map():
    m = OffsetMap(2)
    assert m.get(b"a") == -1 and m.latest_offset == -1
    m.put(b"a", 3)
    m.put(b"a", 5)
    assert m.get(b"a") == 5 and len(m) == 1 and not m.full
    m.put(b"b", 6)
    assert m.full and m.latest_offset == 6
    m.update_latest_offset(9)
    assert m.latest_offset == 9


def test_latest_value_per_key_kept_offsets_preserved(tmp_path):
    lg = open_log(tmp_path)
    written = []
    for i in range(120):
        r = lg.append(kv(b"k%d" % (i % 7), b"v%d" % i, ts=TS + i))
        written.append((r.base_offset, b"k%d" % (i % 7), b"v%d" % i))
    roll(lg)
    leo, size_before, nsegs = lg.log_end_offset, lg.size, lg.num_segments()
    stats = clean(lg, tmp_path)
    assert stats is not None and stats.bytes_written < stats.bytes_read
    assert lg.log_end_offset == leo and lg.high_watermark == leo
    assert lg.size < size_before / 5
    got = records(lg)
    # exactly the latest record of each key, at its original offset
    assert sorted(got) == sorted((off, k, v) for k, (off, v) in latest_per_key(written).items())
    assert all(lg.read(o, 1 << 20).records for o, _, _ in got)
    # reading from any offset (including removed ones) returns the next surviving batch
    r = lg.read(1, 1 << 20)
    first = next(rec.iter_batch_headers(r.records))[1]
    assert first.base_offset >= 1
    # appends continue at the same offsets
    assert lg.append(kv(b"k0", b"new")).base_offset == leo
    # the cleaned log reloads (indexes, producer state) with the same content
    lg.close()
    lg2 = open_log(tmp_path)
    assert records(lg2)[:-1] == got and lg2.log_end_offset == leo + 1
    assert lg2.num_segments() <= nsegs
    lg2.close()


def test_second_round_merges_small_segments_and_checkpoints_dirty_offset(tmp_path):
    lg = open_log(tmp_path)
    for i in range(200):
        lg.append(kv(b"k%d" % (i % 3), b"x" * 40, ts=TS + i))
    roll(lg)
    cleaner = LogCleaner(FakeManager(tmp_path, lg))
    clean(lg, tmp_path, cleaner=cleaner)
    first_dirty = lg.log_end_offset
    assert cleaner.checkpoints[("t", 0)] == first_dirty
    text = (tmp_path / CLEANER_OFFSET_CHECKPOINT).read_text().split("\n")
    assert text[:3] == ["0", "1", f"t 0 {first_dirty}"]
    # nothing dirty: not cleanable
    assert cleaner.plan(TS + 2000, lg) is None
    assert cleaner.grab_filthiest_log(TS + 2000) is None
    segs_after_first = lg.num_segments()
    lg.append(kv(b"k0", b"y"))
    roll(lg)
    clean(lg, tmp_path, cleaner=cleaner)
    assert lg.num_segments() < segs_after_first
    assert sorted(k for _, k, _ in records(lg)) == [b"k0", b"k1", b"k2"]
    # a new cleaner reads the checkpoint back
    assert LogCleaner(FakeManager(tmp_path, lg)).checkpoints[("t", 0)] == lg.log_end_offset
    lg.close()


def test_active_segment_never_cleaned(tmp_path):
    lg = open_log(tmp_path, cfg(segment_bytes=100000))
    for i in range(50):
        lg.append(kv(b"k", b"v%d" % i))
    assert clean(lg, tmp_path) is None
    assert len(records(lg)) == 50
    lg.close()


def test_tombstones_kept_with_delete_horizon_then_removed(tmp_path):
    lg = open_log(tmp_path, cfg(delete_retention_ms=DAY))
    lg.append(kv(b"gone", b"v1"))
    lg.append(kv(b"keep", b"v2"))
    lg.append(kv(b"gone", None))                 # tombstone at offset 2
    for i in range(20):
        lg.append(kv(b"other", b"o%d" % i))
    roll(lg)
    now = TS + 5000
    clean(lg, tmp_path, now=now)
    got = records(lg)
    assert (2, b"gone", None) in got and not any(k == b"gone" and v == b"v1" for _, k, v in got)
    h = next(h for h, rs in batches(lg) if any(r.offset == 2 for r in rs))
    assert h.has_delete_horizon and h.base_timestamp == now + DAY
    # the record keeps its own timestamp (deltas are relative to the horizon)
    assert [r.timestamp for r in next(rs for hh, rs in batches(lg) if hh is not None and hh.base_offset == 2)] == [TS]
    # before the horizon a later cleaning keeps it
    lg.append(kv(b"other", b"again"))
    roll(lg)
    clean(lg, tmp_path, now=now + DAY - 1)
    assert (2, b"gone", None) in records(lg)
    # after the horizon it goes
    lg.append(kv(b"other", b"again2"))
    roll(lg)
    clean(lg, tmp_path, now=now + DAY)
    got = records(lg)
    assert not any(k == b"gone" for _, k, _ in got)
    assert any(k == b"keep" for _, k, _ in got)
    lg.close()


def test_records_without_key_are_dropped_and_refused_on_produce(tmp_path):
    lg = open_log(tmp_path)
    with pytest.raises(KafkaError) as ei:
        lg.append(many([(b"a", b"1"), (None, b"2")]))
    assert ei.value.code == ErrorCode.INVALID_RECORD and "without key" in str(ei.value)
    assert lg.log_end_offset == 0
    # an internal (coordinator) append is not checked; the cleaner drops such records
    lg.append(many([(b"a", b"1"), (None, b"2")]), origin="coordinator")
    for i in range(10):
        lg.append(kv(b"b", b"%d" % i))
    roll(lg)
    stats = clean(lg, tmp_path)
    assert stats.invalid_messages == 1
    assert (0, b"a", b"1") in records(lg) and all(k is not None for _, k, _ in records(lg))
    lg.close()
    # not compacted: null keys are fine
    plain = UnifiedLog(str(tmp_path / "p-0"), "p", 0, LogConfig())
    plain.append(many([(None, b"x")]))
    plain.close()


def test_compressed_batches_keep_codec(tmp_path):
    lg = open_log(tmp_path, cfg(segment_bytes=4000))
    for codec in (1, 2, 3, 4):
        for i in range(6):
            lg.append(many([(b"c%d-%d" % (codec, j), b"v%d" % i * 20) for j in range(5)], compression=codec))
    lg.append(kv(b"c1-0", b"final"))
    roll(lg)
    before = {}
    for _, k, v in records(lg):
        before[k] = v
    clean(lg, tmp_path)
    hs = batches(lg)
    codecs = {h.compression for h, _ in hs}
    assert {1, 2, 3, 4} <= codecs
    after = {k: v for _, k, v in records(lg)}
    assert after == before
    lg.close()


def test_fetch_offset_by_timestamp_and_max_timestamp_after_cleaning(tmp_path):
    lg = open_log(tmp_path, cfg(index_interval_bytes=100))
    for i in range(60):
        lg.append(kv(b"k%d" % (i % 4), b"v" * 30, ts=TS + 10 * i))
    roll(lg)
    clean(lg, tmp_path)
    kept = records(lg)
    ts_of = {o: TS + 10 * o for o, _, _ in kept}
    for target in (TS - 1, TS, TS + 5, TS + 300, TS + 561, TS + 590):
        want = min(((o, t) for o, t in ts_of.items() if t >= target), default=None)
        assert lg.fetch_offset_by_timestamp(target) == want, target
    assert lg.fetch_offset_by_timestamp(TS + 10_000) is None
    assert lg.max_timestamp_and_offset() == (TS + 590, 59)
    lg.close()
    lg2 = open_log(tmp_path)
    assert lg2.fetch_offset_by_timestamp(TS + 300) == min((o, t) for o, t in ts_of.items() if t >= TS + 300)
    lg2.close()


# ---------------------------------------------------------------- transactions / producers
def txn_data(seq, pairs, pid=PID, epoch=0):
    return many(pairs, producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=True)


def test_aborted_records_dropped_markers_kept_and_txn_index_rebuilt(tmp_path):
    lg = open_log(tmp_path)
    a, b = PID, PID + 1
    lg.append(txn_data(0, [(b"x", b"aborted-1"), (b"y", b"aborted-2")], pid=a))     # 0-1
    lg.append(txn_data(0, [(b"x", b"committed")], pid=b))                          # 2
    lg.append(marker(False, pid=a), origin="coordinator")                          # 3 ABORT a
    lg.append(marker(True, pid=b), origin="coordinator")                           # 4 COMMIT b
    lg.append(txn_data(2, [(b"z", b"aborted-3")], pid=a))                          # 5
    for i in range(15):
        lg.append(kv(b"pad", b"p%d" % i))
    lg.append(marker(False, pid=a), origin="coordinator")                          # ABORT a (2nd)
    m2 = lg.log_end_offset - 1
    lg.append(kv(b"pad", b"last"))
    roll(lg)
    assert lg.aborted_transactions(0, lg.log_end_offset) == [(a, 0), (a, 5)]
    clean(lg, tmp_path)
    got = records(lg)
    assert (2, b"x", b"committed") in got
    assert not any(v.startswith(b"aborted") for _, _, v in got if v)
    # markers of transactions whose data is still there (or just removed) are kept ...
    markers = [(h.base_offset, h.producer_id) for h, _ in batches(lg) if h.is_control]
    assert (4, b) in markers
    assert (3, a) in markers and (m2, a) in markers
    # ... and the aborted-txn index of the cleaned segments still names them for read_committed
    assert lg.aborted_transactions(0, lg.log_end_offset) == [(a, 0), (a, 5)]
    lg.close()
    lg2 = open_log(tmp_path)
    assert lg2.aborted_transactions(0, lg2.log_end_offset) == [(a, 0), (a, 5)]
    lg2.close()


def test_markers_go_after_their_data_and_delete_horizon(tmp_path):
    lg = open_log(tmp_path, cfg(delete_retention_ms=1000))
    lg.append(txn_data(0, [(b"k", b"t1")]))                  # 0
    lg.append(marker(True), origin="coordinator")            # 1 COMMIT
    for i in range(25):
        lg.append(kv(b"k", b"plain%d" % i))                  # supersedes the transactional record
    roll(lg)
    now = TS + 10_000

    def control():
        return [h for h, _ in batches(lg) if h.is_control]

    clean(lg, tmp_path, now=now)
    # the data batch lost its record but stays as an empty header: the producer's last batch
    hs = [h for h, _ in batches(lg)]
    assert any(h.base_offset == 0 and h.records_count == 0 for h in hs)
    assert [h.records_count for h in control()] == [1]
    # while that (empty) batch of the transaction is there, the COMMIT marker stays as it is
    lg.append(kv(b"k", b"more"))
    roll(lg)
    clean(lg, tmp_path, now=now)
    assert [(h.records_count, h.has_delete_horizon) for h in control()] == [(1, False)]
    # the producer moves on: its old batch is no longer its last and goes
    lg.append(many([(b"k", b"idem")], producer_id=PID, producer_epoch=0, base_sequence=1))
    lg.append(kv(b"k", b"more2"))
    roll(lg)
    clean(lg, tmp_path, now=now)
    assert not [h for h, _ in batches(lg) if h.base_offset == 0]
    # no data of that transaction left: the marker gets a delete horizon
    lg.append(kv(b"k", b"more3"))
    roll(lg)
    clean(lg, tmp_path, now=now + 1)
    m = control()
    assert len(m) == 1 and m[0].has_delete_horizon and m[0].base_timestamp == now + 1 + 1000
    assert m[0].records_count == 1
    # after the horizon the marker goes
    lg.append(kv(b"k", b"more4"))
    roll(lg)
    clean(lg, tmp_path, now=now + 1001)
    assert control() == []
    lg.close()


def test_producer_last_batch_kept_so_retry_is_still_a_duplicate(tmp_path):
    lg = open_log(tmp_path)
    idem = lambda seq, v: many([(b"k", v)], producer_id=PID, producer_epoch=0, base_sequence=seq)  # noqa: E731
    for seq in range(5):
        lg.append(idem(seq, b"p%d" % seq))
    last = lg.append(idem(5, b"p5"))                          # the producer's last batch
    for i in range(20):
        lg.append(kv(b"k", b"other%d" % i))                   # supersedes every producer record
    roll(lg)
    clean(lg, tmp_path)
    hs = [h for h, _ in batches(lg) if h.producer_id == PID]
    assert [(h.base_offset, h.records_count, h.base_sequence) for h in hs] == [(last.base_offset, 0, 5)]
    # in memory: a retry of the last batch is a duplicate, the next sequence is accepted
    dup = lg.append(idem(5, b"p5"))
    assert (dup.base_offset, dup.last_offset) == (last.base_offset, last.last_offset)
    # reloaded from the log alone (no snapshot): the empty batch carries the sequence
    lg.close()
    for off in list_snapshot_offsets(str(tmp_path / "t-0")):
        os.unlink(snapshot_path(str(tmp_path / "t-0"), off))
    lg2 = open_log(tmp_path)
    e = lg2.producer_state.last_entry(PID)
    assert e is not None and e.last_sequence == 5
    dup = lg2.append(idem(5, b"p5"))
    assert dup.base_offset == last.base_offset
    with pytest.raises(KafkaError) as ei:
        lg2.append(idem(7, b"gap"))
    assert ei.value.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert lg2.append(idem(6, b"p6")).base_offset == lg2.log_end_offset - 1
    lg2.close()


def test_never_cleans_past_the_last_stable_offset(tmp_path):
    lg = open_log(tmp_path)
    for i in range(40):
        lg.append(kv(b"k", b"before%d" % i))
    open_at = lg.append(txn_data(0, [(b"k", b"open")])).base_offset
    for i in range(30):
        lg.append(kv(b"k", b"after%d" % i))
    roll(lg)
    assert lg.last_stable_offset == open_at
    cleaner = LogCleaner(FakeManager(tmp_path, lg))
    plan = cleaner.plan(TS + 1000, lg)
    assert plan.first_uncleanable_offset <= open_at
    cleaner.commit(plan, cleaner.build(plan))
    got = records(lg)
    # everything from the segment holding the open transaction on is untouched
    assert all((o, b"k", b"after%d" % i) in got for i, o in enumerate(range(open_at + 1, open_at + 31)))
    assert (open_at, b"k", b"open") in got
    # once the transaction commits, the rest is cleanable: only the latest value is left
    lg.append(marker(True), origin="coordinator")
    last = lg.append(kv(b"k", b"x")).base_offset
    roll(lg)
    clean(lg, tmp_path, cleaner=cleaner)
    assert records(lg) == [(last, b"k", b"x")]
    lg.close()


def test_min_and_max_compaction_lag(tmp_path):
    lg = open_log(tmp_path, cfg(min_compaction_lag_ms=60_000, min_cleanable_dirty_ratio=0.99))
    for i in range(40):
        lg.append(kv(b"k", b"v%d" % i, ts=TS + i))
    roll(lg)
    cleaner = LogCleaner(FakeManager(tmp_path, lg))
    # too young for min.compaction.lag.ms: nothing is cleanable
    assert cleaner.plan(TS + 1000, lg) is None
    # old enough: the dirty ratio (1.0) is above 0.99
    assert cleaner.grab_filthiest_log(TS + 61_000) is not None
    lg.close()
    lg = open_log(tmp_path, cfg(min_cleanable_dirty_ratio=1.0, max_compaction_lag_ms=50_000), name="u-0")
    for i in range(40):
        lg.append(kv(b"k", b"v%d" % i, ts=TS + i))
    roll(lg)
    cleaner = LogCleaner(FakeManager(tmp_path, lg))
    assert cleaner.grab_filthiest_log(TS + 1000) is None            # ratio never above 1.0
    assert cleaner.grab_filthiest_log(TS + 60_000) is not None      # max.compaction.lag.ms exceeded
    assert cleaner.clean_one(TS + 60_000) is not None
    assert len(records(lg)) <= 2
    lg.close()


def test_picks_the_filthiest_compacted_log_only(tmp_path):
    a = open_log(tmp_path, name="a-0")
    b = open_log(tmp_path, name="b-0")
    d = UnifiedLog(str(tmp_path / "d-0"), "d", 0, LogConfig().with_overrides({"segment.bytes": "1000"}))
    for i in range(60):
        a.append(kv(b"k%d" % (i % 30), b"v"))                         # half duplicates
        b.append(kv(b"k", b"v"))                                      # all duplicates
        d.append(kv(b"k", b"v"))                                      # not compacted
    for lg in (a, b, d):
        roll(lg)
    cleaner = LogCleaner(FakeManager(tmp_path, a, b, d))
    plan = cleaner.grab_filthiest_log(TS)
    assert plan.log is a or plan.log is b     # both fully dirty: ratio 1.0 each
    assert cleaner.clean_one(TS) is not None
    assert cleaner.clean_one(TS) is not None
    assert cleaner.clean_one(TS) is None      # d is never compacted
    assert len(records(d)) == 60
    for lg in (a, b, d):
        lg.close()


# ---------------------------------------------------------------- concurrency / crash safety
def test_appends_between_build_and_commit_are_kept(tmp_path):
    lg = open_log(tmp_path)
    for i in range(50):
        lg.append(kv(b"k%d" % (i % 2), b"v%d" % i))
    roll(lg)
    cleaner = LogCleaner(FakeManager(tmp_path, lg))
    plan = cleaner.plan(TS, lg)
    result = cleaner.build(plan)
    more = [lg.append(kv(b"k0", b"late%d" % i)).base_offset for i in range(30)]   # rolls segments too
    cleaner.commit(plan, result)
    got = records(lg)
    assert [o for o, _, v in got if v.startswith(b"late")] == more
    lg.close()


def test_commit_aborts_if_segments_were_deleted(tmp_path):
    lg = open_log(tmp_path, cfg(cleanup_policy="compact,delete"))
    for i in range(50):
        lg.append(kv(b"k%d" % (i % 2), b"v%d" % i))
    roll(lg)
    cleaner = LogCleaner(FakeManager(tmp_path, lg))
    plan = cleaner.plan(TS, lg)
    result = cleaner.build(plan)
    lg.delete_records_before(lg.segments[2].base_offset)       # retention-like deletion meanwhile
    with pytest.raises(LogCleaningAborted):
        cleaner.commit(plan, result)
    assert not [n for n in os.listdir(lg.dir) if n.endswith((".cleaned", ".swap"))]
    assert len(records(lg)) == 50 - lg.log_start_offset
    lg.close()


def test_cancelled_build_leaves_nothing(tmp_path):
    lg = open_log(tmp_path)
    for i in range(50):
        lg.append(kv(b"k", b"v%d" % i))
    roll(lg)
    cleaner = LogCleaner(FakeManager(tmp_path, lg))
    plan = cleaner.plan(TS, lg)
    cleaner.abort(plan)
    with pytest.raises(LogCleaningAborted):
        cleaner.build(plan)
    assert not [n for n in os.listdir(lg.dir) if n.endswith((".cleaned", ".swap"))]
    lg.close()


def _prepare_crash(tmp_path, stage):
    """Clean a log but stop the swap at `stage`; return (expected records after reopen, dir)."""
    lg = open_log(tmp_path)
    for i in range(100):
        lg.append(kv(b"k%d" % (i % 5), b"v%d" % i * 5, ts=TS + i))
    roll(lg)
    lg.config = cfg(segment_bytes=5000)                  # cleaned segments merge several old ones
    before = records(lg)
    cleaner = LogCleaner(FakeManager(tmp_path, lg))
    plan = cleaner.plan(TS, lg)
    result = cleaner.build(plan)
    c = result.cleaned[0]
    assert len(c.old) >= 2
    d = lg.dir
    p = os.path.join(d, "%020d" % c.base_offset)
    lg.close()
    sfx = (".index", ".timeindex", ".txnindex")
    if stage == "cleaned":                               # before the commit point
        return before, d
    for s in sfx:
        os.replace(p + s + ".cleaned", p + s + ".swap")
    if stage == "index-swaps":                           # still before the commit point
        return before, d
    os.replace(p + ".log.cleaned", p + ".log.swap")      # commit point
    if stage == "committed":
        return None, d
    for info in c.old[1:2]:                              # some replaced segments deleted
        info.segment.delete()
    os.replace(p + ".index.swap", p + ".index")          # some swap files renamed
    return None, d


@pytest.mark.parametrize("stage", ["cleaned", "index-swaps", "committed", "half-renamed"])
def test_crash_during_swap_recovers(tmp_path, stage):
    before, d = _prepare_crash(tmp_path, stage)
    lg = open_log(tmp_path)
    assert not [n for n in os.listdir(d) if n.endswith((".cleaned", ".swap"))]
    got = records(lg)
    if before is not None:
        assert got == before                             # the swap never happened
    else:
        assert len(got) < 100                            # the cleaned segment is in place
        keys = {}
        for o, k, v in got:
            keys[k] = v
        assert keys == {b"k%d" % j: b"v%d" % (95 + j) * 5 for j in range(5)}
        offs = [o for o, _, _ in got]
        assert offs == sorted(offs) and len(set(offs)) == len(offs)
    assert lg.log_end_offset == 100
    lg.close()


def test_complete_interrupted_swaps_ignores_clean_dirs(tmp_path):
    assert complete_interrupted_swaps(str(tmp_path)) == []
    assert complete_interrupted_swaps(str(tmp_path / "missing")) == []


def test_group_segments_by_size():
    from minikafka.storage.cleaner import Cleaner, SegmentInfo
    segs = [SegmentInfo(None, b, "", size, nb, 8, 12, 0.0, ())
            for b, size, nb in [(0, 400, 10), (10, 400, 20), (20, 400, 30), (30, 0, 40), (40, 900, 50)]]
    groups = Cleaner.group_segments_by_size(segs, 1000, 1000, 50)
    assert [[s.base_offset for s in g] for g in groups] == [[0, 10], [20, 30], [40]]
    # offsets that would overflow a 32-bit relative offset start a new group
    big = [SegmentInfo(None, 0, "", 10, 2**31, 8, 12, 0.0, ()),
           SegmentInfo(None, 2**31, "", 10, 2**31 + 5, 8, 12, 0.0, ())]
    assert len(Cleaner.group_segments_by_size(big, 1000, 1000, 2**31 + 5)) == 2


def test_unexpected_error_marks_log_uncleanable_abort_does_not(tmp_path):
    lg = open_log(tmp_path)
    for i in range(50):
        lg.append(kv(b"k", b"v%d" % i))
    roll(lg)
    cleaner = LogCleaner(FakeManager(tmp_path, lg))
    plan = cleaner.grab_filthiest_log(TS)
    cleaner.handle_error(plan, LogCleaningAborted("shutdown"))
    assert cleaner.grab_filthiest_log(TS) is not None
    cleaner.handle_error(plan, RuntimeError("bug"))
    assert cleaner.grab_filthiest_log(TS) is None
    assert len(records(lg)) == 50
    lg.close()


def test_recreated_topic_does_not_inherit_the_first_dirty_offset(tmp_path):
    import uuid
    lg = open_log(tmp_path)
    for i in range(50):
        lg.append(kv(b"k", b"v%d" % i))
    roll(lg)
    cleaner = LogCleaner(FakeManager(tmp_path, lg))
    lg.topic_id = uuid.uuid4()
    assert cleaner.clean_one(TS) is not None
    assert cleaner.checkpoints[("t", 0)] == 50
    lg.topic_id = uuid.uuid4()                     # same name, new topic
    assert cleaner.cleanable_offsets(lg, TS)[0] == 0
    lg.close()
