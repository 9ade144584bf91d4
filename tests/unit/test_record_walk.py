"""The record walk (protocol/record_walk.py) and the codecs' bounded streams
(protocol/compression.py): what a walk finds and refuses, under every codec, across chunk
boundaries and through records too large to hold; the rewriting of records; the steps a walk
yields, so that a caller can run it in slices."""
from __future__ import annotations

import gzip
import struct

import hypothesis
import pytest
import trio
from hypothesis import strategies as st

from minikafka.broker.stepper import Stepper
from minikafka.protocol import compression
from minikafka.protocol import record_walk as rw
from minikafka.protocol import records as rec
from minikafka.protocol.errors import ErrorCode, KafkaError

CODECS = [0, 1, 2, 3, 4]


def walk(batch: bytes, visit=None, keys=False, block_limit=32 << 20):
    h = rec.parse_header(batch)
    return rw.run(rw.walk_records(batch, 0, h.size, h.records_count, h.compression, visit=visit, keys=keys,
                                  block_limit=block_limit))


def rebuilt(batch: bytes, section: bytes, count: int | None = None, codec: int | None = None) -> bytes:
    h = rec.parse_header(batch)
    b = bytearray(batch[:rec.HEADER_SIZE])
    if count is not None:
        struct.pack_into(">i", b, rec.RECORDS_COUNT_OFFSET, count)
        struct.pack_into(">i", b, rec.LAST_OFFSET_DELTA_OFFSET, count - 1)
    codec = h.compression if codec is None else codec
    b += compression.compress(codec, section) if codec else section
    struct.pack_into(">i", b, rec.LENGTH_OFFSET, len(b) - rec.LOG_OVERHEAD)
    struct.pack_into(">I", b, rec.CRC_OFFSET, rec.compute_crc(b, 0, len(b)))
    return bytes(b)


def records(n: int, value_size: int = 10, key=True, headers=()):
    return [rec.Record(None, 1000 + (i * 7) % 50, (b"key-%d" % i) if key else None, bytes([i % 251]) * value_size,
                       headers) for i in range(n)]


@pytest.mark.parametrize("codec", CODECS)
def test_a_walk_sees_what_decoding_sees(codec):
    rs = records(3000, 300, headers=[("h", b"x"), ("e", None)])
    batch = rec.build_batch(rs, compression=codec)      # several 256 KB chunks once inflated
    seen = []
    s = walk(batch, visit=lambda *a: seen.append(a), keys=True)
    _, decoded = rec.decode_batch(batch)
    assert s.count == 3000 and s.ordered and s.keyless == 0
    assert (s.lo, s.hi) == (0, 49)
    assert [(i, od, key) for i, _, od, _, _, key in seen] == [(i, r.offset, r.key) for i, r in enumerate(decoded)]


@pytest.mark.parametrize("codec", CODECS)
def test_records_too_large_to_hold_are_streamed_with_the_same_checks(codec):
    big = rw.INLINE_RECORD * 3
    rs = [rec.Record(None, 5, b"k" * 5000, bytes(big), [("h", b"v")]), rec.Record(None, 9, None, b"small", ())]
    batch = rec.build_batch(rs, compression=codec)
    seen = []
    s = walk(batch, visit=lambda *a: seen.append(a), keys=True)
    assert s.count == 2 and s.keyless == 1
    # a key over KEY_INLINE comes as its digest, the same whether its record was streamed or not
    assert seen[0][:5] == (0, 0, 0, 5000, big) and seen[0][5][0] == "md5"
    assert seen[1][:5] == (1, 4, 1, -1, 5)


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("fault", ["count above", "count below", "trailing", "length one more", "length one less",
                                   "negative header count", "streamed value past its record"])
def test_records_that_disagree_with_their_batch_are_invalid_record(codec, fault):
    good = rec.build_batch(records(2), compression=codec)
    section = rec.decompress(codec, good[rec.HEADER_SIZE:]) if codec else good[rec.HEADER_SIZE:]
    one = rec.build_batch(records(1))[rec.HEADER_SIZE:]
    if fault == "count above":
        batch = rebuilt(good, section, count=3)
    elif fault == "count below":
        batch = rebuilt(good, section, count=1)
    elif fault == "trailing":
        batch = rebuilt(good, section + b"\x00")
    elif fault in ("length one more", "length one less"):
        delta = 1 if fault == "length one more" else -1
        batch = rebuilt(good, bytes([one[0] + 2 * delta]) + one[1:], count=1)
    elif fault == "negative header count":
        body = b"\x00\x00\x00\x01\x02v\x01"
        batch = rebuilt(good, rec.encode_varint(len(body)) + body, count=1)
    else:  # a streamed record whose value length runs past its own length
        size = rw.INLINE_RECORD * 2
        head = b"\x00\x00\x00\x01" + rec.encode_varint(size)
        section = rec.encode_varint(len(head) + 10) + head + bytes(size) + b"\x00"
        batch = rebuilt(good, section, count=1)
    with pytest.raises(KafkaError) as e:
        walk(batch)
    assert e.value.code == ErrorCode.INVALID_RECORD, e.value


