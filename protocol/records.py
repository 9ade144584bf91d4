"""Record batch v2 (magic 2): header parsing, validation, patching, encode/decode.

Sans-I/O: bytes in, values out. See ``shared/kafka-protocol/RECORD-BATCH.md``.

The produce and fetch paths work on the 61-byte batch headers (:func:`parse_header`,
:func:`validate_batches`, :func:`patch_base_offset`); a produced batch's records are read,
without being kept, by protocol/record_walk.py. Record encoding/decoding into values
(:func:`build_batch`, :func:`decode_batch`) is for tests, internal topics and tools.
"""
from __future__ import annotations

import enum
import struct
import time
from typing import Iterable, Iterator, NamedTuple, Sequence


from minikafka.protocol import compression
from minikafka.protocol.errors import ErrorCode, KafkaError

__all__ = [
    "HEADER_SIZE", "LOG_OVERHEAD", "MAGIC", "BatchHeader", "Compression", "TimestampType",
    "ControlRecordType", "Record", "parse_header", "iter_batch_headers", "validate_batch",
    "validate_batches", "next_batch_size", "base_offset_of", "patch_base_offset", "patch_partition_leader_epoch",
    "set_log_append_time", "set_create_time_max", "frame_batch",
    "compute_crc", "build_batch", "build_control_batch", "decode_batch", "decode_batches",
    "parse_control_record", "compress", "decompress", "crc32c",
]

def crc32c(data, value: int = 0) -> int:
    """CRC-32C (Castagnoli), from the crc32c package's C extension, loaded on first use;
    ``value``: the CRC of the bytes before ``data``."""
    global crc32c
    crc32c = _load_crc32c()
    return crc32c(data, value)


def _load_crc32c():
    """The crc32c package's C function, loaded without running the package's __init__, which
    imports importlib.metadata and argparse (20-100 ms, paid by a broker's first produce)."""
    import importlib.machinery
    import importlib.util
    import os
    spec = importlib.util.find_spec("crc32c")  # finds the package without importing it
    for folder in (spec.submodule_search_locations or []) if spec else []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, "_crc32c" + suffix)
            if os.path.exists(path):
                loader = importlib.machinery.ExtensionFileLoader("crc32c._crc32c", path)
                module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
                loader.exec_module(module)
                return module.crc32c
    from crc32c import crc32c as impl  # another layout: the package's public name
    return impl

# ---------------------------------------------------------------------------
# Header layout
# ---------------------------------------------------------------------------

_HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = _HEADER.size  # 61 (RECORD_BATCH_OVERHEAD)
assert HEADER_SIZE == 61
LOG_OVERHEAD = 12            # baseOffset + batchLength: bytes not counted by batchLength
MAGIC = 2
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD  # 49

BASE_OFFSET_OFFSET = 0
LENGTH_OFFSET = 8
PARTITION_LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
LAST_OFFSET_DELTA_OFFSET = 23
BASE_TIMESTAMP_OFFSET = 27
MAX_TIMESTAMP_OFFSET = 35
PRODUCER_ID_OFFSET = 43
PRODUCER_EPOCH_OFFSET = 51
BASE_SEQUENCE_OFFSET = 53
RECORDS_COUNT_OFFSET = 57

_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I16 = struct.Struct(">h")
_I8 = struct.Struct(">b")
_OFFSET_LENGTH = struct.Struct(">qi")          # first 12 bytes
_PREFIX = struct.Struct(">qiib")               # first 17 bytes: offset, length, epoch, magic

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20
DELETE_HORIZON_FLAG = 0x40

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1
NO_PARTITION_LEADER_EPOCH = -1


class Compression(enum.IntEnum):
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


class TimestampType(enum.IntEnum):
    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class ControlRecordType(enum.IntEnum):
    UNKNOWN = -1
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


class BatchHeader(NamedTuple):
    """The 61-byte v2 batch header (field names as in Kafka's DefaultRecordBatch)."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        return TimestampType.LOG_APPEND_TIME if self.attributes & TIMESTAMP_TYPE_MASK else TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & DELETE_HORIZON_FLAG)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def size(self) -> int:
        """Total size of the batch in bytes (batchLength + 12)."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_sequence(self) -> int:
        """Sequence of the last record (wraps after int32 max), or -1 without sequence."""
        if self.base_sequence < 0:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) & 0x7FFFFFFF


