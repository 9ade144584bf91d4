"""Hostile record batches, built as a producer would never build them: poison batches (a CRC
that is right over records that are not) and batches that inflate far past their size
(decompression bombs, millions of tiny records). Shared by the adversarial tests and
bench/bombs.py; a bomb is compressed as a stream, never held inflated."""
from __future__ import annotations

import struct
import time
import zlib

from minikafka.protocol import compression
from minikafka.protocol import records as rec

CODECS = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
_ZEROS = bytes(1 << 20)


def varint(n: int) -> bytes:
    return rec.encode_varint(n)


def batch(section: bytes, count: int, codec: int = 0, *, timestamp: int | None = None,
          log_append_time: bool = False, max_timestamp: int | None = None) -> bytes:
    """A v2 batch (CRC right) around an encoded, already compressed records section that claims
    ``count`` records."""
    ts = int(time.time() * 1000) if timestamp is None else timestamp
    b = bytearray(rec.frame_batch(section, compression=codec, last_offset_delta=count - 1, base_timestamp=ts,
                                  max_timestamp=ts if max_timestamp is None else max_timestamp,
                                  producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                  is_transactional=False, records_count=count))
    if log_append_time:
        struct.pack_into(">h", b, rec.ATTRIBUTES_OFFSET, codec | rec.TIMESTAMP_TYPE_MASK)
        struct.pack_into(">I", b, rec.CRC_OFFSET, rec.compute_crc(b, 0, len(b)))
    return bytes(b)


def record(value: bytes = b"v", key: bytes | None = None, offset_delta: int = 0) -> bytes:
    body = b"\x00\x00" + varint(offset_delta) + (varint(-1) if key is None else varint(len(key)) + key)
    body += varint(len(value)) + value + b"\x00"
    return varint(len(body)) + body


# ---------------------------------------------------------------- poison batches (issue 32, seen on main)

def header_says_two_holds_one(codec: int = 0) -> bytes:
    """Count 2 and lastOffsetDelta 1, one record in the bytes."""
    return batch(compression.compress(codec, record()) if codec else record(), 2, codec)


def one_record_then_trailing_bytes(codec: int = 0) -> bytes:
    section = record() + b"\x01\x02\x03"
    return batch(compression.compress(codec, section) if codec else section, 1, codec)


def record_length_one_more(codec: int = 0) -> bytes:
    r = record()
    section = varint(len(r) - 1 + 1) + r[1:]
    return batch(compression.compress(codec, section) if codec else section, 1, codec)


def not_the_codecs_stream(codec: int) -> bytes:
    return batch(b"\x01\x02\x03\x04" * 8, 1, codec)


# ---------------------------------------------------------------- inflating batches

def compress_stream(codec: int, pieces) -> bytes:
    """``pieces`` (an iterable of bytes) compressed by ``codec`` as one stream, as the Java
    producer frames it (snappy-java's 32 KB blocks for snappy)."""
    if codec == rec.Compression.GZIP:
        c = zlib.compressobj(9, zlib.DEFLATED, 31)
        out = [c.compress(p) for p in pieces]
        return b"".join(out) + c.flush()
    d = compression.deflater(codec)
    out = [d.write(p) for p in pieces]
    return b"".join(out) + d.finish()


def inflating_batch(codec: int, size: int, *, records: int = 1, key: bytes | list | None = None,
                    keyless_last: bool = False, log_append_time: bool = False,
                    timestamp: int | None = None, rising: bool = False) -> bytes:
    """A batch whose ``records`` records' values are ``size`` zero bytes in all, keyed ``key``
    (or ``key[i]``): gzip of 1 GiB is about 1 MB, lz4 4 MB, zstd 40 KB, snappy (32 KB blocks)
    48 MB. With ``rising``, record i is stamped ``timestamp + i`` (its timestamp delta i)."""
    each = size // records
    keys = list(key) if isinstance(key, list) else [key] * records
    if keyless_last:
        keys[-1] = None

    def pieces():
        for i in range(records):
            n = each if i < records - 1 else size - each * (records - 1)
            k = keys[i]
            head = b"\x00" + varint(i if rising else 0) + varint(i) + (
                varint(-1) if k is None else varint(len(k)) + k) + varint(n)
            yield varint(len(head) + n + 1) + head
            while n:
                take = min(n, len(_ZEROS))
                yield _ZEROS[:take]
                n -= take
            yield b"\x00"

    ts = int(time.time() * 1000) if timestamp is None else timestamp
    return batch(compress_stream(codec, pieces()), records, codec, timestamp=ts, log_append_time=log_append_time,
                 max_timestamp=ts + records - 1 if rising else ts)


def tiny_records_batch(codec: int, count: int, *, keys: bool = False) -> bytes:
    """``count`` records with an empty value (and a 4-byte key with ``keys``), offset deltas
    0, 1, ...: a few bytes each inflated, well under a byte each compressed."""
    def pieces():
        step = 65536
        for start in range(0, count, step):
            out = bytearray()
            for i in range(start, min(count, start + step)):
                k = b"\x08" + i.to_bytes(4, "big") if keys else b"\x01"
                body = b"\x00\x00" + varint(i) + k + b"\x00\x00"
                out += varint(len(body)) + body
            yield bytes(out)

    return batch(compress_stream(codec, pieces()), count, codec)