def test_a_record_length_varint_too_long_is_unknown_server_error_uncompressed_invalid_record_compressed():
    body = b"\xff\xff\xff\xff\xff\x01" + rec.build_batch(records(1))[rec.HEADER_SIZE + 1:]
    for codec, code in ((0, ErrorCode.UNKNOWN_SERVER_ERROR), (1, ErrorCode.INVALID_RECORD)):
        batch = rebuilt(rec.build_batch(records(1), compression=codec), body)
        with pytest.raises(KafkaError) as e:
            walk(batch)
        assert e.value.code == code


def test_varints_keep_only_their_types_width():
    # the fifth byte of an int varint keeps 4 bits, as Java's int shift does
    assert rw._varint(b"\x80\x80\x80\x80\x7f", 0, 5) == (((0x7F << 28) & 0xFFFFFFFF) >> 1 ^ 0, 5)
    with pytest.raises(KafkaError):
        rw._varint(b"\xff" * 6, 0, 6)
    assert rw._varint(b"\x80\x80", 0, 2) is None   # runs past the limit: more bytes are needed


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_a_stream_its_codec_cannot_read_is_unknown_server_error(codec):
    stream = compression.compress(codec, b"\x00" * 100_000)
    for broken in (b"\x01\x02\x03\x04" * 8, stream[:len(stream) // 2], b""):
        with pytest.raises(KafkaError) as e:
            inf = compression.inflater(codec, broken)
            while inf.read(1 << 16):
                pass
            if codec == 4 and not broken:
                raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR)  # an empty zstd stream is empty (87 later)
        assert e.value.code == ErrorCode.UNKNOWN_SERVER_ERROR, (codec, broken[:8])


def test_stream_ends_follow_kafkas_readers():
    data = b"records" * 1000

    def inflate(codec, stream):
        inf = compression.inflater(codec, stream)
        out = b""
        while chunk := inf.read(333):
            assert len(chunk) <= 333
            out += chunk
        return out

    g = gzip.compress(data, mtime=0)
    assert inflate(1, g + g) == data + data                  # GZIPInputStream: concatenated members
    assert inflate(1, g + b"\x01\x02\x03") == data           # not a member after it: ignored
    z = compression.compress(4, data)
    skippable = struct.pack("<II", 0x184D2A50, 3) + b"abc"
    assert inflate(4, z + skippable + z) == data + data      # zstd frames back to back
    with pytest.raises(KafkaError):
        inflate(4, z + b"\x01\x02\x03")                      # zstd-jni fails on anything else
    lz = compression.compress(3, data)
    assert inflate(3, lz + b"\x01\x02\x03") == data          # Kafka's lz4 reader stops at the end mark
    s = compression.compress(2, data)
    assert inflate(2, s + b"\x01\x02\x03") == data           # fewer than 4 bytes after the last block
    import cramjam
    assert inflate(2, bytes(cramjam.snappy.compress_raw(data))) == data  # one raw block


def test_a_snappy_block_is_bounded_and_a_big_one_is_a_step_for_a_worker_thread():
    raw = bytes(__import__("cramjam").snappy.compress_raw(bytes(3 << 20)))
    inf = compression.inflater(2, raw, block_limit=4 << 20)
    assert inf.heavy
    inf.prepare()
    assert len(inf.read(1 << 30)) == 3 << 20
    with pytest.raises(KafkaError) as e:
        compression.inflater(2, raw, block_limit=2 << 20)
    assert e.value.code == ErrorCode.MESSAGE_TOO_LARGE


@pytest.mark.parametrize("codec", CODECS)
def test_a_bomb_is_walked_in_bounded_steps(codec):
    size = 256 << 20
    head = b"\x00\x00\x00\x02k" + rec.encode_varint(size)
    pieces = [rec.encode_varint(len(head) + size + 1) + head] + [bytes(1 << 20)] * 256 + [b"\x00"]
    if codec == 1:
        import zlib
        c = zlib.compressobj(9, zlib.DEFLATED, 31)
        section = b"".join(c.compress(p) for p in pieces) + c.flush()
    elif codec:
        d = compression.deflater(codec)
        section = b"".join(d.write(p) for p in pieces) + d.finish()
    else:
        pytest.skip("an uncompressed batch is its own size")
    batch = rebuilt(rec.build_batch(records(1), compression=codec), section, codec=0)
    batch = bytearray(batch)
    struct.pack_into(">h", batch, rec.ATTRIBUTES_OFFSET, codec)
    struct.pack_into(">I", batch, rec.CRC_OFFSET, rec.compute_crc(batch, 0, len(batch)))
    h = rec.parse_header(batch)
    steps = rw.walk_records(batch, 0, h.size, 1, codec)
    n = 0
    try:
        while True:
            step = steps.send(None)
            n += 1
            if step is not None:
                step()
    except StopIteration as done:
        s = done.value
    assert s.count == 1 and s.keyless == 0
    assert n >= size // rw.CHUNK          # a step per chunk read at most


@pytest.mark.parametrize("codec", CODECS)
def test_records_are_rewritten_with_new_deltas_and_some_left_out(codec):
    rs = records(5, 50) + [rec.Record(None, 1010, b"big", bytes(rw.INLINE_RECORD * 2), [("h", b"v")])]
    batch = rec.build_batch(rs, compression=codec)
    h = rec.parse_header(batch)
    target = 1 if codec != 1 else 4

    def fields(i, td, od):
        return None if i in (1, 3) else (td + 100, od + 10)

    section = rw.run(rw.reencode_records(batch, 0, h.size, 6, codec, target, fields))
    out = rec.frame_batch(section, compression=target, last_offset_delta=h.last_offset_delta, base_timestamp=0,
                          max_timestamp=0, producer_id=-1, producer_epoch=-1, base_sequence=-1,
                          is_transactional=False, records_count=4)
    _, got = rec.decode_batch(out)
    _, want = rec.decode_batch(batch)
    kept = [want[i] for i in (0, 2, 4, 5)]
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in got] == [
        (r.offset + 10, r.timestamp - 1000 + 100, r.key, r.value, r.headers) for r in kept]
    with pytest.raises(KafkaError) as e:
        rw.run(rw.reencode_records(batch, 0, h.size, 6, codec, 0, lambda i, td, od: (td, od), limit=1000))
    assert e.value.code == ErrorCode.MESSAGE_TOO_LARGE


