"""Kafka's record codecs: gzip (zlib), snappy (cramjam), lz4 (python-lz4), zstd (zstandard).

Sans-I/O. A records section is read through an :class:`Inflater`: a stream that hands out at
most ``n`` decompressed bytes per step, whatever the compression ratio, with a small bounded
amount of codec state (a 32 KB gzip window, an lz4 block of at most 4 MB, a zstd window of at
most 128 MB as zstd-jni's default limit, a snappy block of at most ``block_limit``). How each
stream ends, and what is left after it, follows the Java readers Kafka 4.1 uses:
``GZIPInputStream`` (concatenated members; bytes after the last that are not a member are
ignored), snappy-java's ``SnappyInputStream`` (snappy-java framing, or one raw block; fewer than
4 bytes after the last block are ignored), Kafka's ``Lz4BlockInputStream`` (one frame; bytes
after its end mark ignored), zstd-jni (frames back to back, nothing else).

A stream the codec cannot read is :class:`CodecError`: UNKNOWN_SERVER_ERROR, as Kafka answers
the ``KafkaException("Failed to decompress record stream")`` its iterators throw.
"""
from __future__ import annotations

import struct
import zlib

from minikafka.protocol.errors import ErrorCode, KafkaError

__all__ = ["NONE", "GZIP", "SNAPPY", "LZ4", "ZSTD", "CodecError", "Inflater", "inflater", "compress",
           "decompress", "Deflater", "deflater"]

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4

FEED = 64 * 1024                    # compressed bytes handed to a codec per step
HEAVY_BLOCK = 1 << 20               # a snappy block inflating past this is worth a worker thread


class CodecError(KafkaError):
    def __init__(self, codec: int, reason):
        super().__init__(ErrorCode.UNKNOWN_SERVER_ERROR,
                         f"Failed to decompress record stream ({_NAMES.get(codec, codec)}): {reason}")


_NAMES = {GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}


class Inflater:
    """A decompressed records section, read in bounded steps. ``heavy`` says the next step is
    one large decompression (a big snappy block): a caller with a worker thread may run
    :meth:`prepare` there first; :meth:`read` then only hands out what it produced."""

    heavy = False

    def read(self, n: int) -> bytes:
        """At most ``n`` bytes (at least one unless the stream has ended: then b"")."""
        raise NotImplementedError

    def prepare(self) -> None:
        """Do the next step's decompression now (thread-safe with respect to nothing else)."""


def inflater(codec: int, data, block_limit: int = 32 << 20) -> Inflater:
    """A stream over the compressed records section ``data`` (any buffer; not copied).
    ``block_limit`` bounds a snappy block's declared size: a larger one is MESSAGE_TOO_LARGE."""
    if codec == GZIP:
        return _GzipInflater(data)
    if codec == SNAPPY:
        return _SnappyInflater(data, block_limit)
    if codec == LZ4:
        return _Lz4Inflater(data)
    if codec == ZSTD:
        return _ZstdInflater(data)
    raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"Unknown compression type id: {codec}")


class _GzipInflater(Inflater):
    def __init__(self, data):
        self._src = memoryview(data).cast("B")
        self._pos = 0
        self._d = zlib.decompressobj(31)
        self._done = False

    def _more(self) -> bytes:
        piece = self._src[self._pos:self._pos + FEED]
        self._pos += len(piece)
        return piece

    def read(self, n: int) -> bytes:
        d = self._d
        while not self._done:
            if d.eof:
                rest = d.unused_data + bytes(self._src[self._pos:self._pos + FEED])
                self._pos += FEED
                # GZIPInputStream reads another member only where one starts; else it ends there
                if len(rest) < 10 or rest[:2] != b"\x1f\x8b":
                    self._done = True
                    return b""
                d = self._d = zlib.decompressobj(31)
                data = rest
            else:
                data = d.unconsumed_tail or self._more()
                if not data:
                    raise CodecError(GZIP, "Unexpected end of ZLIB input stream")
            try:
                out = d.decompress(data, n)
            except zlib.error as e:
                raise CodecError(GZIP, e) from None
            if out:
                return out
        return b""


class _Lz4Inflater(Inflater):
    def __init__(self, data):
        import lz4.frame
        self._src = memoryview(data).cast("B")
        self._pos = 0
        self._d = lz4.frame.LZ4FrameDecompressor()
        self._done = False

    def read(self, n: int) -> bytes:
        d = self._d
        while not self._done:
            if d.needs_input:
                data = self._src[self._pos:self._pos + FEED]
                self._pos += len(data)
                if not data:
                    raise CodecError(LZ4, "Stream ended prematurely")
            else:
                data = b""
            try:
                out = d.decompress(data, max_length=n)
            except RuntimeError as e:
                raise CodecError(LZ4, e) from None
            if d.eof:
                # Kafka's reader stops at the frame's end mark: whatever follows is ignored
                self._done = True
            if out:
                return out
        return b""


