"""The records of one v2 batch read as Kafka's ``DefaultRecordBatch`` iterators read them
(``DefaultRecord.readFrom``), without keeping them: each record's fields are checked and
summed up (:class:`RecordSummary`), keys and values are stepped over.

Sans-I/O and resumable: :func:`walk_records` is a generator that yields between bounded slices
of work (``None``: a checkpoint, or a callable that runs the next large decompression step and
may go to a worker thread), and returns the summary. Memory stays bounded whatever the batch
inflates to: a compressed section is read through a :class:`~minikafka.protocol.compression.Inflater`
in chunks, a record larger than :data:`INLINE_RECORD` is stepped through, never held.

What is refused, with INVALID_RECORD (Kafka's ``InvalidRecordException``): fewer records than
the header's count (``Incorrect declared batch size, premature EOF reached``), bytes after the
last counted one (``... records still remaining``), a record whose fields run past its length
or stop short of it, a negative header count or header key length, an over-long varint. Kafka
reads a compressed batch's records without their length (``readPartiallyFrom``) and so stores
compressed records whose length is wrong, which no consumer can read; every record is checked
against its length here, compressed or not (tests/conformance/DIFFERENCES.md, record-decodable).
"""
from __future__ import annotations

import hashlib
from typing import Callable, Generator

from minikafka.protocol import compression
from minikafka.protocol.errors import ErrorCode, KafkaError

__all__ = ["RecordSummary", "walk_records", "reencode_records", "rebuild_records", "run", "INLINE_RECORD"]

HEADER_SIZE = 61
SLICE_RECORDS = 2048          # records parsed between two checkpoints
CHUNK = 256 * 1024            # decompressed bytes read per step
INLINE_RECORD = 1 << 20       # a record up to this size is parsed in one buffer; a larger one streamed
KEY_INLINE = 4096             # a key up to this size is handed out whole; a longer one as its digest
# the largest uncompressed section read from a copy (a copy takes about half a millisecond a
# megabyte: a 64 MB batch's would hold an event loop for 30 ms); a larger one is read where it is
COPY_AT_ONCE = 1 << 20
_MASK64 = (1 << 64) - 1
_MASK32 = (1 << 32) - 1

Step = Callable[[], None] | None


class RecordSummary:
    """What a walk found: the number of records, the smallest and largest timestamp delta
    (None without records), how many records have no key, and whether every record's
    offset delta is its index. ``visit``, if set before the walk, is called with
    ``(index, timestamp delta, offset delta, key length, value length, key)`` for each record;
    ``key`` is None unless ``keys`` is set: then the key's bytes, or for a key longer than
    :data:`KEY_INLINE` ``("md5", its MD5 digest)`` (Kafka's cleaner keys its map by digests)."""

    __slots__ = ("count", "lo", "hi", "keyless", "ordered", "visit", "keys")

    def __init__(self, visit=None, keys: bool = False):
        self.count = 0
        self.lo = None
        self.hi = None
        self.keyless = 0
        self.ordered = True
        self.visit = visit
        self.keys = keys


class _LengthTooLong(KafkaError):
    """A record length varint of more than 5 bytes: INVALID_RECORD in a compressed section; in
    an uncompressed one Kafka reads it outside its record parser's error handling and fails the
    append with no Kafka error (UNKNOWN_SERVER_ERROR)."""

    def __init__(self, message: str):
        super().__init__(ErrorCode.INVALID_RECORD, message)


def _invalid(message: str) -> KafkaError:
    return KafkaError(ErrorCode.INVALID_RECORD, message)


def _premature() -> KafkaError:
    return _invalid("Incorrect declared batch size, premature EOF reached")


def _remaining() -> KafkaError:
    return _invalid("Incorrect declared batch size, records still remaining in file")


def _structure() -> KafkaError:
    return _invalid("Found invalid record structure")


