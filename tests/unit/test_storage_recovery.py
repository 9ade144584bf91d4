"""Recovery: reload after close / crash, garbage and torn tails, index rebuild."""
from __future__ import annotations

import logging
import os
import struct

import pytest

from minikafka.protocol import records as rec
from minikafka.protocol.records import Record
from minikafka.storage.config import LogConfig
from minikafka.storage.log import UnifiedLog

TS = 1_700_000_000_000


def batch(i: int, n: int = 2, size: int = 300) -> bytes:
    return rec.build_batch([Record(None, TS + i * 10 + j, b"k%d" % i, bytes([i % 256]) * size, ()) for j in range(n)])


def cfg(**overrides) -> LogConfig:
    return LogConfig().with_overrides({k.replace("_", "."): str(v) for k, v in overrides.items()})


def open_log(path, config=None, **kw) -> UnifiedLog:
    return UnifiedLog(str(path), "t", 0, config or cfg(), **kw)


def fill(log: UnifiedLog, n: int):
    return [log.append(batch(i)) for i in range(n)]


def all_batches(log: UnifiedLog):
    out, off = [], log.log_start_offset
    while True:
        r = log.read(off, 1 << 20)
        if not r.records:
            return out
        out += [h for _, h in rec.iter_batch_headers(r.records)]
        for p, _ in rec.iter_batch_headers(r.records):
            rec.validate_batch(r.records, p)
        off = r.next_offset


def test_reload_after_close_keeps_everything(tmp_path):
    c = cfg(segment_bytes=3000, index_interval_bytes=500)
    log = open_log(tmp_path / "t-0", c)
    fill(log, 40)
    before = [h for h in all_batches(log)]
    ts_lookup = log.fetch_offset_by_timestamp(TS + 201)
    log.close()
    log2 = open_log(tmp_path / "t-0", c)
    assert log2.log_end_offset == 80 and log2.num_segments() == log.num_segments()
    assert all_batches(log2) == before
    assert log2.fetch_offset_by_timestamp(TS + 201) == ts_lookup == (41, TS + 201)
    assert log2.max_timestamp_and_offset() == (TS + 391, 79)
    assert log2.append(batch(99)).base_offset == 80


def test_reload_after_crash_without_close(tmp_path):
    c = cfg(segment_bytes=3000, index_interval_bytes=500)
    log = open_log(tmp_path / "t-0", c)
    fill(log, 25)
    # simulate kill -9: no close, no flush; just drop the object (fds leak like a dead process's)
    log2 = open_log(tmp_path / "t-0", c, had_clean_shutdown=False, recovery_point=0)
    assert log2.log_end_offset == 50
    assert [h.base_offset for h in all_batches(log2)] == list(range(0, 50, 2))


def test_garbage_tail_is_truncated_with_warning(tmp_path, caplog):
    log = open_log(tmp_path / "t-0")
    fill(log, 5)
    leo, size = log.log_end_offset, log.active_segment.size
    path = log.active_segment.log_path
    log.close()
    with open(path, "ab") as f:
        f.write(os.urandom(100))
    with caplog.at_level(logging.WARNING, logger="minikafka.storage"):
        log2 = open_log(tmp_path / "t-0")
    assert log2.log_end_offset == leo
    assert os.path.getsize(path) == size
    msgs = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(path in m and str(size) in m and "100 bytes" in m for m in msgs), msgs
    assert log2.append(batch(9)).base_offset == leo
    assert [h.base_offset for h in all_batches(log2)][-1] == leo


