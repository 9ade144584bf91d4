"""storage/log.py + storage/segment.py: append, read, rolls, indexes, timestamps, retention."""
from __future__ import annotations

import os
import struct

import pytest

from minikafka.protocol import records as rec
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.protocol.records import Record
from minikafka.storage.config import LogConfig
from minikafka.storage.log import UnifiedLog

TS = 1_700_000_000_000


def batch(n=3, ts=TS, value=b"v" * 100, key_prefix=b"k", compression=0, **kw) -> bytes:
    return rec.build_batch([Record(None, ts + i, key_prefix + b"%d" % i, value, ()) for i in range(n)],
                           compression=compression, **kw)


def make_log(tmp_path, name="t-0", **overrides) -> UnifiedLog:
    cfg = LogConfig().with_overrides({k.replace("_", "."): str(v) for k, v in overrides.items()})
    return UnifiedLog(str(tmp_path / name), "t", 0, cfg)


def read_all(log: UnifiedLog, start=0, max_bytes=1 << 20):
    """[(header, records)] from `start` to the end, via repeated reads."""
    out, offset = [], start
    while True:
        r = log.read(offset, max_bytes)
        if not r.records:
            return out
        for pos, h in rec.iter_batch_headers(r.records):
            out.append(rec.decode_batch(r.records, pos, verify_crc=True))
        offset = r.next_offset


def test_append_assigns_offsets_and_read_round_trip(tmp_path):
    log = make_log(tmp_path)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (0, 0, 0)
    r1 = log.append(batch(3))
    r2 = log.append(batch(2, key_prefix=b"x"))
    assert (r1.base_offset, r1.last_offset, r1.num_records, r1.log_append_time_ms) == (0, 2, 3, -1)
    assert (r2.base_offset, r2.last_offset) == (3, 4)
    assert log.log_end_offset == log.high_watermark == log.last_stable_offset == 5
    res = log.read(0, 1 << 20)
    assert (res.high_watermark, res.log_start_offset, res.log_end_offset, res.next_offset) == (5, 0, 5, 5)
    batches = [rec.decode_batch(res.records, p, verify_crc=True) for p, _ in rec.iter_batch_headers(res.records)]
    assert [h.base_offset for h, _ in batches] == [0, 3]
    assert [r.offset for _, rs in batches for r in rs] == [0, 1, 2, 3, 4]
    assert [r.key for _, rs in batches for r in rs] == [b"k0", b"k1", b"k2", b"x0", b"x1"]
    assert all(h.partition_leader_epoch == 0 for h, _ in batches)
    # the bytes on disk are the wire bytes with the base offset patched
    with open(log.active_segment.log_path, "rb") as f:
        assert f.read() == res.records


def test_on_append_callback(tmp_path):
    log = make_log(tmp_path)
    calls = []
    log.on_append = lambda: calls.append(1)
    log.append(batch())
    assert calls == [1]


def test_read_from_middle_of_batch_returns_whole_batch(tmp_path):
    log = make_log(tmp_path)
    log.append(batch(5))
    log.append(batch(5))
    res = log.read(7, 1 << 20)
    hs = [h for _, h in rec.iter_batch_headers(res.records)]
    assert [h.base_offset for h in hs] == [5]


def test_read_max_bytes_and_min_one(tmp_path):
    """Kafka's LogSegment.read: a slice of the file, cut where the size limit falls."""
    log = make_log(tmp_path)
    b = batch(3)
    for _ in range(4):
        log.append(b)
    size = len(b)
    with open(log.active_segment.log_path, "rb") as f:
        disk = f.read()
    r = log.read(0, size * 2 + 10)
    assert bytes(r.records) == disk[:size * 2 + 10] and r.next_offset == 6 and not r.first_entry_incomplete
    # first batch bigger than max_bytes: returned whole with min_one (KIP-74)
    r = log.read(3, 10)
    assert bytes(r.records) == disk[size:size * 2] and r.next_offset == 6
    # without min_one the first batch is cut: flagged, so the fetch answers nothing
    r = log.read(3, 10, min_one=False)
    assert bytes(r.records) == disk[size:size + 10] and r.first_entry_incomplete and r.next_offset == 3
    # a zero limit reads nothing, and is not a cut batch
    r = log.read(3, 0, min_one=False)
    assert r.records == b"" and not r.first_entry_incomplete