def _varint(data, p: int, limit: int, max_bytes: int = 5):
    """A zigzag varint at ``data[p]`` of at most ``max_bytes`` bytes (as ByteUtils: 5 for an int,
    10 for a long, the bits past the type's width dropped); None when it runs past ``limit``."""
    if max_bytes == 5 and p + 5 <= limit:
        b = data[p]
        r = b & 0x7F
        if b & 0x80:
            b = data[p + 1]
            r |= (b & 0x7F) << 7
            if b & 0x80:
                b = data[p + 2]
                r |= (b & 0x7F) << 14
                if b & 0x80:
                    b = data[p + 3]
                    r |= (b & 0x7F) << 21
                    if b & 0x80:
                        b = data[p + 4]
                        if b & 0x80:
                            raise _structure()
                        r = (r | b << 28) & _MASK32
                        return (r >> 1) ^ -(r & 1), p + 5
                    return (r >> 1) ^ -(r & 1), p + 4
                return (r >> 1) ^ -(r & 1), p + 3
            return (r >> 1) ^ -(r & 1), p + 2
        return (r >> 1) ^ -(r & 1), p + 1
    result = shift = 0
    for k in range(max_bytes):
        if p + k >= limit:
            return None
        b = data[p + k]
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            result &= _MASK64 if max_bytes == 10 else _MASK32
            return (result >> 1) ^ -(result & 1), p + k + 1
        shift += 7
    raise _structure()


# zigzag values of one- and two-byte varints (the second byte's 7 bits above the first's)
_Z1 = [(v >> 1) ^ -(v & 1) for v in range(1 << 7)]
_Z2 = [(v >> 1) ^ -(v & 1) for v in range(1 << 14)]


def _scan(data, pos: int, end: int, i: int, stop: int, s: RecordSummary) -> tuple[int, int]:
    """Parse the whole records in ``data[pos:end]``, indexes ``i`` up to ``stop``; return where
    parsing stopped ``(position, index)``: at ``stop``, or at the first record not wholly in the
    buffer (its length varint or body crossing ``end``).

    The hot path of every produce. A client's batch is mostly runs of records laid out alike
    (same length, key and value lengths, varint widths, no headers): after one record is
    parsed field by field, :func:`_run` checks how many of the records after it share its
    layout, a column of bytes at a time (C-speed slices), which proves each of them would
    parse as that record did. Where the layout changes, records are parsed one by one again."""
    if s.visit is not None:
        return _scan_visiting(data, pos, end, i, stop, s)
    while i < stop:
        if stop - i < RUN_MIN:
            return _scan_records(data, pos, end, i, stop, s)
        first, at = pos, i
        pos, i = _scan_records(data, pos, end, i, i + 1, s)
        if i == at:
            return pos, i                            # the record is not wholly in the buffer
        k = _run(data, first, pos, end, i, stop, s)
        if k < 0:
            # a layout that changes from record to record: parse a stretch one by one first
            at = i
            pos, i = _scan_records(data, pos, end, i, min(stop, i + RUN_RETRY), s)
            if i < min(stop, at + RUN_RETRY):
                return pos, i
        else:
            pos += k * (pos - first)
            i += k
    return pos, i


RUN_MIN = 8          # fewer records left than this are parsed one by one
RUN_RETRY = 32       # after a record whose layout the next does not share, records parsed one by one
RUN_MAX = SLICE_RECORDS  # the most records one run covers (the od column tables below are sized for it)
OD_WIDTH_MAX = 4     # offset deltas (= indexes) of up to 4 varint bytes (indexes below 2**27) form runs


def _od_width_end(width: int) -> int:
    """The first index whose offset delta (2 * index, zigzag) takes more than ``width`` bytes."""
    return 1 << (7 * width - 1)


def _cycle(period: int, value) -> bytes:
    return bytes(value(n % period) for n in range(period + RUN_MAX))