def test_the_stepper_lets_others_run_between_slices_and_runs_heavy_steps_in_a_thread():
    import threading

    ran_in = []

    def work():
        for k in range(2000):
            for _ in range(2000):
                pass
            if k == 1000:
                yield lambda: ran_in.append(threading.get_ident())
            else:
                yield None
        return "done"

    async def main():
        ticks = []

        async def other():
            while True:
                ticks.append(trio.current_time())
                await trio.sleep(0)

        async with trio.open_nursery() as n:
            n.start_soon(other)
            result = await Stepper().run(work())
            n.cancel_scope.cancel()
        return result, ticks

    result, ticks = trio.run(main)
    assert result == "done"
    assert ran_in and ran_in[0] != threading.get_ident()
    assert len(ticks) > 10                 # the other task ran many times meanwhile


def test_a_batch_of_many_bad_records_keeps_the_first_errors_and_counts_them_all():
    from minikafka.storage.config import LogConfig
    from minikafka.storage.validator import MAX_RECORD_ERRORS, RecordValidationError, analyze_append
    n = MAX_RECORD_ERRORS + 5
    batch = rec.build_batch([rec.Record(None, None, None, b"", ()) for _ in range(n)], compression=4)
    config = LogConfig().with_overrides({"cleanup.policy": "compact"})
    analysis = rw.run(analyze_append(batch, config, 0, "t-0", True))
    e = analysis.error
    assert isinstance(e, RecordValidationError) and e.code == ErrorCode.INVALID_RECORD
    assert len(e.record_errors) == MAX_RECORD_ERRORS and e.record_errors[0] == (
        0, "Compacted topic cannot accept message without key in topic partition t-0")
    assert e.message.startswith(f"One or more records have been rejected due to {n} record errors in total")


def test_a_zstd_frame_with_a_large_window_starts_in_a_worker_thread():
    import zstandard
    params = zstandard.ZstdCompressionParameters.from_level(19, window_log=24)
    big = zstandard.ZstdCompressor(compression_params=params).compressobj()
    section = big.compress(bytes(20 << 20)) + big.flush()
    inf = compression.inflater(4, section)
    assert inf.heavy
    inf.prepare()
    assert not inf.heavy
    assert sum(len(c) for c in iter(lambda: inf.read(1 << 20), b"")) == 20 << 20
    assert not compression.inflater(4, compression.compress(4, bytes(20 << 20))).heavy


# The walk's runs (record_walk._run) must find exactly what parsing every record one by one
# finds: the same summary, the same stopping point, the same error. Batches as clients write
# them (alike records, the layout changing where an offset delta or timestamp delta widens),
# then broken at random places.