def test_read_max_offset_is_exclusive_upper_bound(tmp_path):
    log = make_log(tmp_path)
    for _ in range(4):
        log.append(batch(3))
    r = log.read(0, 1 << 20, max_offset=6)
    assert [h.base_offset for _, h in rec.iter_batch_headers(r.records)] == [0, 3]
    assert len(r.records) == 2 * len(batch(3))  # the slice ends at max_offset's batch, never inside it
    r = log.read(6, 1 << 20, max_offset=6)
    assert r.records == b""
    # the readable part ends where max_offset's batch starts (Kafka's offset metadata: a position)
    r = log.read(0, 1 << 20, max_offset=7)
    assert [h.base_offset for _, h in rec.iter_batch_headers(r.records)] == [0, 3]


def test_read_stays_in_one_segment(tmp_path):
    """A read returns one segment's bytes (Kafka's LocalLog.read); the next read continues
    in the next segment."""
    log = make_log(tmp_path, segment_bytes=1000)
    for _ in range(6):
        log.append(batch(1, value=b"s" * 300))
    assert log.num_segments() >= 2
    first = log.segments[0]
    r = log.read(0, 1 << 20)
    with open(first.log_path, "rb") as f:
        assert bytes(r.records) == f.read()
    r2 = log.read(r.next_offset, 1 << 20)
    assert r.next_offset == log.segments[1].base_offset
    assert next(rec.iter_batch_headers(r2.records))[1].base_offset == log.segments[1].base_offset


def test_offset_out_of_range_and_end(tmp_path):
    log = make_log(tmp_path)
    log.append(batch(3))
    assert log.read(3, 100).records == b""
    for bad in (4, -1, 100):
        with pytest.raises(KafkaError) as e:
            log.read(bad, 100)
        assert e.value.code == ErrorCode.OFFSET_OUT_OF_RANGE


def test_rolls_and_reads_from_old_segments_via_index(tmp_path):
    # ~1.1 KB batches, 8 KB segments, index entry every 1 KB
    log = make_log(tmp_path, segment_bytes=8192, index_interval_bytes=1024)
    values = {}
    for i in range(100):
        v = b"%05d" % i + b"x" * 1000
        log.append(rec.build_batch([Record(None, TS + i, b"k", v, ())]))
        values[i] = v
    assert log.num_segments() > 10
    names = sorted(os.listdir(log.dir))
    assert "00000000000000000000.log" in names and "00000000000000000000.index" in names
    assert all(len(n.split(".")[0]) == 20 for n in names if n.endswith(".log"))
    # old segments have index entries
    assert log.segments[1].offset_index.entries > 0
    for target in (0, 1, 13, 37, 50, 51, 77, 99):
        r = log.read(target, 1)  # min_one: exactly the batch holding target
        [(pos, h)] = list(rec.iter_batch_headers(r.records))
        assert h.base_offset == target
        _, [record] = rec.decode_batch(r.records)
        assert record.value == values[target]
    # a big read crosses segment boundaries
    got = read_all(log, 5)
    assert [h.base_offset for h, _ in got] == list(range(5, 100))
    # segments start exactly where the previous ended
    for a, b in zip(log.segments, log.segments[1:]):
        assert a.next_offset == b.base_offset


def test_index_files_have_kafka_format(tmp_path):
    log = make_log(tmp_path, index_interval_bytes=100)
    positions = []
    for i in range(10):
        positions.append(log.active_segment.size)
        log.append(batch(2, ts=TS + 10 * i))
    log.close()
    seg = log.segments[0]
    data = open(seg.offset_index.path, "rb").read()
    assert len(data) % 8 == 0 and len(data) > 0
    entries = [struct.unpack_from(">ii", data, i) for i in range(0, len(data), 8)]
    for rel, pos in entries:
        assert pos in positions
        h = rec.parse_header(open(seg.log_path, "rb").read()[pos:pos + 61])
        assert h.last_offset == rel  # entry key is the batch's last offset
    tdata = open(seg.time_index.path, "rb").read()
    assert len(tdata) % 12 == 0 and len(tdata) > 0
    tentries = [struct.unpack_from(">qi", tdata, i) for i in range(0, len(tdata), 12)]
    assert tentries == sorted(tentries) and tentries[-1] == (TS + 91, 19)