# the first two bytes of an offset delta's varint repeat with the index: every 64 and 8192 indexes
_OD_BYTE0 = {True: _cycle(64, lambda n: (2 * n) & 0x7F | 0x80), False: _cycle(64, lambda n: 2 * n)}
_OD_BYTE1 = {True: _cycle(8192, lambda n: n >> 6 | 0x80), False: _cycle(8192, lambda n: n >> 6)}


def _od_column(i: int, k: int, width: int, j: int) -> bytes:
    """Byte ``j`` of the ``width``-byte varints of the offset deltas of indexes ``i`` to
    ``i + k - 1`` (each its index), ``k`` at most :data:`RUN_MAX`."""
    more = j < width - 1
    if j == 0:
        return _OD_BYTE0[more][i % 64:i % 64 + k]
    if j == 1:
        return _OD_BYTE1[more][i % 8192:i % 8192 + k]
    # a higher byte changes every 2**(7j - 1) indexes: at most once in a run

    def byte(n: int) -> bytes:
        return bytes([(n >> (7 * j - 1)) & 0x7F | (0x80 if more else 0)])

    period = 1 << (7 * j - 1)
    m = period - i % period
    return byte(i) * k if m >= k else byte(i) * m + byte(i + m) * (k - m)


def _varint_width(data, p: int) -> int:
    w = 1
    while data[p + w - 1] & 0x80:
        w += 1
    return w