_ZSTD_MAGIC = 0xFD2FB528
_SKIPPABLE = 0x184D2A50
_U32LE = struct.Struct("<I")


def _zstd_pieces(src) -> list[tuple[int, int, bool]]:
    """The frames of a zstd stream cut where a decoder may stop: ``(start, end, frame start)``
    for each frame header with its first block, then each further block (a block inflates to at
    most 128 KB). Skippable frames are passed over. Anything that is not whole frames back to
    back is a :class:`CodecError`, as zstd-jni fails on it."""
    out = []
    pos, n = 0, len(src)
    while pos < n:
        if n - pos < 4:
            raise CodecError(ZSTD, "Unknown frame descriptor")
        magic = _U32LE.unpack_from(src, pos)[0]
        if magic & 0xFFFFFFF0 == _SKIPPABLE:
            if n - pos < 8:
                raise CodecError(ZSTD, "Truncated skippable frame")
            pos += 8 + _U32LE.unpack_from(src, pos + 4)[0]
            if pos > n:
                raise CodecError(ZSTD, "Truncated skippable frame")
            continue
        if magic != _ZSTD_MAGIC:
            raise CodecError(ZSTD, "Unknown frame descriptor")
        if n - pos < 5:
            raise CodecError(ZSTD, "Truncated frame header")
        fhd = src[pos + 4]
        single = fhd >> 5 & 1
        fcs = fhd >> 6
        header = 5 + (0 if single else 1) + (0, 1, 2, 4)[fhd & 3] + ((1 if single else 0), 2, 4, 8)[fcs]
        checksum = 4 if fhd & 4 else 0
        start = pos
        p = pos + header
        first = True
        while True:
            if n - p < 3:
                raise CodecError(ZSTD, "Truncated block")
            bh = src[p] | src[p + 1] << 8 | src[p + 2] << 16
            kind = bh >> 1 & 3
            if kind == 3:
                raise CodecError(ZSTD, "Corrupted block detected")
            end = p + 3 + (1 if kind == 1 else bh >> 3)
            if bh & 1:
                end += checksum
            if end > n:
                raise CodecError(ZSTD, "Truncated block")
            out.append((start, end, first))
            first = False
            start = p = end
            if bh & 1:
                break
        pos = p
    return out


HEAVY_WINDOW = 8 << 20              # a zstd frame whose window is larger starts in a worker thread


class _ZstdInflater(Inflater):
    def __init__(self, data):
        import zstandard
        self._zstandard = zstandard
        self._src = memoryview(data).cast("B")
        self._pieces = _zstd_pieces(self._src)
        self._next = 0
        self._dctx = zstandard.ZstdDecompressor()
        self._d = None
        self._out = b""
        self._at = 0

    @property
    def heavy(self) -> bool:
        """The next step starts a frame with a large window (its decoder allocates the window)."""
        if self._at < len(self._out) or self._next >= len(self._pieces):
            return False
        start, end, first = self._pieces[self._next]
        if not first:
            return False
        try:
            return self._zstandard.get_frame_parameters(self._src[start:end]).window_size > HEAVY_WINDOW
        except self._zstandard.ZstdError as e:
            raise CodecError(ZSTD, e) from None

    def prepare(self) -> None:
        if self._at < len(self._out) or self._next >= len(self._pieces):
            return
        start, end, first = self._pieces[self._next]
        self._next += 1
        if first:
            self._d = self._dctx.decompressobj()
        try:
            self._out = self._d.decompress(self._src[start:end])
        except self._zstandard.ZstdError as e:
            raise CodecError(ZSTD, e) from None
        self._at = 0

    def read(self, n: int) -> bytes:
        while self._at >= len(self._out):
            if self._next >= len(self._pieces):
                return b""
            self.prepare()
        out = self._out[self._at:self._at + n]
        self._at += len(out)
        return out


_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")          # magic, version, min compatible version
_XERIAL_BLOCK = 32 * 1024                        # snappy-java's default block size
_I32 = struct.Struct(">i")


def _snappy_length(block) -> int:
    """The uncompressed length a raw snappy block declares (its leading varint)."""
    result = shift = 0
    for i in range(min(5, len(block))):
        b = block[i]
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result
        shift += 7
    raise CodecError(SNAPPY, "Invalid input: bad uncompressed length")