@pytest.mark.parametrize("clean", [True, False])
def test_torn_last_batch_is_truncated(tmp_path, caplog, clean):
    log = open_log(tmp_path / "t-0")
    fill(log, 5)
    path = log.active_segment.log_path
    last_len = len(batch(4))
    full = log.active_segment.size
    log.close()
    with open(path, "r+b") as f:
        f.truncate(full - last_len // 2)
    with caplog.at_level(logging.WARNING, logger="minikafka.storage"):
        log2 = open_log(tmp_path / "t-0", had_clean_shutdown=clean)
    assert log2.log_end_offset == 8  # batches 0..3 (2 records each) survive
    assert os.path.getsize(path) == full - last_len
    assert any(path in r.getMessage() for r in caplog.records)


def test_corrupted_crc_in_middle_of_active_segment(tmp_path):
    log = open_log(tmp_path / "t-0")
    fill(log, 6)
    path = log.active_segment.log_path
    log.close()
    pos = 3 * len(batch(0))  # start of the 4th batch
    with open(path, "r+b") as f:
        f.seek(pos + 70)
        b = f.read(1)
        f.seek(pos + 70)
        f.write(bytes([b[0] ^ 0xFF]))
    log2 = open_log(tmp_path / "t-0", had_clean_shutdown=False)
    assert log2.log_end_offset == 6 and os.path.getsize(path) == pos


def test_deleted_index_files_are_rebuilt(tmp_path, caplog):
    c = cfg(segment_bytes=3000, index_interval_bytes=400)
    log = open_log(tmp_path / "t-0", c)
    fill(log, 40)
    expect = {off: log.read(off, 1).records for off in (0, 7, 33, 54, 79)}
    ts = log.fetch_offset_by_timestamp(TS + 305)
    log.close()  # (the files then hold every entry: they are written in batches)
    old_index = {s.base_offset: open(s.offset_index.path, "rb").read() for s in log.segments}
    for f in os.listdir(tmp_path / "t-0"):
        if f.endswith((".index", ".timeindex")):
            os.unlink(tmp_path / "t-0" / f)
    with caplog.at_level(logging.WARNING, logger="minikafka.storage"):
        log2 = open_log(tmp_path / "t-0", c)
    assert any("Rebuilding index" in r.getMessage() for r in caplog.records)
    for s in log2.segments:
        assert os.path.exists(s.offset_index.path) and os.path.exists(s.time_index.path)
        assert open(s.offset_index.path, "rb").read() == old_index[s.base_offset]
    assert {off: log2.read(off, 1).records for off in expect} == expect
    assert log2.fetch_offset_by_timestamp(TS + 305) == ts


@pytest.mark.parametrize("damage", ["odd_size", "beyond_log", "non_monotonic"])
def test_corrupt_index_files_are_rebuilt(tmp_path, damage):
    c = cfg(segment_bytes=3000, index_interval_bytes=400)
    log = open_log(tmp_path / "t-0", c)
    fill(log, 40)
    expect = {off: log.read(off, 1).records for off in (0, 9, 31, 60, 79)}
    seg = log.segments[1]
    idx = seg.offset_index.path
    log.close()
    data = bytearray(open(idx, "rb").read())
    assert len(data) >= 16
    if damage == "odd_size":
        data += b"\x01\x02\x03"
    elif damage == "beyond_log":
        data += struct.pack(">ii", 1000, 10_000_000)
    else:
        data[0:8], data[8:16] = data[8:16], data[0:8]
    open(idx, "wb").write(bytes(data))
    log2 = open_log(tmp_path / "t-0", c)
    assert {off: log2.read(off, 1).records for off in expect} == expect
    assert os.path.getsize(idx) % 8 == 0


def test_stale_index_pointing_past_truncated_tail(tmp_path):
    """Index entries that point beyond a log truncated by recovery are dropped."""
    c = cfg(index_interval_bytes=100)
    log = open_log(tmp_path / "t-0", c)
    fill(log, 10)
    path = log.active_segment.log_path
    log.close()
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) - 10)
    log2 = open_log(tmp_path / "t-0", c)
    assert log2.log_end_offset == 18
    _, pos = log2.active_segment.offset_index.last_entry()
    assert pos < log2.active_segment.size
    assert log2.append(batch(50)).base_offset == 18
    assert [h.base_offset for h in all_batches(log2)] == list(range(0, 20, 2))