_make_header = BatchHeader._make
_unpack_header = _HEADER.unpack_from


def parse_header(buf, pos: int = 0) -> BatchHeader:
    """Parse the 61-byte header at ``pos``. CORRUPT_MESSAGE if fewer than 61 bytes remain."""
    if len(buf) - pos < HEADER_SIZE:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE,
                         f"Record batch header truncated: {len(buf) - pos} bytes, need {HEADER_SIZE}")
    return _make_header(_unpack_header(buf, pos))


def iter_batch_headers(buf, pos: int = 0, end: int | None = None) -> Iterator[tuple[int, BatchHeader]]:
    """Yield ``(position, header)`` for each complete batch stored back to back in ``buf``.

    Only the first 17 bytes are needed to find a batch's extent; the walk stops
    cleanly at a trailing partial batch (as Kafka's readers do for fetch
    responses cut at ``max_bytes``) or at a length too small to be a v2 batch.
    No CRC or magic check here; use :func:`validate_batches` for untrusted input.
    """
    if end is None:
        end = len(buf)
    unpack_len = _I32.unpack_from
    while end - pos >= HEADER_SIZE:
        length = unpack_len(buf, pos + LENGTH_OFFSET)[0]
        if length < MIN_BATCH_LENGTH:
            return
        size = length + LOG_OVERHEAD
        if pos + size > end:
            return
        yield pos, _make_header(_unpack_header(buf, pos))
        pos += size


# LegacyRecord.RECORD_OVERHEAD_V0: the smallest size a batch of any magic can declare
MIN_ANY_BATCH_LENGTH = 14


def next_batch_size(buf, pos: int = 0) -> int | None:
    """Kafka's ``ByteBufferLogInputStream.nextBatch`` sizing: the size of the whole batch at
    ``pos``, or None when the bytes left hold no whole batch (Kafka's readers then see no
    batch there). A declared length below any magic's minimum or a magic outside 0-2 is
    CORRUPT_MESSAGE with Kafka's text. Reads 17 bytes: no CRC, nothing past the magic."""
    remaining = len(buf) - pos
    if remaining < LOG_OVERHEAD:
        return None
    length = _I32.unpack_from(buf, pos + LENGTH_OFFSET)[0]
    if length < MIN_ANY_BATCH_LENGTH:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE,
                         f"Record size {length} is less than the minimum record overhead ({MIN_ANY_BATCH_LENGTH})")
    if remaining <= MAGIC_OFFSET:
        return None
    magic = _I8.unpack_from(buf, pos + MAGIC_OFFSET)[0]
    if magic < 0 or magic > MAGIC:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, f"Invalid magic found in record: {magic}")
    size = length + LOG_OVERHEAD
    return size if remaining >= size else None


def compute_crc(buf, pos: int, size: int) -> int:
    """CRC-32C over bytes [pos+21, pos+size) (attributes to end of batch)."""
    return crc32c(memoryview(buf)[pos + ATTRIBUTES_OFFSET: pos + size])


def _too_large(size: int, max_size: int) -> KafkaError:
    return KafkaError(ErrorCode.MESSAGE_TOO_LARGE,
                      f"The record batch size ({size} bytes) exceeds the maximum configured "
                      f"(max.message.bytes = {max_size})")