def test_timestamp_lookups_into_a_large_compressed_batch_are_sliced(tmp_path):
    """A lookup that must read a stored compressed batch's records to its last one is a generator
    of record-walk steps (the broker runs it in slices of its event loop), not one long call."""
    from minikafka.protocol.record_walk import SLICE_RECORDS
    n = 10 * SLICE_RECORDS
    log = make_log(tmp_path, max_message_bytes=1 << 24)
    log.append(batch(n, value=b"", compression=rec.Compression.GZIP))
    for steps, want in ((log.offset_by_timestamp_steps(TS + n - 1), (n - 1, TS + n - 1)),
                        (log.max_timestamp_steps(), (TS + n - 1, n - 1))):
        yielded = 0
        try:
            while True:
                next(steps)
                yielded += 1
        except StopIteration as done:
            assert done.value == want
        assert yielded >= 9, yielded
    assert log.fetch_offset_by_timestamp(TS + n - 1) == (n - 1, TS + n - 1)


def test_offset_for_timestamp_across_rolled_segments(tmp_path):
    log = make_log(tmp_path, segment_bytes=4096, index_interval_bytes=512)
    for i in range(60):  # batch i: records ts TS+100i, TS+100i+1, TS+100i+2
        log.append(batch(3, ts=TS + 100 * i, value=b"y" * 200))
    assert log.num_segments() > 5
    assert log.fetch_offset_by_timestamp(TS) == (0, TS)
    assert log.fetch_offset_by_timestamp(TS - 1000) == (0, TS)
    assert log.fetch_offset_by_timestamp(TS + 1) == (1, TS + 1)
    assert log.fetch_offset_by_timestamp(TS + 3) == (3, TS + 100)
    assert log.fetch_offset_by_timestamp(TS + 100 * 37 + 2) == (37 * 3 + 2, TS + 3702)
    assert log.fetch_offset_by_timestamp(TS + 100 * 59 + 2) == (179, TS + 5902)
    assert log.fetch_offset_by_timestamp(TS + 100 * 59 + 3) is None
    assert log.max_timestamp_and_offset() == (TS + 5902, 179)


def test_offset_for_timestamp_out_of_order_timestamps(tmp_path):
    log = make_log(tmp_path, index_interval_bytes=1)
    log.append(rec.build_batch([Record(None, 500, None, b"a"), Record(None, 100, None, b"b")]))  # 0,1
    log.append(rec.build_batch([Record(None, 300, None, b"c")]))  # 2
    log.append(rec.build_batch([Record(None, 900, None, b"d"), Record(None, 900, None, b"e")]))  # 3,4
    assert log.fetch_offset_by_timestamp(50) == (0, 500)
    assert log.fetch_offset_by_timestamp(200) == (0, 500)
    assert log.fetch_offset_by_timestamp(600) == (3, 900)
    assert log.max_timestamp_and_offset() == (900, 3)  # first record with the max timestamp


def test_compressed_batches_timestamp_lookup(tmp_path):
    log = make_log(tmp_path)
    for codec in (1, 2, 3, 4):
        log.append(batch(4, ts=TS + 10 * codec, compression=codec))
    assert log.fetch_offset_by_timestamp(TS + 31) == (9, TS + 31)
    got = read_all(log)
    assert [h.compression for h, _ in got] == [1, 2, 3, 4]


def test_log_append_time(tmp_path):
    log = make_log(tmp_path, message_timestamp_type="LogAppendTime")
    r = log.append(batch(3, ts=5), now_ms=TS)
    assert r.log_append_time_ms == TS
    [(h, rs)] = read_all(log)
    assert h.timestamp_type == 1 and h.max_timestamp == TS
    assert [x.timestamp for x in rs] == [TS] * 3
    assert log.fetch_offset_by_timestamp(TS) == (0, TS)