class _SnappyInflater(Inflater):
    def __init__(self, data, block_limit: int):
        self._src = memoryview(data).cast("B")
        self._limit = block_limit
        self._xerial = len(self._src) >= _XERIAL_HEADER.size and self._src[:8] == _XERIAL_MAGIC
        self._pos = _XERIAL_HEADER.size if self._xerial else 0
        self._raw_done = False
        self._block = None           # the next block's compressed bytes, once found
        self._out = b""
        self._at = 0
        self.heavy = False
        self._find_block()

    def _find_block(self) -> None:
        """Locate the next block and check what it declares (sets ``heavy``)."""
        src, pos = self._src, self._pos
        if self._xerial:
            if len(src) - pos < 4:   # SnappyInputStream: fewer than 4 bytes left is the end
                self._block = None
                return
            size = _I32.unpack_from(src, pos)[0]
            pos += 4
            if size < 0 or pos + size > len(src):
                raise CodecError(SNAPPY, f"failed to read chunk of {size} bytes")
            self._block = src[pos:pos + size]
            self._pos = pos + size
        elif self._raw_done:
            self._block = None
            return
        elif not len(src):
            raise CodecError(SNAPPY, "empty input")
        else:
            self._block = src
            self._raw_done = True
        declared = _snappy_length(self._block)
        if declared > self._limit:
            raise KafkaError(ErrorCode.MESSAGE_TOO_LARGE,
                             f"A snappy block inflating to {declared} bytes exceeds the broker's bound of "
                             f"{self._limit} bytes per block")
        self.heavy = declared > HEAVY_BLOCK

    def prepare(self) -> None:
        if self._at >= len(self._out) and self._block is not None:
            import cramjam
            try:
                self._out = bytes(cramjam.snappy.decompress_raw(self._block))
            except Exception as e:  # cramjam.DecompressionError
                raise CodecError(SNAPPY, e) from None
            self._at = 0
            self._find_block()

    def read(self, n: int) -> bytes:
        while self._at >= len(self._out):
            if self._block is None:
                return b""
            self.prepare()
        out = self._out[self._at:self._at + n]
        self._at += len(out)
        return out


def decompress(codec: int, data) -> bytes:
    """A whole records section inflated (the broker's own batches, tools and tests: input whose
    size is known to be sane)."""
    if codec == NONE:
        return bytes(data)
    stream = inflater(codec, data, block_limit=1 << 62)
    parts = []
    while True:
        out = stream.read(1 << 22)
        if not out:
            return b"".join(parts)
        parts.append(out)


# ---------------------------------------------------------------------------
# Compression
# ---------------------------------------------------------------------------

class Deflater:
    """A records section compressed as a stream: :meth:`write` returns what is ready,
    :meth:`finish` the rest."""

    def write(self, data) -> bytes:
        raise NotImplementedError

    def finish(self) -> bytes:
        raise NotImplementedError


class _Gzip(Deflater):
    def __init__(self, level):
        self._c = zlib.compressobj(6 if level is None or level < 0 else level, zlib.DEFLATED, 31)

    def write(self, data) -> bytes:
        return self._c.compress(data)

    def finish(self) -> bytes:
        return self._c.flush()


class _Snappy(Deflater):
    """snappy-java's ``SnappyOutputStream`` framing (32 KB blocks), as the Java producer writes."""

    def __init__(self):
        self._pending = bytearray()
        self._started = False

    def _blocks(self, final: bool) -> bytes:
        import cramjam
        out = bytearray()
        if not self._started:
            out += _XERIAL_HEADER.pack(_XERIAL_MAGIC, 1, 1)
            self._started = True
        p = self._pending
        while len(p) >= _XERIAL_BLOCK or (final and p):
            block = bytes(cramjam.snappy.compress_raw(bytes(p[:_XERIAL_BLOCK])))
            del p[:_XERIAL_BLOCK]
            out += _I32.pack(len(block))
            out += block
        return bytes(out)

    def write(self, data) -> bytes:
        self._pending += data
        return self._blocks(False)

    def finish(self) -> bytes:
        return self._blocks(True)


class _Lz4(Deflater):
    """64 KB independent blocks, no checksums: what Kafka's ``Lz4BlockOutputStream`` writes."""

    def __init__(self, level):
        import lz4.frame
        self._c = lz4.frame.LZ4FrameCompressor(block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False,
                                               content_checksum=False, block_checksum=False,
                                               compression_level=0 if level is None else level)
        self._head = self._c.begin()

    def write(self, data) -> bytes:
        out = self._head + self._c.compress(data)
        self._head = b""
        return out

    def finish(self) -> bytes:
        out = self._head + self._c.flush()
        self._head = b""
        return out


class _Zstd(Deflater):
    def __init__(self, level):
        import zstandard
        self._c = zstandard.ZstdCompressor(level=3 if level is None else level).compressobj()

    def write(self, data) -> bytes:
        return self._c.compress(data)

    def finish(self) -> bytes:
        return self._c.flush()


def deflater(codec: int, level: int | None = None) -> Deflater:
    if codec == GZIP:
        return _Gzip(level)
    if codec == SNAPPY:
        return _Snappy()
    if codec == LZ4:
        return _Lz4(level)
    if codec == ZSTD:
        return _Zstd(level)
    raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"Unknown compression type id: {codec}")


def compress(codec: int, data, level: int | None = None) -> bytes:
    """A whole records section compressed with a Kafka codec."""
    if codec == NONE:
        return bytes(data)
    if codec == GZIP:
        import gzip  # mtime 0: the same bytes for the same records
        return gzip.compress(data, compresslevel=6 if level is None or level < 0 else level, mtime=0)
    d = deflater(codec, level)
    return d.write(data) + d.finish()