def validate_batch(buf, pos: int = 0, end: int | None = None, max_size: int | None = None) -> BatchHeader:
    """Validate the batch at ``pos`` (sizes, magic, CRC, record count). Return its header.

    Errors mirror Kafka: a length below the v2 overhead or a batch running past
    the buffer is CORRUPT_MESSAGE, magic 0/1 is INVALID_RECORD (a produce v3+
    must carry magic 2), any other unknown magic is CORRUPT_MESSAGE, a batch
    larger than ``max_size`` (max.message.bytes, checked before the CRC) is
    MESSAGE_TOO_LARGE, a CRC mismatch is CORRUPT_MESSAGE, a negative count or
    lastOffsetDelta is INVALID_RECORD.
    """
    if end is None:
        end = len(buf)
    avail = end - pos
    if avail < 17:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, f"Record batch truncated at position {pos}: {avail} bytes left")
    _, length, _, magic = _PREFIX.unpack_from(buf, pos)
    if magic != MAGIC:
        if magic in (0, 1):
            raise KafkaError(ErrorCode.INVALID_RECORD,
                             f"Produce requests with version 3 and above must use magic v2; found magic {magic}")
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, f"Invalid magic found in record batch: {magic}")
    if length < MIN_BATCH_LENGTH:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE,
                         f"Record batch is corrupt (the size {length + LOG_OVERHEAD} is smaller than the minimum "
                         f"allowed overhead {HEADER_SIZE})")
    size = length + LOG_OVERHEAD
    if size > avail:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE,
                         f"Record batch at position {pos} declares {size} bytes but only {avail} are present")
    if max_size is not None and size > max_size:
        raise _too_large(size, max_size)
    header = _make_header(_unpack_header(buf, pos))
    computed = crc32c(memoryview(buf)[pos + ATTRIBUTES_OFFSET: pos + size])
    if computed != header.crc:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE,
                         f"Record is corrupt (stored crc = {header.crc}, computed crc = {computed})")
    if header.records_count < 0:
        raise KafkaError(ErrorCode.INVALID_RECORD, f"Invalid reported count for record batch: {header.records_count}")
    if header.last_offset_delta < 0:
        raise KafkaError(ErrorCode.INVALID_RECORD,
                         f"Batch has an invalid offset range: lastOffsetDelta {header.last_offset_delta}")
    return header


def validate_batches(buf, pos: int = 0, end: int | None = None,
                     max_size: int | None = None) -> list[tuple[int, BatchHeader]]:
    """Validate every batch in ``buf[pos:end]``; return ``[(position, header), ...]``.

    All-or-nothing: raises :class:`KafkaError` on the first problem, including
    trailing bytes that do not form a whole batch. An empty buffer gives [].
    """
    if end is None:
        end = len(buf)
    out = []
    while pos < end:
        header = validate_batch(buf, pos, end, max_size)
        out.append((pos, header))
        pos += header.batch_length + LOG_OVERHEAD
    return out


def own_batches(buf, max_size: int | None = None) -> list[tuple[int, BatchHeader]]:
    """``[(position, header), ...]`` of batches this broker built a moment ago (coordinator
    records, markers: well-formed, their CRC just computed): only the size limit is checked,
    as :func:`validate_batches` checks it."""
    out = list(iter_batch_headers(buf))
    if max_size is not None:
        for _, header in out:
            if header.size > max_size:
                raise _too_large(header.size, max_size)
    return out


# ---------------------------------------------------------------------------
# In-place patches
# ---------------------------------------------------------------------------

def base_offset_of(buf, pos: int = 0) -> int:
    """The baseOffset of the batch at ``pos`` (its first 8 bytes)."""
    return _I64.unpack_from(buf, pos + BASE_OFFSET_OFFSET)[0]


def patch_base_offset(buf: bytearray, pos: int, base_offset: int) -> None:
    """Set baseOffset (outside the CRC; no recompute needed)."""
    _I64.pack_into(buf, pos + BASE_OFFSET_OFFSET, base_offset)


def patch_partition_leader_epoch(buf: bytearray, pos: int, epoch: int) -> None:
    """Set partitionLeaderEpoch (outside the CRC; no recompute needed)."""
    _I32.pack_into(buf, pos + PARTITION_LEADER_EPOCH_OFFSET, epoch)


def set_create_time_max(buf: bytearray, pos: int, timestamp_ms: int, attributes: int | None = None) -> None:
    """Set a batch's maxTimestamp (and its attributes, when given: a CreateTime batch's, as Kafka's
    ``setMaxTimestamp(CREATE_TIME, ts)`` recomputes them) and recompute the CRC."""
    if attributes is not None:
        _I16.pack_into(buf, pos + ATTRIBUTES_OFFSET, attributes)
    _I64.pack_into(buf, pos + MAX_TIMESTAMP_OFFSET, timestamp_ms)
    size = _I32.unpack_from(buf, pos + LENGTH_OFFSET)[0] + LOG_OVERHEAD
    _U32.pack_into(buf, pos + CRC_OFFSET, compute_crc(buf, pos, size))