def test_append_validation_all_or_nothing(tmp_path):
    log = make_log(tmp_path, max_message_bytes=2000)
    good = batch(1)
    bad = bytearray(batch(1))
    bad[-1] ^= 1
    cases = [
        (b"", ErrorCode.INVALID_RECORD),
        (good + bytes(bad), ErrorCode.CORRUPT_MESSAGE),
        (good + good[:30], ErrorCode.CORRUPT_MESSAGE),
        (batch(1, value=b"z" * 3000), ErrorCode.MESSAGE_TOO_LARGE),
        (b"\x00" * 7, ErrorCode.CORRUPT_MESSAGE),
        (rec.build_control_batch(1, 0, True, 0, TS), ErrorCode.INVALID_RECORD),
        (batch(1, producer_id=5, producer_epoch=0, base_sequence=-1), ErrorCode.INVALID_RECORD),
    ]
    for data, code in cases:
        with pytest.raises(KafkaError) as e:
            log.append(data)
        assert e.value.code == code, data[:20]
    assert log.log_end_offset == 0 and log.active_segment.size == 0
    # inconsistent count vs lastOffsetDelta
    b = bytearray(batch(2))
    struct.pack_into(">i", b, 57, 3)
    struct.pack_into(">I", b, 17, rec.compute_crc(b, 0, len(b)))
    with pytest.raises(KafkaError) as e:
        log.append(b)
    assert e.value.code == ErrorCode.INVALID_RECORD
    # the internal path may write control batches
    r = log.append(rec.build_control_batch(1, 0, True, 0, TS), origin="coordinator")
    assert r.base_offset == 0 and log.log_end_offset == 1


def test_multiple_batches_in_one_append(tmp_path):
    log = make_log(tmp_path)
    r = log.append(batch(2) + batch(3) + batch(1))
    assert (r.base_offset, r.last_offset, r.num_records) == (0, 5, 6)
    assert [h.base_offset for h, _ in read_all(log)] == [0, 2, 5]


def test_record_list_larger_than_segment(tmp_path):
    log = make_log(tmp_path, segment_bytes=500)
    with pytest.raises(KafkaError) as e:
        log.append(batch(3, value=b"q" * 300))
    assert e.value.code == ErrorCode.RECORD_LIST_TOO_LARGE


def test_segment_ms_roll_uses_record_timestamps(tmp_path):
    log = make_log(tmp_path, segment_ms=1000)
    log.append(batch(1, ts=TS))
    log.append(batch(1, ts=TS + 500))
    assert log.num_segments() == 1
    log.append(batch(1, ts=TS + 1500))
    assert log.num_segments() == 2 and log.active_segment.base_offset == 2


def test_retention_by_bytes(tmp_path):
    log = make_log(tmp_path, segment_bytes=2000, retention_bytes=5000)
    for i in range(30):
        log.append(batch(1, value=b"r" * 400))
    n_before, size_before = log.num_segments(), log.size
    deleted = log.delete_old_segments(now_ms=TS)
    assert deleted > 0 and log.num_segments() == n_before - deleted
    assert log.size <= 5000 + 2000 and log.size < size_before
    assert log.log_start_offset == log.segments[0].base_offset > 0
    with pytest.raises(KafkaError) as e:
        log.read(0, 100)
    assert e.value.code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert log.read(log.log_start_offset, 100).records


def test_retention_by_time_including_active_segment(tmp_path):
    log = make_log(tmp_path, segment_bytes=2000, retention_ms=10_000)
    for i in range(10):
        log.append(batch(1, ts=TS + i, value=b"r" * 400))
    log.append(batch(1, ts=TS + 60_000, value=b"r" * 400))  # newer, in the last segment
    n = log.num_segments()
    # nothing old enough yet
    assert log.delete_old_segments(now_ms=TS + 5_000) == 0
    # old segments expire, the one holding the new record stays
    deleted = log.delete_old_segments(now_ms=TS + 20_000)
    assert deleted == n - 1 and log.log_start_offset == log.segments[0].base_offset
    assert log.log_start_offset <= 10
    # everything expires: Kafka rolls a fresh empty segment and deletes the rest
    log.delete_old_segments(now_ms=TS + 100_000)
    assert log.num_segments() == 1 and log.active_segment.size == 0
    assert log.log_start_offset == log.log_end_offset == 11
    assert log.read(11, 100).records == b""
    assert log.append(batch(1)).base_offset == 11