def test_corruption_in_earlier_segment_drops_later_ones(tmp_path, caplog):
    c = cfg(segment_bytes=3000)
    log = open_log(tmp_path / "t-0", c)
    fill(log, 30)
    assert log.num_segments() >= 3
    first = log.segments[0]
    path, size = first.log_path, first.size
    log.close()
    with open(path, "r+b") as f:
        f.truncate(size - 5)  # torn last batch of the first segment
    log2 = open_log(tmp_path / "t-0", c, had_clean_shutdown=False, recovery_point=0)
    assert log2.num_segments() == 1
    assert log2.log_end_offset == first.base_offset + (size // len(batch(0)) - 1) * 2
    assert log2.append(batch(1)).base_offset == log2.log_end_offset - 2


def test_empty_dir_and_empty_segment_files(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.close()
    log2 = open_log(tmp_path / "t-0")
    assert log2.log_end_offset == 0 and log2.read(0, 100).records == b""
    assert sorted(os.listdir(tmp_path / "t-0")) == ["00000000000000000000.index", "00000000000000000000.log",
                                                      "00000000000000000000.timeindex"]


def test_log_start_offset_restored(tmp_path):
    c = cfg(segment_bytes=3000)
    log = open_log(tmp_path / "t-0", c)
    fill(log, 30)
    log.delete_records_before(33)
    log.close()
    log2 = open_log(tmp_path / "t-0", c, log_start_offset=33)
    assert log2.log_start_offset == 33
    # without the checkpoint, the first segment's base offset is the floor
    log2.close()
    log3 = open_log(tmp_path / "t-0", c)
    assert log3.log_start_offset == log3.segments[0].base_offset <= 33


def test_stray_files_cleaned(tmp_path):
    log = open_log(tmp_path / "t-0")
    fill(log, 2)
    log.close()
    d = tmp_path / "t-0"
    (d / "00000000000000000999.index").write_bytes(b"")
    (d / "00000000000000000000.log.deleted").write_bytes(b"x")
    (d / "foo.tmp").write_bytes(b"x")
    log2 = open_log(d)
    names = os.listdir(d)
    assert "00000000000000000999.index" not in names and "foo.tmp" not in names
    assert not any(n.endswith(".deleted") for n in names)
    assert log2.log_end_offset == 4


# ------------------------------------------------------------------ what a start reads and writes

def test_index_entries_not_written_at_a_crash_are_rebuilt(tmp_path):
    """Index entries are written in batches, always before an fsync: a kill -9 finds the
    files holding the entries of the flushed part only (whole entries), and recovery, which
    rescans what lies past the recovery point, gives the indexes a clean close gives."""
    c = cfg(segment_bytes=6000, index_interval_bytes=100)

    def run(path):
        log = open_log(path, c)
        fill(log, 12)  # segments roll every 8 batches: a roll writes the finished one's entries
        log.flush()
        rp = log.recovery_point
        for i in range(12, 20):
            log.append(batch(i))
        return log, rp

    reference, _ = run(tmp_path / "ref" / "t-0")
    reference.close()
    expect = {s.base_offset: (open(s.offset_index.path, "rb").read(), open(s.time_index.path, "rb").read())
              for s in reference.segments}
    crashed, rp = run(tmp_path / "t-0")
    active = crashed.active_segment
    assert len(crashed.segments) == 3 and active.offset_index.entries > 0
    on_disk = os.path.getsize(active.offset_index.path)
    assert on_disk % 8 == 0 and on_disk < len(expect[active.base_offset][0])  # the crash loses some
    # kill -9: no close, no flush
    log2 = open_log(tmp_path / "t-0", c, had_clean_shutdown=False, recovery_point=rp)
    assert log2.log_end_offset == 40
    assert [h.base_offset for h in all_batches(log2)] == list(range(0, 40, 2))
    for ts in (TS + 5, TS + 101, TS + 155, TS + 191):
        assert log2.fetch_offset_by_timestamp(ts) == reference.fetch_offset_by_timestamp(ts)
    for off in range(40):
        assert log2.read(off, 1).records[:8] == reference.read(off, 1).records[:8]
    log2.close()
    assert {s.base_offset: (open(s.offset_index.path, "rb").read(), open(s.time_index.path, "rb").read())
            for s in log2.segments} == expect


def test_unclean_recovery_scans_from_the_recovery_point(tmp_path, caplog):
    """After a crash, only what lies past the recovery point is validated (Kafka trusts the
    segments below it; here also the part of its segment below it): a flipped byte in a
    flushed batch is not looked at, a torn batch past the recovery point is cut."""
    c = cfg(index_interval_bytes=500)
    log = open_log(tmp_path / "t-0", c)
    fill(log, 20)
    log.flush()
    rp = log.recovery_point
    assert rp == 40
    fill(log, 2)
    kept = log.active_segment.size
    log.append(batch(7))
    path = log.active_segment.log_path
    size = log.active_segment.size
    with open(path, "r+b") as f:
        f.seek(200)          # inside the first batch's records: below the recovery point
        b = f.read(1)
        f.seek(200)
        f.write(bytes([b[0] ^ 0xFF]))
        f.truncate(size - 7)  # the last batch, past the recovery point, torn
    with caplog.at_level(logging.WARNING, logger="minikafka.storage"):
        log2 = open_log(tmp_path / "t-0", c, had_clean_shutdown=False, recovery_point=rp)
    assert log2.log_end_offset == 44 and log2.recovery_point == rp
    assert os.path.getsize(path) == kept
    assert [r.getMessage() for r in caplog.records if "invalid data" in r.getMessage()]
    assert log2.append(batch(30)).base_offset == 44


def test_unclean_recovery_with_a_stale_index_entry_scans_the_whole_segment(tmp_path):
    """An index entry at or below the recovery point that does not point at its batch (a
    file that lost writes) is not trusted: the segment is scanned from position 0."""
    c = cfg(index_interval_bytes=500)
    log = open_log(tmp_path / "t-0", c)
    fill(log, 20)
    log.flush()
    seg = log.active_segment
    entries = [seg.offset_index.entry(i) for i in range(seg.offset_index.entries)]
    log.close()
    off, pos = entries[-1]
    with open(seg.offset_index.path, "r+b") as f:  # the last entry names a later offset
        f.seek((len(entries) - 1) * 8)
        f.write(struct.pack(">ii", off + 1 - seg.base_offset, pos))
    log2 = open_log(tmp_path / "t-0", c, had_clean_shutdown=False, recovery_point=40)
    assert log2.log_end_offset == 40
    again = log2.active_segment
    assert [again.offset_index.entry(i) for i in range(again.offset_index.entries)] == entries


def _files(d):
    return {f: (os.stat(os.path.join(d, f)).st_size, os.stat(os.path.join(d, f)).st_mtime_ns)
            for f in sorted(os.listdir(d))}


@pytest.mark.parametrize("clean", [True, False])
def test_a_start_after_a_stop_writes_nothing_in_the_partition(tmp_path, clean):
    """After a clean stop, or a crash of a broker that wrote nothing since its last flush,
    a load finds everything in order and writes no file of the partition (indexes, epoch
    cache, snapshots): a start costs reads only."""
    c = cfg(segment_bytes=3000, index_interval_bytes=400)
    log = open_log(tmp_path / "t-0", c)
    log.become_leader(0)
    fill(log, 30)
    log.close()
    before = _files(tmp_path / "t-0")
    os.utime(tmp_path / "t-0", ns=(0, 0))
    log2 = open_log(tmp_path / "t-0", c, had_clean_shutdown=clean, recovery_point=60)
    log2.become_leader(2, write=False)
    assert _files(tmp_path / "t-0") == before
    assert log2.log_end_offset == 60 and log2.leader_epoch == 2
    log2.close()
    assert _files(tmp_path / "t-0") == before  # nothing appended: nothing to write at close either


def test_indexes_of_trusted_segments_are_read_on_first_use(tmp_path):
    c = cfg(segment_bytes=3000, index_interval_bytes=400)
    log = open_log(tmp_path / "t-0", c)
    fill(log, 30)
    expect = {off: log.read(off, 1).records for off in (0, 9, 33, 59)}
    ts = log.fetch_offset_by_timestamp(TS + 105)
    log.close()
    log2 = open_log(tmp_path / "t-0", c)
    inactive = log2.segments[:-1]
    assert len(inactive) >= 3 and not any(s.offset_index.loaded or s.time_index.loaded for s in inactive)
    assert log2.read(9, 1).records == expect[9]
    assert log2.segments[1].offset_index.loaded and not log2.segments[2].offset_index.loaded
    assert {off: log2.read(off, 1).records for off in expect} == expect
    assert log2.fetch_offset_by_timestamp(TS + 105) == ts
    assert log2.max_timestamp_and_offset() == (TS + 291, 59)


def test_crash_without_snapshot_replays_every_batch_large_and_small(tmp_path):
    """Producer state after a crash that left no snapshot is rebuilt from every batch (large
    batches are walked header by header): a retry of the last batch is still a duplicate,
    the next sequence is still the next one."""
    log = open_log(tmp_path / "t-0")
    seq = 0
    for i in range(12):
        n = 1 if i % 3 else 40  # every third batch ~40 KB
        log.append(rec.build_batch([Record(None, TS + i, None, b"x" * 1000, ()) for _ in range(n)],
                                   producer_id=7, producer_epoch=0, base_sequence=seq))
        last = (n, seq)
        seq += n
    leo = log.log_end_offset
    for f in os.listdir(tmp_path / "t-0"):
        if f.endswith(".snapshot"):
            os.unlink(tmp_path / "t-0" / f)
    log2 = open_log(tmp_path / "t-0", had_clean_shutdown=False, recovery_point=0)
    n, first = last
    retry = rec.build_batch([Record(None, TS + 11, None, b"x" * 1000, ()) for _ in range(n)],
                            producer_id=7, producer_epoch=0, base_sequence=first)
    assert log2.append(retry).base_offset == leo - n  # the duplicate's original offsets
    nxt = rec.build_batch([Record(None, TS + 12, None, b"y", ())], producer_id=7, producer_epoch=0,
                          base_sequence=seq)
    assert log2.append(nxt).base_offset == leo


def test_first_use_of_a_trusted_segment_from_two_threads(tmp_path):
    """The log's owner and a log cleaner thread may touch a trusted segment's indexes first at
    the same time: both see them whole, the files are read once."""
    import threading
    c = cfg(segment_bytes=3000, index_interval_bytes=400)
    log = open_log(tmp_path / "t-0", c)
    fill(log, 30)
    log.close()
    for _ in range(5):
        log2 = open_log(tmp_path / "t-0", c)
        seg = log2.segments[1]
        results, start = [], threading.Barrier(2)

        def use():
            start.wait()
            results.append((seg.offset_index.entries, seg.max_timestamp_so_far, seg.translate_offset(9).position))
        threads = [threading.Thread(target=use) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(results) == 2 and results[0] == results[1] and results[0][0] > 0
        log2.close()
    # closing never reads a trusted segment's indexes (nothing to add to them)
    log3 = open_log(tmp_path / "t-0", c)
    log3.close()
    assert not log3.segments[0].offset_index.loaded