def set_log_append_time(buf: bytearray, pos: int, timestamp_ms: int) -> None:
    """Stamp LogAppendTime: attributes recomputed with the LogAppendTime bit (codec,
    transactional and control kept, as Kafka's ``computeAttributes``), maxTimestamp set, CRC
    recomputed. Nothing changes (and no CRC is computed) if already stamped with that time, as
    in Kafka's ``DefaultRecordBatch.setMaxTimestamp(LOG_APPEND_TIME, ts)``."""
    attrs = _I16.unpack_from(buf, pos + ATTRIBUTES_OFFSET)[0]
    max_ts = _I64.unpack_from(buf, pos + MAX_TIMESTAMP_OFFSET)[0]
    if attrs & TIMESTAMP_TYPE_MASK and max_ts == timestamp_ms:
        return
    kept = COMPRESSION_MASK | TRANSACTIONAL_FLAG | CONTROL_FLAG
    _I16.pack_into(buf, pos + ATTRIBUTES_OFFSET, attrs & kept | TIMESTAMP_TYPE_MASK)
    _I64.pack_into(buf, pos + MAX_TIMESTAMP_OFFSET, timestamp_ms)
    size = _I32.unpack_from(buf, pos + LENGTH_OFFSET)[0] + LOG_OVERHEAD
    _U32.pack_into(buf, pos + CRC_OFFSET, compute_crc(buf, pos, size))


# ---------------------------------------------------------------------------
# Varints (zigzag, as in Kafka's ByteUtils)
# ---------------------------------------------------------------------------

def _write_varint(out: bytearray, value: int) -> None:
    """Signed zigzag varint (int32)."""
    v = ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF
    while v & ~0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _write_varlong(out: bytearray, value: int) -> None:
    """Signed zigzag varlong (int64)."""
    v = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    while v & ~0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _read_varint(buf, pos: int, max_bytes: int = 5) -> tuple[int, int]:
    """Read a zigzag varint; return (value, new_pos)."""
    try:
        b = buf[pos]
    except IndexError:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, "Truncated varint in record") from None
    if not b & 0x80:  # one byte (-64..63): most of a small record's lengths, deltas and counts
        return (b >> 1) ^ -(b & 1), pos + 1
    result = 0
    shift = 0
    for i in range(max_bytes):
        try:
            b = buf[pos]
        except IndexError:
            raise KafkaError(ErrorCode.CORRUPT_MESSAGE, "Truncated varint in record") from None
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
    raise KafkaError(ErrorCode.CORRUPT_MESSAGE, f"Varint is too long (more than {max_bytes} bytes)")


def _read_varlong(buf, pos: int) -> tuple[int, int]:
    return _read_varint(buf, pos, 10)


def encode_varint(value: int) -> bytes:
    out = bytearray()
    _write_varint(out, value)
    return bytes(out)


def encode_varlong(value: int) -> bytes:
    out = bytearray()
    _write_varlong(out, value)
    return bytes(out)


def decode_varint(buf, pos: int = 0) -> tuple[int, int]:
    return _read_varint(buf, pos, 5)


def decode_varlong(buf, pos: int = 0) -> tuple[int, int]:
    return _read_varint(buf, pos, 10)


# ---------------------------------------------------------------------------
# Compression codecs (protocol/compression.py)
# ---------------------------------------------------------------------------

def compress(codec: int, data: bytes, level: int | None = None) -> bytes:
    """Compress a records blob with a Kafka codec (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd)."""
    if codec not in _CODECS:
        raise KafkaError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"Unknown compression codec {codec}")
    return compression.compress(codec, data, level)


def decompress(codec: int, data) -> bytes:
    """Inverse of :func:`compress`, for batches of known, sane size (the whole section at once).
    A stream its codec cannot read is UNKNOWN_SERVER_ERROR (compression.CodecError)."""
    if codec not in _CODECS:
        raise KafkaError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"Unknown compression codec {codec}")
    return compression.decompress(codec, data)


_CODECS = frozenset(Compression)


# ---------------------------------------------------------------------------
# Records
# ---------------------------------------------------------------------------

Header = tuple  # (key: str, value: bytes | None)


class Record(NamedTuple):
    """One record. ``offset``/``timestamp`` are absolute; ``headers`` is a sequence of (str, bytes|None)."""

    offset: int | None
    timestamp: int | None
    key: bytes | None
    value: bytes | None
    headers: Sequence[Header] = ()