def test_delete_records_before(tmp_path):
    log = make_log(tmp_path, segment_bytes=2000)
    for i in range(20):
        log.append(batch(1, value=b"d" * 400))
    n = log.num_segments()
    seen = []
    log.on_log_start_offset_change = lambda l: seen.append(l.log_start_offset)
    assert log.delete_records_before(9) == 9
    assert log.log_start_offset == 9 and seen == [9]
    assert log.num_segments() < n and log.segments[0].base_offset <= 9
    with pytest.raises(KafkaError):
        log.read(8, 100)
    r = log.read(9, 1)
    assert next(rec.iter_batch_headers(r.records))[1].base_offset == 9
    with pytest.raises(KafkaError) as e:
        log.delete_records_before(21)
    assert e.value.code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert log.delete_records_before(5) == 9  # never goes back
    assert log.delete_records_before(20) == 20
    assert log.read(20, 100).records == b""


def test_flush_messages_triggers_fsync(tmp_path, monkeypatch):
    log = make_log(tmp_path, flush_messages=5)
    calls = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real(fd))[1])
    log.append(batch(3))
    assert not calls
    log.append(batch(3))
    assert calls and log.recovery_point == 6


def test_topic_compression_type_recompresses(tmp_path):
    log = make_log(tmp_path, compression_type="zstd")
    log.append(batch(3, compression=1))
    [(h, rs)] = read_all(log)
    assert h.compression == 4 and [r.key for r in rs] == [b"k0", b"k1", b"k2"]


def test_truncate_to(tmp_path):
    log = make_log(tmp_path, segment_bytes=2000)
    for i in range(20):
        log.append(batch(1, value=b"t" * 400))
    log.truncate_to(12)
    assert log.log_end_offset == 12
    assert [h.base_offset for h, _ in read_all(log)] == list(range(12))
    assert log.append(batch(1)).base_offset == 12


def test_flush_asks_on_roll_and_at_flush_messages_and_advances_the_recovery_point(tmp_path):
    log = make_log(tmp_path, segment_bytes=1500, flush_messages=7)
    asked = []
    log.on_flush_needed = lambda lg, upto: asked.append(upto)
    results = [log.append(batch(n=3)) for _ in range(3)]      # 9 messages: 9 - 0 >= 7 at the third
    assert [r.flush_needed for r in results] == [False, False, True] and asked == [9]
    assert log.recovery_point == 0                             # the broker flushes, in a worker thread
    log.flush(upto=6)
    assert log.recovery_point == 6 and log.unflushed_messages == 3
    log.flush(upto=3)                                          # never backwards
    assert log.recovery_point == 6
    asked.clear()
    while log.num_segments() < 2:
        log.append(batch(n=1))
    assert asked[0] == log.active_segment.base_offset          # the roll asks for the finished segment
    log.flush()
    assert log.recovery_point == log.log_end_offset and not log.flush_due(10**15)
    log.close()


def test_flush_messages_without_a_broker_flushes_in_append(tmp_path):
    log = make_log(tmp_path, flush_messages=2)
    assert not log.append(batch(n=1)).flush_needed and log.recovery_point == 0
    assert not log.append(batch(n=1)).flush_needed and log.recovery_point == 2
    log.close()


def test_append_copies_the_records_it_is_given(tmp_path):
    """A Produce request's records are a read-only view of its frame: the log assigns offsets and
    the epoch in a copy of its own (never in the caller's buffer) and what it stores does not
    follow later changes of that buffer."""
    log = make_log(tmp_path)
    log.append(batch(2))
    sent = batch(3, key_prefix=b"x", producer_id=7, producer_epoch=0, base_sequence=0)
    owner = bytearray(sent)
    r = log.append(memoryview(owner).toreadonly())
    assert (r.base_offset, r.last_offset) == (2, 4)
    assert owner == sent
    owner[:] = bytes(len(owner))
    (_, _), (h, records) = read_all(log)
    assert (h.base_offset, h.producer_id) == (2, 7)
    assert [r.key for r in records] == [b"x0", b"x1", b"x2"]
