"""How Kafka 4.1 answers a batch whose header and CRC are right but whose records are not
(LogValidator's record walk: DefaultRecordBatch's iterators, DefaultRecord.readFrom and
readPartiallyFrom), uncompressed and under every codec, and batches that inflate far past
their size (decompression bombs).

Every batch here is a valid one (dsl ``batch``) whose records section is rewritten by the
helpers below, each named after what it breaks: the records are taken out (decompressed),
changed, put back under the batch's own codec, and the batch length and CRC recomputed, so the
broker sees exactly that one fault."""
import gzip
import struct

from minikafka.protocol import records as rec

from ..dsl import Differs, Scenario, Topic, batch, fetch, list_offsets, produce

RU = 0
CODECS = (0, 1, 2, 3, 4)          # none, gzip, snappy, lz4, zstd
COMPRESSED = (1, 2, 3, 4)
NAMES = {0: "uncompressed", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


# ---------------------------------------------------------------- records taken apart

def _varint(n: int) -> bytes:
    return rec.encode_varint(n)


def record(value: bytes | None = b"v", key: bytes | None = None, *, offset_delta: int = 0, ts_delta: int = 0,
           attributes: int = 0, headers=(), length_delta: int = 0, body: bytes | None = None,
           key_len: int | None = None, value_len: int | None = None, header_count: int | None = None) -> bytes:
    """One record's bytes (length varint, then the body). The keyword overrides write a field as
    given whatever follows it: ``key_len``/``value_len``/``header_count`` replace the length or
    count written before the bytes, ``length_delta`` is added to the record's length varint,
    ``body`` replaces the whole body."""
    if body is None:
        out = bytearray([attributes & 0xFF])
        out += rec.encode_varlong(ts_delta) + _varint(offset_delta)
        for field, override in ((key, key_len), (value, value_len)):
            out += _varint(override if override is not None else (-1 if field is None else len(field)))
            out += field or b""
        out += _varint(len(headers) if header_count is None else header_count)
        for hkey, hvalue in headers:
            out += _varint(len(hkey)) + hkey
            out += _varint(-1 if hvalue is None else len(hvalue)) + (hvalue or b"")
        body = bytes(out)
    return _varint(len(body) + length_delta) + body


def _records_of(built: bytes) -> bytes:
    h = rec.parse_header(built)
    payload = built[rec.HEADER_SIZE:]
    return rec.decompress(h.compression, payload) if h.compression else payload


def _rebuild(built: bytes, records: bytes, *, compressed: bytes | None = None) -> bytes:
    """``built``'s header over new records (compressed with its codec unless ``compressed`` is
    given as is), batch length and CRC recomputed."""
    h = rec.parse_header(built)
    if compressed is None:
        compressed = rec.compress(h.compression, records) if h.compression else records
    b = bytearray(built[:rec.HEADER_SIZE]) + compressed
    struct.pack_into(">i", b, rec.LENGTH_OFFSET, len(b) - rec.LOG_OVERHEAD)
    struct.pack_into(">I", b, rec.CRC_OFFSET, rec.compute_crc(b, 0, len(b)))
    return bytes(b)


def records_section(*parts: bytes):
    """The batch's records replaced by ``parts`` (record() bytes or any bytes), header as built."""
    return lambda built: _rebuild(built, b"".join(parts))


def after_records(tail: bytes):
    """The batch's own records, then ``tail`` inside the batch (before compression)."""
    return lambda built: _rebuild(built, _records_of(built) + tail)


def header_counts(count: int):
    """records_count and last_offset_delta set to agree with ``count`` records."""
    def corrupt(built: bytes) -> bytes:
        b = bytearray(built)
        struct.pack_into(">i", b, rec.RECORDS_COUNT_OFFSET, count)
        struct.pack_into(">i", b, rec.LAST_OFFSET_DELTA_OFFSET, count - 1)
        return _rebuild(bytes(b), _records_of(built))
    return corrupt


def compressed_bytes(f):
    """The compressed records section (the codec's stream itself) replaced by f(stream)."""
    def corrupt(built: bytes) -> bytes:
        return _rebuild(built, b"", compressed=f(built[rec.HEADER_SIZE:]))
    return corrupt


def one(codec: int = 0, **kw):
    """A one-record batch under ``codec``."""
    return batch(None, ["v"], compression=codec, **kw)


def two(codec: int = 0, **kw):
    return batch(None, ["a", "b"], compression=codec, **kw)


def send(b, v: int = 9, **kw):
    return produce(b, v=v, **kw)


def latest(**kw):
    return list_offsets(timestamp=-1, isolation=RU, **kw)


def _inflating(built: bytes, sizes: list[int], keys: list) -> bytes:
    """``built``'s header over records whose values are ``sizes`` zero bytes (keys ``keys``),
    compressed with its codec without holding the inflated section; count and offset delta agree."""
    parts = []
    for i, (size, key) in enumerate(zip(sizes, keys)):
        head = b"\x00\x00" + _varint(i) + (_varint(-1) if key is None else _varint(len(key)) + key) + _varint(size)
        parts.append((_varint(len(head) + size + 1) + head, size, b"\x00"))
    h = rec.parse_header(built)
    b = bytearray(built[:rec.HEADER_SIZE])
    struct.pack_into(">i", b, rec.RECORDS_COUNT_OFFSET, len(sizes))
    struct.pack_into(">i", b, rec.LAST_OFFSET_DELTA_OFFSET, len(sizes) - 1)
    return _rebuild(bytes(b), b"", compressed=compress_stream(h.compression, parts))


def bomb(size: int, records: int = 1, key: bytes | None = None, keyless_last: bool = False):
    """``records`` records whose values are ``size`` zero bytes in all, each keyed ``key`` (the
    last keyless with ``keyless_last``)."""
    each = size // records
    sizes = [each] * (records - 1) + [size - each * (records - 1)]
    keys = [key] * records
    if keyless_last:
        keys[-1] = None
    return lambda built: _inflating(built, sizes, keys)


def compress_stream(codec: int, parts) -> bytes:
    """``parts`` ((head, zero bytes, tail) each) compressed by ``codec`` as a stream."""
    import zlib

    import lz4.frame
    import zstandard
    chunk = bytes(1 << 20)

    def pieces():
        for head, n, tail in parts:
            yield head
            while n:
                take = min(n, len(chunk))
                yield chunk[:take]
                n -= take
            yield tail

    if codec == rec.Compression.GZIP:
        c = zlib.compressobj(9, zlib.DEFLATED, 31)
        return b"".join(c.compress(p) for p in pieces()) + c.flush()
    if codec == rec.Compression.LZ4:
        c = lz4.frame.LZ4FrameCompressor(block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False,
                                         content_checksum=False)
        return c.begin() + b"".join(c.compress(p) for p in pieces()) + c.flush()
    if codec == rec.Compression.ZSTD:
        c = zstandard.ZstdCompressor(level=3).compressobj()
        return b"".join(c.compress(p) for p in pieces()) + c.flush()
    if codec == rec.Compression.SNAPPY:
        # snappy-java's framing in 32 KiB blocks, as the Java producer writes it
        data = bytearray()
        out = [rec.compress(rec.Compression.SNAPPY, b"")]
        for p in pieces():
            data += p
            while len(data) >= 32768:
                out.append(rec.compress(rec.Compression.SNAPPY, bytes(data[:32768]))[16:])
                del data[:32768]
        if data:
            out.append(rec.compress(rec.Compression.SNAPPY, bytes(data))[16:])
        return b"".join(out)
    raise ValueError(codec)


# ---------------------------------------------------------------- the records against the header

SCENARIOS = [
    Scenario("record_validation/count_above_records", "The header says 2 records (count 2, lastOffsetDelta 1) "
             "and the batch holds 1, under each codec.", steps=[
        *[send(one(codec=c, corrupt=header_counts(2)), label=NAMES[c]) for c in CODECS],
        latest(),
    ]),
    Scenario("record_validation/count_below_records", "The header says 1 record (count 1, lastOffsetDelta 0) "
             "and the batch holds 2, under each codec.", steps=[
        *[send(two(codec=c, corrupt=header_counts(1)), label=NAMES[c]) for c in CODECS],
        latest(),
    ]),
    Scenario("record_validation/trailing_bytes", "One record followed, inside the batch, by 3 bytes that make no "
             "record, by one zero byte, and by the first 4 bytes of a copy of the record, under each codec.",
             steps=[
        *[send(one(codec=c, corrupt=after_records(tail)), label=f"{NAMES[c]} {name}")
          for c in CODECS for name, tail in (("3 bytes", b"\x01\x02\x03"), ("zero byte", b"\x00"),
                                             ("partial record", record()[:4]))],
        latest(),
    ]),
    Scenario("record_validation/empty_records_section", "count 1 and no record bytes at all: uncompressed, and "
             "each codec's stream of nothing.", steps=[
        *[send(one(codec=c, corrupt=records_section()), label=NAMES[c]) for c in CODECS],
        latest(),
    ]),
]

# ---------------------------------------------------------------- one record's fields

# a record whose length varint is wrong: Kafka reads compressed records without their length
# (readPartiallyFrom) and stores these, which its own consumers then cannot read
LENGTH_FAULTS = [
    ("length one more", record(length_delta=1)),
    ("length one less", record(length_delta=-1)),
    ("length -1", _varint(-1) + record()[1:]),
    ("length 2^31-1", _varint(2**31 - 1) + record()[1:]),
]
FIELD_FAULTS = [
    ("length 0", record(body=b"")),
    ("length varint of 6 bytes", b"\xff\xff\xff\xff\xff\x01" + record()[1:]),
    ("key length past the record", record(key=b"k", key_len=50)),
    ("key length -2", record(key=None, key_len=-2)),
    ("value length past the record", record(value=b"v", value_len=50)),
    ("value length -5", record(value=None, value_len=-5)),
    ("header count -1", record(header_count=-1)),
    ("header count 1000", record(header_count=1000)),
    ("header count 2, one header", record(headers=[(b"h", b"x")], header_count=2)),
    ("header key length -1", record(body=b"\x00\x00\x00\x01\x02v\x02\x01\x02x")),
    ("header value length past the record", record(body=b"\x00\x00\x00\x01\x02v\x02\x02h\x40x")),
    ("offset delta varint of 6 bytes", record(body=b"\x00\x00\xff\xff\xff\xff\xff\x01\x01\x02v\x00")),
    ("timestamp delta varlong of 11 bytes", record(body=b"\x00" + b"\xff" * 10 + b"\x01\x00\x01\x02v\x00")),
    ("body cut after the timestamp delta", record(body=b"\x00\x00")),
]

SCENARIOS += [
    Scenario("record_validation/record_fields_uncompressed", "One uncompressed record whose length, key, value or "
             "header fields disagree with its bytes (the header's count 1 and the CRC are right).", steps=[
        *[send(one(corrupt=records_section(fault)), label=name) for name, fault in LENGTH_FAULTS + FIELD_FAULTS],
        latest(),
        fetch(isolation=RU),
    ]),
    *[Scenario(f"record_validation/record_fields_{NAMES[c]}", f"One {NAMES[c]} record whose key, value or header "
               "fields disagree with its bytes (the header's count 1 and the CRC are right).", steps=[
        *[send(one(codec=c, corrupt=records_section(fault)), label=name) for name, fault in FIELD_FAULTS],
        latest(),
        fetch(isolation=RU),
    ]) for c in COMPRESSED],
    Scenario("record_validation/record_length_compressed", "One compressed record whose length varint is one "
             "more, one less, -1 or 2^31-1 than its bytes, under each codec: Kafka stores them (it reads "
             "compressed records without their length), minikafka refuses them as the same record uncompressed.",
             steps=[
        *[send(one(codec=c, corrupt=records_section(fault)), label=f"{NAMES[c]} {name}")
          for c in COMPRESSED for name, fault in LENGTH_FAULTS],
        latest(),
    ], differs={
        **{k + 1: Differs("record-decodable", {"responses[0].partition_responses[0].error_code": 87,
                                               "responses[0].partition_responses[0].base_offset": -1})
           for k in range(len(COMPRESSED) * len(LENGTH_FAULTS))},
        len(COMPRESSED) * len(LENGTH_FAULTS) + 1: Differs("record-decodable", {"topics[0].partitions[0].offset": 0}),
    }),
]

# ---------------------------------------------------------------- fields Kafka does not refuse

SCENARIOS += [
    Scenario("record_validation/record_attributes", "A record whose attributes byte is 0x01 or 0xff (unused in "
             "v2), uncompressed and gzip: written, and fetched so.", steps=[
        *[send(one(codec=c, corrupt=records_section(record(attributes=a))), label=f"{NAMES[c]} {a:#x}")
          for c in (0, 1) for a in (0x01, 0xFF)],
        latest(),
        fetch(isolation=RU),
    ]),
    Scenario("record_validation/offset_deltas_compressed", "Compressed records whose offset deltas repeat, run "
             "backwards or skip (header consistent), under each codec, on a topic keeping the producer's codec.",
             steps=[
        *[send(two(codec=c, corrupt=records_section(record(b"a", offset_delta=d0), record(b"b", offset_delta=d1))),
               label=f"{NAMES[c]} [{d0}, {d1}]") for c in COMPRESSED for d0, d1 in ((0, 0), (1, 0), (0, 5))],
        latest(),
        fetch(isolation=RU),
    ]),
    Scenario("record_validation/offset_deltas_recompressed", "Records whose offset deltas skip or repeat sent to "
             "a topic with compression.type=gzip, as lz4 and uncompressed batches (the broker rebuilds them).",
             topics={"t": Topic(configs={"compression.type": "gzip"})}, steps=[
        *[send(two(codec=c, corrupt=records_section(record(b"a", offset_delta=d0), record(b"b", offset_delta=d1))),
               label=f"{NAMES[c]} [{d0}, {d1}]") for c in (0, 3) for d0, d1 in ((0, 5), (1, 1))],
        latest(),
        fetch(isolation=RU),
    ]),
    Scenario("record_validation/timestamp_deltas", "Records whose timestamp deltas are negative, and one whose "
             "delta overflows a long (Long.MAX_VALUE past a current base timestamp), uncompressed and gzip, on a "
             "topic without timestamp bounds: what is written and what ListOffsets max timestamp sees.", steps=[
        # (the gzip batch's latest record 100 ms later than the first batch's, so that the max
        # timestamp's offset does not hang on whether the two batches were built in one millisecond)
        *[send(two(codec=c, corrupt=records_section(record(b"a", ts_delta=-5000),
                                                    record(b"b", offset_delta=1, ts_delta=-1000 + 100 * c))),
               label=f"{NAMES[c]} negative") for c in (0, 1)],
        send(one(corrupt=records_section(record(ts_delta=(1 << 63) - 1))), label="overflow"),
        latest(),
        list_offsets(timestamp=-3, isolation=RU),
        fetch(isolation=RU),
    ]),
]

# ---------------------------------------------------------------- the codecs' streams

def _gzip_member(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


SCENARIOS += [
    Scenario("record_validation/broken_codec_streams", "A compressed records section that is not its codec's "
             "stream, or is one cut short, or is followed by other bytes: gzip, snappy, lz4 and zstd.", steps=[
        *[send(one(codec=c, corrupt=compressed_bytes(lambda s: b"\x01\x02\x03\x04" * 8)), label=f"{NAMES[c]} garbage")
          for c in COMPRESSED],
        *[send(one(codec=c, corrupt=compressed_bytes(lambda s: s[:len(s) // 2])), label=f"{NAMES[c]} cut in half")
          for c in COMPRESSED],
        *[send(one(codec=c, corrupt=compressed_bytes(lambda s: b"")), label=f"{NAMES[c]} no bytes")
          for c in COMPRESSED],
        *[send(one(codec=c, corrupt=compressed_bytes(lambda s: s + b"\x00\x01\x02")),
               label=f"{NAMES[c]} then 3 bytes") for c in COMPRESSED],
        send(two(codec=1, corrupt=compressed_bytes(lambda s: _gzip_member(record(b"a")) + _gzip_member(
            record(b"b", offset_delta=1)))), label="gzip: two members"),
        send(two(codec=4, corrupt=compressed_bytes(lambda s: rec.compress(4, record(b"a")) + rec.compress(
            4, record(b"b", offset_delta=1)))), label="zstd: two frames"),
        send(two(codec=2, corrupt=compressed_bytes(lambda s: __import__("cramjam").snappy.compress_raw(
            record(b"a") + record(b"b", offset_delta=1)).read())), label="snappy: raw, without framing"),
        latest(),
        fetch(isolation=RU),
    ]),
]

# ---------------------------------------------------------------- batches that inflate

MB = 1 << 20

SCENARIOS += [
    Scenario("record_validation/inflating_batches", "Batches of a few hundred KB that inflate to 64 MB (one record "
             "of zeros, and 64 records of 1 MB), under each codec: written.",
             topics={"t": Topic(configs={"max.message.bytes": str(8 * MB)})}, steps=[
        *[send(one(codec=c, corrupt=bomb(64 * MB, n)), label=f"{NAMES[c]} x{n}")
          for c in COMPRESSED for n in (1, 64)],
        latest(),
    ]),
    Scenario("record_validation/inflating_batches_log_append_time", "An inflating batch (64 MB, one record) with the "
             "LogAppendTime attribute set by the producer on a CreateTime topic, and an ordinary one on a "
             "LogAppendTime topic, gzip and zstd.",
             topics={"t": Topic(configs={"max.message.bytes": str(8 * MB)}),
                     "l": Topic(configs={"max.message.bytes": str(8 * MB), "message.timestamp.type": "LogAppendTime"})},
             steps=[
        *[send(one(codec=c, corrupt=lambda b, c=c: _lat(bomb(64 * MB)(b))), label=f"{NAMES[c]} producer LAT")
          for c in (1, 4)],
        *[send(one(codec=c, corrupt=bomb(64 * MB)), topic="{l}", label=f"{NAMES[c]} on a LogAppendTime topic")
          for c in (1, 4)],
        latest(),
        latest(topic="{l}"),
    ]),
    Scenario("record_validation/inflating_batches_compacted", "cleanup.policy=compact: an inflating batch (64 MB) "
             "whose one record has a key, and one whose last of 64 records has none, gzip and lz4.",
             topics={"t": Topic(configs={"max.message.bytes": str(8 * MB), "cleanup.policy": "compact"})}, steps=[
        *[send(one(codec=c, corrupt=bomb(64 * MB, key=b"k")), label=f"{NAMES[c]} keyed") for c in (1, 3)],
        *[send(one(codec=c, corrupt=bomb(64 * MB, 64, key=b"k", keyless_last=True)), label=f"{NAMES[c]} last keyless") for c in (1, 3)],
        latest(),
    ]),
]


def _lat(built: bytes) -> bytes:
    """The LogAppendTime attribute set (CRC recomputed)."""
    b = bytearray(built)
    attrs = struct.unpack_from(">h", b, rec.ATTRIBUTES_OFFSET)[0]
    struct.pack_into(">h", b, rec.ATTRIBUTES_OFFSET, attrs | rec.TIMESTAMP_TYPE_MASK)
    struct.pack_into(">I", b, rec.CRC_OFFSET, rec.compute_crc(b, 0, len(b)))
    return bytes(b)



def raw_snappy(size: int):
    """One record of ``size`` zero bytes as one raw snappy block (no snappy-java framing), as
    librdkafka and Sarama write snappy batches."""
    def corrupt(built: bytes) -> bytes:
        import cramjam
        head = b"\x00\x00\x00\x01" + _varint(size)
        section = _varint(len(head) + size + 1) + head + bytes(size) + b"\x00"
        return _rebuild(built, b"", compressed=bytes(cramjam.snappy.compress_raw(section)))
    return corrupt


SCENARIOS += [
    Scenario("record_validation/snappy_block_bound", "max.message.bytes=8 MB: a 2 MB raw snappy block inflating to "
             "48 MB (one record), and the same records in snappy-java's 32 KB blocks. Kafka inflates a block "
             "whatever it declares (up to its heap); minikafka inflates at most max(32 MB, 4 x max.message.bytes) "
             "per block, and refuses a larger one as too large.",
             topics={"t": Topic(configs={"max.message.bytes": str(8 * MB)})}, steps=[
        send(one(codec=2, corrupt=raw_snappy(48 * MB)), label="one raw block"),
        send(one(codec=2, corrupt=bomb(48 * MB)), label="32 KB blocks"),
        latest(),
    ], differs={
        1: Differs("snappy-block-bound", {"responses[0].partition_responses[0].error_code": 10,
                                          "responses[0].partition_responses[0].base_offset": -1,
                                          "responses[0].partition_responses[0].log_start_offset": -1}),
        2: Differs("snappy-block-bound", {"responses[0].partition_responses[0].base_offset": 0}),
        3: Differs("snappy-block-bound", {"topics[0].partitions[0].offset": 1}),
    }),
]