def _encode_record(out: bytearray, offset_delta: int, timestamp_delta: int, key, value, headers) -> None:
    body = bytearray(b"\x00")  # attributes
    _write_varlong(body, timestamp_delta)
    _write_varint(body, offset_delta)
    if key is None:
        _write_varint(body, -1)
    else:
        _write_varint(body, len(key))
        body += key
    if value is None:
        _write_varint(body, -1)
    else:
        _write_varint(body, len(value))
        body += value
    _write_varint(body, len(headers))
    for hkey, hvalue in headers:
        hk = hkey.encode("utf-8") if isinstance(hkey, str) else bytes(hkey)
        _write_varint(body, len(hk))
        body += hk
        if hvalue is None:
            _write_varint(body, -1)
        else:
            _write_varint(body, len(hvalue))
            body += hvalue
    _write_varint(out, len(body))
    out += body


def build_batch(
    records: Iterable[Record],
    base_offset: int = 0,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
    is_control: bool = False,
    compression: int = Compression.NONE,
    timestamp_type: int = TimestampType.CREATE_TIME,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    *,
    last_offset_delta: int | None = None,
    max_timestamp: int | None = None,
    base_timestamp: int | None = None,
    compression_level: int | None = None,
) -> bytes:
    """Encode a v2 batch with a correct CRC.

    Records with ``offset=None`` get consecutive offsets from ``base_offset``;
    ``timestamp=None`` means now. ``baseTimestamp`` is the first record's
    timestamp and ``maxTimestamp`` the largest, like Kafka's MemoryRecordsBuilder
    (``max_timestamp`` overrides it, e.g. for LogAppendTime).
    """
    recs = list(records)
    now = None
    norm = []
    for i, r in enumerate(recs):
        if not isinstance(r, Record):
            r = Record(*r)
        off = base_offset + i if r.offset is None else r.offset
        ts = r.timestamp
        if ts is None:
            if now is None:
                now = int(time.time() * 1000)
            ts = now
        norm.append((off, ts, r.key, r.value, r.headers or ()))
    if norm:
        if base_timestamp is None:
            base_timestamp = norm[0][1]
        computed_max = max(ts for _, ts, *_ in norm)
        if last_offset_delta is None:
            last_offset_delta = norm[-1][0] - base_offset
    else:
        if base_timestamp is None:
            base_timestamp = NO_TIMESTAMP
        computed_max = NO_TIMESTAMP
        if last_offset_delta is None:
            last_offset_delta = 0
    if max_timestamp is None:
        max_timestamp = computed_max
    body = bytearray()
    for off, ts, key, value, headers in norm:
        _encode_record(body, off - base_offset, ts - base_timestamp, key, value, headers)
    payload = compress(compression, bytes(body), compression_level) if compression else body
    attributes = (compression & COMPRESSION_MASK)
    if timestamp_type == TimestampType.LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    if is_transactional:
        attributes |= TRANSACTIONAL_FLAG
    if is_control:
        attributes |= CONTROL_FLAG
    size = HEADER_SIZE + len(payload)
    buf = bytearray(size)
    _HEADER.pack_into(buf, 0, base_offset, size - LOG_OVERHEAD, partition_leader_epoch, MAGIC, 0, attributes,
                      last_offset_delta, base_timestamp, max_timestamp, producer_id, producer_epoch,
                      base_sequence, len(norm))
    buf[HEADER_SIZE:] = payload
    _U32.pack_into(buf, CRC_OFFSET, compute_crc(buf, 0, size))
    return bytes(buf)


def frame_batch(section, *, compression: int, last_offset_delta: int, base_timestamp: int, max_timestamp: int,
                producer_id: int, producer_epoch: int, base_sequence: int, is_transactional: bool,
                records_count: int, base_offset: int = 0, timestamp_type: int = TimestampType.CREATE_TIME,
                partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH) -> bytes:
    """A v2 batch around an already encoded (and compressed) records section, CRC computed."""
    attributes = compression & COMPRESSION_MASK
    if timestamp_type == TimestampType.LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    if is_transactional:
        attributes |= TRANSACTIONAL_FLAG
    size = HEADER_SIZE + len(section)
    buf = bytearray(size)
    _HEADER.pack_into(buf, 0, base_offset, size - LOG_OVERHEAD, partition_leader_epoch, MAGIC, 0, attributes,
                      last_offset_delta, base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence,
                      records_count)
    buf[HEADER_SIZE:] = section
    _U32.pack_into(buf, CRC_OFFSET, compute_crc(buf, 0, size))
    return bytes(buf)