def _section(count: int, value_size: int, key: bool, ts_step: int, headers_every: int) -> bytes:
    rs = [rec.Record(None, (i * ts_step) % 20_000, b"k" if key else None, bytes([i % 251]) * value_size,
                     [("h", b"v")] if headers_every and i % headers_every == headers_every - 1 else ())
          for i in range(count)]
    return rec.build_batch(rs)[rec.HEADER_SIZE:]


def _outcome(scan, data: bytes, end: int, stop: int):
    s = rw.RecordSummary()
    try:
        pos, i = scan(data, 0, end, 0, stop, s)
    except KafkaError as e:
        return type(e).__name__, e.code, e.message
    return pos, i, s.lo, s.hi, s.keyless, s.ordered


@hypothesis.settings(max_examples=300, deadline=None)
@hypothesis.given(count=st.integers(1, 300), value_size=st.sampled_from([0, 1, 5, 60, 200]), key=st.booleans(),
                  ts_step=st.sampled_from([0, 1, 3, 40, 70]), headers_every=st.sampled_from([0, 0, 7, 150]),
                  edits=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)), max_size=3),
                  cut=st.floats(0, 1), stop_short=st.integers(0, 20))
def test_runs_find_what_record_by_record_parsing_finds(count, value_size, key, ts_step, headers_every, edits,
                                                        cut, stop_short):
    data = bytearray(_section(count, value_size, key, ts_step, headers_every))
    for where, byte in edits:
        data[int(where * len(data))] = byte
    data = bytes(data)
    end = len(data) if cut > 0.8 else int(cut / 0.8 * len(data))
    stop = max(1, count - stop_short)
    expected = _outcome(rw._scan_records, data, end, stop)
    assert _outcome(rw._scan, data, end, stop) == expected
    assert _outcome(rw._scan, memoryview(data), end, stop) == expected    # (a section too large to copy)


def test_runs_cross_the_offset_delta_widths():
    # 17,000 alike records: offset deltas of 1, 2 and 3 bytes (runs cut at 64 and 8192), the third
    # byte changing inside a run at 16384; in the walk's slices, as walk_records scans them
    n = 17_000
    data = _section(n, 3, False, 0, 0)
    expected = _outcome(rw._scan_records, data, len(data), n)
    assert expected[:2] == (len(data), n)
    s = rw.RecordSummary()
    pos = i = 0
    while i < n:
        pos, i = rw._scan(data, pos, len(data), i, min(n, i + rw.SLICE_RECORDS), s)
    assert (pos, i, s.lo, s.hi, s.keyless, s.ordered) == expected


@pytest.mark.parametrize("width", [1, 2, 3, 4])
def test_offset_delta_columns_are_the_varints_of_the_indexes(width):
    first = 0 if width == 1 else rw._od_width_end(width - 1)
    last = rw._od_width_end(width)
    for i in {first, first + 1, first + 63, last - 1, last - rw.RUN_MAX, (first + last) // 2, 8191, 16383, 16384}:
        if not first <= i < last:
            continue
        k = min(rw.RUN_MAX, last - i)
        encoded = [rw._zigzag(n, 5) for n in range(i, i + k)]
        assert all(len(e) == width for e in encoded)
        assert [rw._od_column(i, k, width, j) for j in range(width)] == [bytes(e[j] for e in encoded)
                                                                          for j in range(width)], i


def test_a_section_too_large_to_copy_is_read_where_it_is_with_the_same_outcome():
    # an uncompressed section over COPY_AT_ONCE is walked as a memoryview of the request
    data = _section(9000, 3, True, 0, 0)
    for at in (None, len(data) // 2, len(data) - 1):
        changed = data if at is None else data[:at] + bytes([data[at] ^ 0x80]) + data[at + 1:]
        assert _outcome(rw._scan, memoryview(changed), len(changed), 9000) == \
            _outcome(rw._scan, changed, len(changed), 9000)
    records = [rec.Record(None, 0, b"k", bytes([i % 251]) * 300, ()) for i in range(2 * rw.COPY_AT_ONCE // 300)]
    batch = rec.build_batch(records)
    assert len(batch) > rw.COPY_AT_ONCE
    s = walk(memoryview(batch))
    assert (s.count, s.keyless, s.ordered) == (len(records), 0, True)


@pytest.mark.parametrize("key", [False, True])
def test_runs_agree_with_record_by_record_parsing_whatever_byte_is_changed(key):
    good = _section(80, 2, key, 3, 0)       # offset deltas widen at 64; each record about 10 bytes
    for at in range(len(good)):
        for byte in {0x00, 0x01, 0x7F, 0x80, 0xFF, good[at] ^ 0x02}:
            data = good[:at] + bytes([byte]) + good[at + 1:]
            assert _outcome(rw._scan, data, len(data), 80) == _outcome(rw._scan_records, data, len(data), 80), \
                (at, byte)