def _run(data, first: int, pos: int, end: int, i: int, stop: int, s: RecordSummary) -> int:
    """How many records from ``pos`` (index ``i``) have the layout of the record at
    ``data[first:pos]`` (index ``i - 1``, parsed and checked): 0 when none can (the offset
    delta's width changes at ``i``, or no whole one follows), -1 when the next does not.

    Such a record has the same length varint, an attributes byte (unused in v2), a timestamp
    delta of the same width (1 or 2 bytes), its index as offset delta in the same width, the
    same key length and value length varints, and a header count of 0 ending it: read as
    :func:`_scan_records` reads it, it passes every check the first one passed. Each column
    (a field's byte in every record of the run) is one strided slice, compared at C speed.
    The summary gets the run's timestamp deltas, keyless records; the offsets are in order."""
    size = pos - first
    lw = _varint_width(data, first)
    td_at = first + lw + 1                            # the timestamp delta, after the attributes
    tw = _varint_width(data, td_at)
    od_at = td_at + tw                                # the offset delta: i - 1 if in order
    ow = _varint_width(data, od_at)
    if tw > 2 or ow > OD_WIDTH_MAX or data[od_at:od_at + ow] != _zigzag(i - 1, 5):
        return -1                                     # offsets not in order, or wide fields: one by one
    if i == _od_width_end(ow):
        return 0                                      # the next offset delta is a byte wider
    kl_at = od_at + ow                                # the key length
    kw = _varint_width(data, kl_at)
    kl, _ = _varint(data, kl_at, pos)
    vl_at = kl_at + kw + max(kl, 0)                   # the value length
    vw = _varint_width(data, vl_at)
    vl, _ = _varint(data, vl_at, pos)
    if vl_at + vw + max(vl, 0) != pos - 1 or data[pos - 1]:
        return -1                                     # headers: parsed one by one
    k = min(stop - i, (end - pos) // size, _od_width_end(ow) - i, RUN_MAX)
    if k <= 0:
        return 0
    lim = pos + k * size

    def column(at: int) -> bytes:
        return data[pos + at - first:lim:size]

    for at in (*range(first, first + lw), *range(kl_at, kl_at + kw), *range(vl_at, vl_at + vw)):
        if column(at) != bytes((data[at],)) * k:
            return -1
    if column(pos - 1) != bytes(k):
        return -1
    for j in range(ow):
        if column(od_at + j) != _od_column(i, k, ow, j):
            return -1
    if tw == 1:
        td = column(td_at)
        if max(td) >= 0x80:
            return -1
        deltas = [_Z1[b] for b in set(td)]
    else:
        lows, highs = column(td_at), column(td_at + 1)
        if min(lows) < 0x80 or max(highs) >= 0x80:
            return -1
        deltas = [_Z2[(a & 0x7F) | b << 7] for a, b in set(zip(lows, highs))]
    s.lo = min(s.lo, *deltas)
    s.hi = max(s.hi, *deltas)
    if kl < 0:
        s.keyless += k
    return k


def _scan_records(data, pos: int, end: int, i: int, stop: int, s: RecordSummary) -> tuple[int, int]:
    """:func:`_scan` one record at a time: one- and two-byte varints (nearly all of them) are
    read inline from tables; a field read past its record is caught by the record's length
    check at its end (or by the end of ``data``)."""
    lo, hi, ordered, keyless = s.lo, s.hi, s.ordered, s.keyless
    if lo is None and i < stop and pos < end:
        lo, hi = (1 << 63), -(1 << 63)
    z1, z2 = _Z1, _Z2
    last_td = None
    try:
        for i in range(i, stop):
            if pos >= end:
                break
            b = data[pos]
            if b < 0x80:
                length = z1[b]
                p = pos + 1
            elif pos + 1 < end and data[pos + 1] < 0x80:
                length = z2[(b & 0x7F) | data[pos + 1] << 7]
                p = pos + 2
            else:
                try:
                    r = _varint(data, pos, end)
                except KafkaError:
                    raise _LengthTooLong("Varint is too long, the most significant bit in the 5th byte is set") \
                        from None
                if r is None:
                    break
                length, p = r
            rend = p + length
            if rend > end:
                break
            if length <= 0:
                raise _invalid(f"Invalid record size: expected to read {length} bytes in record payload")
            b = data[p + 1]                          # (after the attributes byte, unused in v2)
            if b < 0x80:
                td = z1[b]
                p += 2
            elif data[p + 2] < 0x80:
                td = z2[(b & 0x7F) | data[p + 2] << 7]
                p += 3
            else:
                td, p = _varint(data, p + 1, rend, 10) or _short()
            if td != last_td:                        # (records of one batch mostly share a few)
                last_td = td
                if td < lo:
                    lo = td
                if td > hi:
                    hi = td
            b = data[p]
            if b < 0x80:
                if z1[b] != i:
                    ordered = False
                p += 1
            elif data[p + 1] < 0x80:
                if z2[(b & 0x7F) | data[p + 1] << 7] != i:
                    ordered = False
                p += 2
            else:
                od, p = _varint(data, p, rend) or _short()
                if od != i:
                    ordered = False
            b = data[p]
            if b < 0x80:
                p += 1
                if b & 1:
                    keyless += 1                     # a negative length: no key
                else:
                    p += b >> 1
            else:
                kl, p = _varint(data, p, rend) or _short()
                if kl >= 0:
                    p += kl
                else:
                    keyless += 1
            b = data[p]
            if b < 0x80:
                p += 1 if b & 1 else 1 + (b >> 1)
            elif data[p + 1] < 0x80:
                vl = z2[(b & 0x7F) | data[p + 1] << 7]
                p += 2 + vl if vl > 0 else 2
            else:
                vl, p = _varint(data, p, rend) or _short()
                if vl > 0:
                    p += vl
            if data[p]:
                p = _headers(data, p, rend)
            else:
                p += 1
            if p != rend:
                raise _invalid(f"Invalid record size: expected to read {length} bytes in record payload, but "
                               f"instead read {length + p - rend}")
            pos = rend
        else:
            i = stop
    except IndexError:
        raise _structure() from None
    s.lo, s.hi, s.ordered, s.keyless = lo, hi, ordered, keyless
    return pos, i


def _headers(data, p: int, rend: int) -> int:
    """Step over a record's headers (count at ``p``, not 0); return the position after them."""
    hc, p = _varint(data, p, rend) or _short()
    if hc < 0:
        raise _invalid(f"Found invalid number of record headers {hc}")
    if hc > rend - p:
        raise _invalid(f"Found invalid number of record headers. {hc} is larger than the remaining "
                       f"size of the buffer")
    for _ in range(hc):
        hk, p = _varint(data, p, rend) or _short()
        if hk < 0:
            raise _invalid(f"Invalid negative header key size {hk}")
        p += hk
        hv, p = _varint(data, p, rend) or _short()
        if hv > 0:
            p += hv
    return p


def _scan_visiting(data, pos: int, end: int, i: int, stop: int, s: RecordSummary) -> tuple[int, int]:
    """:func:`_scan` for a walk with a ``visit``: the same checks, each record's fields handed out.
    Parse the whole records in ``data[pos:end]``, indexes ``i`` up to ``stop``; return where
    parsing stopped ``(position, index)``: at ``stop``, or at the first record not wholly in the
    buffer (its length varint or body crossing ``end``)."""
    lo, hi, ordered, keyless, visit = s.lo, s.hi, s.ordered, s.keyless, s.visit
    if lo is None and i < stop and pos < end:
        lo, hi = (1 << 63), -(1 << 63)
    try:
        while i < stop and pos < end:
            b = data[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                p = pos + 1
            elif pos + 1 < end and data[pos + 1] < 0x80:
                length = (b & 0x7F) | data[pos + 1] << 7
                length = (length >> 1) ^ -(length & 1)
                p = pos + 2
            else:
                try:
                    r = _varint(data, pos, end)
                except KafkaError:
                    raise _LengthTooLong("Varint is too long, the most significant bit in the 5th byte is set") \
                        from None
                if r is None:
                    break
                length, p = r
            rend = p + length
            if rend > end:
                break
            if length <= 0:
                raise _invalid(f"Invalid record size: expected to read {length} bytes in record payload")
            p += 1                                   # attributes (unused in v2)
            b = data[p]
            if b < 0x80:
                td = (b >> 1) ^ -(b & 1)
                p += 1
            elif data[p + 1] < 0x80:
                td = (b & 0x7F) | data[p + 1] << 7
                td = (td >> 1) ^ -(td & 1)
                p += 2
            else:
                td, p = _varint(data, p, rend, 10) or _short()
            b = data[p]
            if b < 0x80:
                od = (b >> 1) ^ -(b & 1)
                p += 1
            elif data[p + 1] < 0x80:
                od = (b & 0x7F) | data[p + 1] << 7
                od = (od >> 1) ^ -(od & 1)
                p += 2
            else:
                od, p = _varint(data, p, rend) or _short()
            b = data[p]
            if b < 0x80:
                kl = (b >> 1) ^ -(b & 1)
                p += 1
            elif data[p + 1] < 0x80:
                kl = (b & 0x7F) | data[p + 1] << 7
                kl = (kl >> 1) ^ -(kl & 1)
                p += 2
            else:
                kl, p = _varint(data, p, rend) or _short()
            kp = p
            if kl >= 0:
                p += kl
            else:
                keyless += 1
            b = data[p]
            if b < 0x80:
                vl = (b >> 1) ^ -(b & 1)
                p += 1
            elif data[p + 1] < 0x80:
                vl = (b & 0x7F) | data[p + 1] << 7
                vl = (vl >> 1) ^ -(vl & 1)
                p += 2
            else:
                vl, p = _varint(data, p, rend) or _short()
            if vl > 0:
                p += vl
            b = data[p]
            if b:                                    # headers
                if b < 0x80:
                    hc = (b >> 1) ^ -(b & 1)
                    p += 1
                else:
                    hc, p = _varint(data, p, rend) or _short()
                if hc < 0:
                    raise _invalid(f"Found invalid number of record headers {hc}")
                if hc > rend - p:
                    raise _invalid(f"Found invalid number of record headers. {hc} is larger than the remaining "
                                   f"size of the buffer")
                for _ in range(hc):
                    hk, p = _varint(data, p, rend) or _short()
                    if hk < 0:
                        raise _invalid(f"Invalid negative header key size {hk}")
                    p += hk
                    hv, p = _varint(data, p, rend) or _short()
                    if hv > 0:
                        p += hv
            else:
                p += 1
            if p != rend:
                raise _invalid(f"Invalid record size: expected to read {length} bytes in record payload, but "
                               f"instead read {length + p - rend}")
            if td < lo:
                lo = td
            if td > hi:
                hi = td
            if od != i:
                ordered = False
            if visit is not None:
                visit(i, td, od, kl, vl, _key(data, kp, kl) if s.keys and kl >= 0 else None)
            i += 1
            pos = rend
    except IndexError:
        raise _structure() from None
    s.lo, s.hi, s.ordered, s.keyless = lo, hi, ordered, keyless
    return pos, i


def _key(data, p: int, n: int):
    if n <= KEY_INLINE:
        return bytes(data[p:p + n])
    return "md5", hashlib.md5(data[p:p + n]).digest()


def _short():
    raise _structure()


def walk_records(buf, pos: int, size: int, count: int, codec: int, *, visit=None, keys: bool = False,
                 block_limit: int = 32 << 20) -> Generator[Step, None, RecordSummary]:
    """Walk the ``count`` records of the batch at ``buf[pos:pos + size]`` (its header already
    checked), compressed with ``codec``. Yields checkpoints; returns the :class:`RecordSummary`."""
    s = RecordSummary(visit, keys)
    payload = memoryview(buf)[pos + HEADER_SIZE:pos + size]
    if count <= 0:
        if len(payload) and not codec:
            raise _remaining()
        return s
    if not codec:
        # (indexing bytes is faster than a memoryview: worth the copy, but for a section so large
        # that the copy alone would hold an event loop)
        data = bytes(payload) if len(payload) <= COPY_AT_ONCE else payload
        end = len(data)
        p = i = 0
        while True:
            stop = min(count, i + SLICE_RECORDS)
            try:
                p, i = _scan(data, p, end, i, stop, s)
            except _LengthTooLong as e:
                raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, e.message) from None
            if i == count:
                break
            if i < stop:
                # Kafka's uncompressed iterator: the bytes end before a record does
                raise _premature() if p >= end else _invalid(
                    "Invalid record size: the record runs past the end of the batch")
            yield None
        if p != end:
            raise _remaining()
        s.count = i
        return s
    stream = compression.inflater(codec, payload, block_limit)
    data = b""
    p = i = 0
    while True:
        stop = min(count, i + SLICE_RECORDS)
        p, i = _scan(data, p, len(data), i, stop, s)
        if i == count:
            break
        if i == stop:
            yield None
            continue
        # the record at p is not wholly in the buffer: stream it if it is large, else read on
        r = _varint(data, p, len(data)) if p < len(data) else None
        if r is not None and r[1] - p + r[0] > INLINE_RECORD:
            data, p = yield from _stream_record(stream, data, p, i, s)
            i += 1
            continue
        if stream.heavy:
            yield stream.prepare
        more = stream.read(CHUNK)
        if not more:
            raise _premature()
        data = data[p:] + more if p < len(data) else more
        p = 0
        yield None
    if p < len(data) or stream.read(1):
        raise _remaining()
    s.count = i
    return s


class _Reader:
    """The decompressed stream from a position on, read in chunks: ``taken`` counts the bytes
    consumed since it was last reset."""

    __slots__ = ("stream", "data", "p", "taken")

    def __init__(self, stream, data, p: int):
        self.stream, self.data, self.p, self.taken = stream, data, p, 0

    def fill(self, n: int):
        """At least ``n`` bytes at the position (fewer only at the stream's end)."""
        while len(self.data) - self.p < n:
            if self.stream.heavy:
                yield self.stream.prepare
            more = self.stream.read(CHUNK)
            if not more:
                return
            self.data = self.data[self.p:] + more
            self.p = 0

    def varint(self, max_bytes: int = 5):
        yield from self.fill(max_bytes)
        r = _varint(self.data, self.p, len(self.data), max_bytes)
        if r is None:
            raise _premature()
        self.taken += r[1] - self.p
        self.p = r[1]
        return r[0]

    def byte(self):
        yield from self.fill(1)
        if self.p >= len(self.data):
            raise _premature()
        self.p += 1
        self.taken += 1
        return self.data[self.p - 1]

    def copy(self, n: int, sink) -> Generator:
        """The next ``n`` bytes handed to ``sink`` in chunks."""
        self.taken += n
        while n > 0:
            left = len(self.data) - self.p
            if left >= n:
                sink(self.data[self.p:self.p + n])
                self.p += n
                return
            if left:
                sink(self.data[self.p:])
                n -= left
            self.data, self.p = b"", 0
            yield from self.fill(1)
            if not self.data:
                raise _premature()
            yield None

    def skip(self, n: int):
        self.taken += n
        while n > 0:
            left = len(self.data) - self.p
            if left >= n:
                self.p += n
                return
            n -= left
            self.data, self.p = b"", 0
            yield from self.fill(1)
            if not self.data:
                raise _premature()
            yield None


def _stream_record(stream, data, p: int, i: int, s: RecordSummary):
    """One record too large to hold, read field by field from the stream with the checks of
    :func:`_scan`. Returns the buffer and position after it."""
    r = _Reader(stream, data, p)
    length = yield from r.varint()
    r.taken = 0

    def within(n: int, what: str):
        if r.taken + n > length:
            raise _invalid(f"Invalid record size: {what} runs past the record")

    within(1, "the record")
    yield from r.skip(1)                              # attributes
    td = yield from r.varint(10)
    od = yield from r.varint()
    kl = yield from r.varint()
    key = None
    if kl >= 0:
        within(kl, "the key")
        if not s.keys:
            yield from r.skip(kl)
        elif kl <= KEY_INLINE:
            yield from r.fill(kl)
            key = bytes(r.data[r.p:r.p + kl])
            yield from r.skip(kl)
        else:
            digest = hashlib.md5()
            yield from r.copy(kl, digest.update)
            key = "md5", digest.digest()
    else:
        s.keyless += 1
    vl = yield from r.varint()
    if vl > 0:
        within(vl, "the value")
        yield from r.skip(vl)
    hc = yield from r.varint()
    if hc < 0:
        raise _invalid(f"Found invalid number of record headers {hc}")
    if hc > length - r.taken:
        raise _invalid(f"Found invalid number of record headers. {hc} is larger than the remaining size of "
                       f"the buffer")
    for _ in range(hc):
        hk = yield from r.varint()
        if hk < 0:
            raise _invalid(f"Invalid negative header key size {hk}")
        within(hk, "a header key")
        yield from r.skip(hk)
        hv = yield from r.varint()
        if hv > 0:
            within(hv, "a header value")
            yield from r.skip(hv)
    if r.taken != length:
        raise _invalid(f"Invalid record size: expected to read {length} bytes in record payload, but instead "
                       f"read {r.taken}")
    if s.lo is None:
        s.lo = s.hi = td
    else:
        s.lo, s.hi = min(s.lo, td), max(s.hi, td)
    if od != i:
        s.ordered = False
    if s.visit is not None:
        s.visit(i, td, od, kl, vl, key)
    return r.data, r.p


class _Plain:
    """An uncompressed records section read as an :class:`~minikafka.protocol.compression.Inflater`."""

    heavy = False

    def __init__(self, data):
        self._src = data
        self._pos = 0

    def read(self, n: int) -> bytes:
        out = bytes(self._src[self._pos:self._pos + n])
        self._pos += len(out)
        return out

    def prepare(self) -> None:
        pass


def _java_long(x: int) -> int:
    return (x + (1 << 63)) % (1 << 64) - (1 << 63)


def reencode_records(buf, pos: int, size: int, count: int, codec: int, target: int, fields, *,
                     level: int | None = None, limit: int | None = None,
                     block_limit: int = 32 << 20) -> Generator[Step, None, bytes]:
    """The records of a batch (already walked: well formed) written again, compressed with
    ``target``: ``fields(index, timestamp delta, offset delta)`` gives each record's new
    ``(timestamp delta, offset delta)``, or None to leave it out; its attributes, key, value and
    headers are copied as they are, in chunks, so a record of any size passes through bounded
    memory. With ``limit``, MESSAGE_TOO_LARGE as soon as the new section passes it."""
    payload = memoryview(buf)[pos + HEADER_SIZE:pos + size]
    source = compression.inflater(codec, payload, block_limit) if codec else _Plain(payload)
    out = bytearray()
    if target:
        d = compression.deflater(target, level)

        def sink(data):
            out.extend(d.write(data))
    else:
        d = None
        sink = out.extend

    def dropped(_data):
        pass

    r = _Reader(source, b"", 0)
    for i in range(count):
        length = yield from r.varint()
        r.taken = 0
        attributes = yield from r.byte()
        td = yield from r.varint(10)
        od = yield from r.varint()
        rest = length - r.taken
        new = fields(i, td, od)
        if new is None:
            yield from r.copy(rest, dropped)
        else:
            head = bytes([attributes]) + _zigzag(new[0], 10) + _zigzag(new[1], 5)
            sink(_zigzag(len(head) + rest, 5) + head)
            yield from r.copy(rest, sink)
            if limit is not None and len(out) > limit:
                raise KafkaError(ErrorCode.MESSAGE_TOO_LARGE, f"The rebuilt record batch is larger than {limit} bytes")
        if i % SLICE_RECORDS == SLICE_RECORDS - 1:
            yield None
    if d is not None:
        out += d.finish()
    if limit is not None and len(out) > limit:
        raise KafkaError(ErrorCode.MESSAGE_TOO_LARGE, f"The rebuilt record batch is larger than {limit} bytes")
    return bytes(out)


def rebuild_records(buf, pos: int, size: int, count: int, codec: int, target: int, *, level: int | None = None,
                    same_timestamps: bool = False, limit: int,
                    block_limit: int = 32 << 20) -> Generator[Step, None, tuple[bytes, int]]:
    """The records of a batch re-encoded as Kafka's ``MemoryRecordsBuilder`` writes them when it
    rebuilds a batch: offset deltas 0, 1, ..., timestamp deltas from the first record's timestamp
    (0 with ``same_timestamps``: a batch whose records all carry its LogAppendTime); compressed
    with ``target``. Returns the new section and the first record's timestamp delta."""
    first = []

    def fields(i, td, _od):
        if not first:
            first.append(td)
        return 0 if same_timestamps else _java_long(td - first[0]), i

    section = yield from reencode_records(buf, pos, size, count, codec, target, fields, level=level, limit=limit,
                                         block_limit=block_limit)
    return section, first[0] if first else 0


def _zigzag(value: int, max_bytes: int) -> bytes:
    v = ((value << 1) ^ (value >> 63)) & _MASK64 if max_bytes == 10 else ((value << 1) ^ (value >> 31)) & _MASK32
    out = bytearray()
    while v & ~0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def run(steps: Generator):
    """Drive a walk (or any generator of these steps) to its end in this thread: each callable
    step is run here. Returns the generator's value."""
    try:
        step = next(steps)
        while True:
            if step is not None:
                step()
            step = steps.send(None)
    except StopIteration as done:
        return done.value