def build_record_batch(key: bytes | None, value: bytes | None, timestamp_ms: int) -> bytes:
    """``build_batch([Record(0, timestamp_ms, key, value, ())])``, the batch of one plain record
    that the coordinators append for each state change, encoded directly (a unit test checks
    the bytes against build_batch)."""
    body = bytearray(b"\x00\x00\x00")  # attributes, timestamp delta 0, offset delta 0
    for field in (key, value):
        if field is None:
            body.append(1)  # varint -1
        else:
            _write_varint(body, len(field))
            body += field
    body.append(0)  # no headers
    buf = bytearray(HEADER_SIZE)
    _write_varint(buf, len(body))
    buf += body
    size = len(buf)
    _HEADER.pack_into(buf, 0, 0, size - LOG_OVERHEAD, NO_PARTITION_LEADER_EPOCH, MAGIC, 0, 0, 0, timestamp_ms,
                      timestamp_ms, NO_PRODUCER_ID, NO_PRODUCER_EPOCH, NO_SEQUENCE, 1)
    _U32.pack_into(buf, CRC_OFFSET, compute_crc(buf, 0, size))
    return bytes(buf)


def build_control_batch(
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    coordinator_epoch: int,
    timestamp_ms: int,
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytes:
    """A COMMIT/ABORT transaction marker exactly as Kafka writes it.

    Transactional + control, uncompressed, CreateTime, baseSequence -1, one
    record: key = int16 version 0 + int16 type, value = int16 version 0 +
    int32 coordinator epoch (``MemoryRecords.withEndTransactionMarker``).
    """
    buf = bytearray(MARKER_SIZE)
    _HEADER.pack_into(buf, 0, base_offset, MARKER_SIZE - LOG_OVERHEAD, partition_leader_epoch, MAGIC, 0,
                      TRANSACTIONAL_FLAG | CONTROL_FLAG, 0, timestamp_ms, timestamp_ms, producer_id, producer_epoch,
                      NO_SEQUENCE, 1)
    _MARKER_RECORD.pack_into(buf, HEADER_SIZE, MARKER_RECORD_HEAD,
                             ControlRecordType.COMMIT if commit else ControlRecordType.ABORT,
                             _MARKER_VALUE_LENGTH, 0, coordinator_epoch, 0)
    _U32.pack_into(buf, CRC_OFFSET, compute_crc(buf, 0, MARKER_SIZE))
    return bytes(buf)


# A marker's one record, written directly (build_batch's bytes, as a unit test checks): varint
# length 16, attributes 0, timestamp and offset deltas 0, a 4-byte key (version 0, type), a
# 6-byte value (version 0, coordinator epoch), no headers
MARKER_RECORD_HEAD = b"\x20\x00\x00\x00\x08\x00\x00"  # (through the key's version)
_MARKER_VALUE_LENGTH = 0x0C
_MARKER_RECORD = struct.Struct(">7shBhiB")
MARKER_SIZE = HEADER_SIZE + _MARKER_RECORD.size


def parse_control_record(record: Record) -> tuple[int, int | None]:
    """Return ``(type, coordinator_epoch)`` for a control record.

    ``type`` is a :class:`ControlRecordType` (UNKNOWN for unrecognised types);
    ``coordinator_epoch`` is only set for COMMIT/ABORT markers (else None).
    """
    key = record.key
    if key is None or len(key) < 4:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE,
                         f"Invalid value size found for end control record key. Must have at least 4 bytes, "
                         f"but found only {0 if key is None else len(key)}")
    version, rtype = struct.unpack_from(">hh", key, 0)
    if version < 0:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, f"Invalid version found for control record: {version}")
    try:
        ctype = ControlRecordType(rtype)
    except ValueError:
        return ControlRecordType.UNKNOWN, None
    if ctype in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        value = record.value
        if value is None or len(value) < 6:
            raise KafkaError(ErrorCode.CORRUPT_MESSAGE, "Invalid end transaction marker value (need 6 bytes)")
        mversion, coordinator_epoch = struct.unpack_from(">hi", value, 0)
        if mversion < 0:
            raise KafkaError(ErrorCode.CORRUPT_MESSAGE, f"Invalid version found for end transaction marker: {mversion}")
        return ctype, coordinator_epoch
    return ctype, None


def _decode_records(data, count: int, header: BatchHeader) -> list[Record]:
    out = []
    pos = 0
    n = len(data)
    log_append = header.attributes & TIMESTAMP_TYPE_MASK
    base_offset = header.base_offset
    base_ts = header.base_timestamp
    for _ in range(count):
        length, pos = _read_varint(data, pos)
        end = pos + length
        if length < 0 or end > n:
            raise KafkaError(ErrorCode.CORRUPT_MESSAGE, "Record length exceeds the batch")
        pos += 1  # attributes
        ts_delta, pos = _read_varint(data, pos, 10)
        off_delta, pos = _read_varint(data, pos, 5)
        klen, pos = _read_varint(data, pos, 5)
        if klen >= 0:
            key = bytes(data[pos:pos + klen])
            pos += klen
        else:
            key = None
        vlen, pos = _read_varint(data, pos, 5)
        if vlen >= 0:
            value = bytes(data[pos:pos + vlen])
            pos += vlen
        else:
            value = None
        hcount, pos = _read_varint(data, pos, 5)
        if hcount < 0:
            raise KafkaError(ErrorCode.CORRUPT_MESSAGE, f"Found invalid number of record headers {hcount}")
        headers = []
        for _h in range(hcount):
            hklen, pos = _read_varint(data, pos, 5)
            if hklen < 0:
                raise KafkaError(ErrorCode.CORRUPT_MESSAGE, f"Invalid negative header key size {hklen}")
            hkey = bytes(data[pos:pos + hklen]).decode("utf-8", errors="replace")
            pos += hklen
            hvlen, pos = _read_varint(data, pos, 5)
            if hvlen >= 0:
                hval = bytes(data[pos:pos + hvlen])
                pos += hvlen
            else:
                hval = None
            headers.append((hkey, hval))
        if pos != end:
            raise KafkaError(ErrorCode.CORRUPT_MESSAGE,
                             f"Invalid record size: expected to read {length} bytes but read {length + pos - end}")
        ts = header.max_timestamp if log_append else base_ts + ts_delta
        out.append(Record(base_offset + off_delta, ts, key, value, tuple(headers)))
    if pos != n:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, f"{n - pos} trailing bytes after the last record of the batch")
    return out


def decode_batch(buf, pos: int = 0, *, verify_crc: bool = False) -> tuple[BatchHeader, list[Record]]:
    """Decode the batch at ``pos`` into its header and records (decompressing if needed).

    With LogAppendTime, every record reports the batch maxTimestamp (as Kafka's readers do).
    """
    header = validate_batch(buf, pos) if verify_crc else parse_header(buf, pos)
    if header.magic != MAGIC:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, f"Unsupported magic {header.magic}")
    end = pos + header.size
    if header.batch_length < MIN_BATCH_LENGTH or end > len(buf):
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, "Record batch truncated")
    if header.records_count < 0:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, f"Invalid record count {header.records_count}")
    payload = memoryview(buf)[pos + HEADER_SIZE:end]
    data = decompress(header.compression, payload) if header.compression else payload
    return header, _decode_records(data, header.records_count, header)


def decode_batches(buf, *, verify_crc: bool = False) -> list[tuple[BatchHeader, list[Record]]]:
    """Decode all complete batches in ``buf`` (a trailing partial batch is ignored)."""
    return [decode_batch(buf, p, verify_crc=verify_crc) for p, _ in iter_batch_headers(buf)]


def consumer_view(buf, aborted_transactions, offset: int, read_committed: bool
                  ) -> Iterator[tuple[BatchHeader, list[Record], bool]]:
    """Kafka's consumer filtering (CompletedFetch) of one Fetch answer's records: every complete
    batch ending at or past ``offset``, decoded, with whether a consumer delivers its records.
    Control batches are never delivered; under read_committed neither is a transactional batch
    whose producer has an aborted transaction (``aborted_transactions``: (first offset,
    producer id) pairs of the answer) starting at or before it, until that producer's ABORT
    marker."""
    aborted = sorted(aborted_transactions)
    aborting: set[int] = set()
    for pos, h in iter_batch_headers(buf):
        if h.last_offset < offset:
            continue
        _, records = decode_batch(buf, pos)
        delivered = not h.is_control
        if read_committed and h.has_producer_id:
            while aborted and aborted[0][0] <= h.last_offset:
                aborting.add(aborted.pop(0)[1])
            if h.is_control:
                if parse_control_record(records[0])[0] == ControlRecordType.ABORT:
                    aborting.discard(h.producer_id)
            elif h.is_transactional and h.producer_id in aborting:
                delivered = False
        yield h, records, delivered
