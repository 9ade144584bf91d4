"""Kafka message schemas as construct objects, built from protocol/schema.jsonl.

schema.jsonl is derived (tools/gen_protocol.py) from Apache Kafka's own message
definitions, so no field list is typed here: this module only knows the wire
*types* (int16, compact string, tagged fields, ...) and turns the field trees
into construct objects for one (api key, version, request|response).

Each struct's codec is Python source generated from that tree on first use and
compiled once (like Kafka's generated Readable/Writable classes): straight-line
code over the frame's bytes, one struct.unpack_from/pack per run of fixed-size
fields. Walking the construct tree field by field per message cost a third of
the broker's CPU per Produce request.

Decoded messages are `Msg` dicts with snake_case keys that also allow attribute
access (``req.topics[0].partitions``). Every field of the message's schema is
present after decoding: fields that the version lacks get their default, so
handlers never branch on versions just to read. Encoding takes plain dicts; a
missing key is written as the field's default and fields the version lacks are
skipped, so a handler can build one response for all versions.

A request's ``records`` (Produce's record batches, the only records in a request) are
decoded as a read-only memoryview of the frame, not copied out of it: a megabyte batch
reaches the segment file without a copy in Python (storage/log.py writes it as it is, its
patched first bytes in front).
That is safe because such a frame does not change: it is a bytes object, or a read-only
view of a buffer nobody writes to any more (the server's FrameReader hands a large
Produce frame over so). A writable frame (a bytearray) has its records copied, as every
other bytes field of every message always is: those stay ``bytes``, as they are hashed,
compared and kept in group and coordinator state.
"""
from __future__ import annotations

import functools
import json
import os
import struct
import uuid as uuidlib

from construct import Construct, Float64b, Flag, FormatField, Int8sb, Int16sb, Int16ub, Int32sb, Int32ub, Int64sb

# schema.jsonl: an index on its first line, then one line per API and per data spec. A line is
# parsed when its message is first used: parsing all of them would lengthen every start, and a
# broker uses a few dozen of the 137.
_SCHEMA_PATH = os.path.join(os.path.dirname(__file__), "schema.jsonl")
with open(_SCHEMA_PATH, "rb") as _f:
    _LINES = _f.read().splitlines()
_INDEX = json.loads(_LINES[0])
API_NAMES: dict[int, str] = {int(k): v["name"] for k, v in _INDEX["apis"].items()}
DATA_NAMES: tuple[str, ...] = tuple(_INDEX["data"])


@functools.lru_cache(maxsize=None)
def api_spec(api_key: int) -> dict:
    """One API's schema: name, versions, request and response layouts (KeyError: unknown key)."""
    return json.loads(_LINES[_INDEX["apis"][str(api_key)]["line"]])


@functools.lru_cache(maxsize=None)
def data_spec(name: str) -> dict:
    """A `data` spec by name (coordinator records, control record values, consumer protocol)."""
    return json.loads(_LINES[_INDEX["data"][name]["line"]])


class SchemaError(ValueError):
    """The bytes do not match the schema (truncated, bad length, bad UTF-8...)."""


class Msg(dict):
    """A decoded struct: a dict whose keys are also attributes."""

    __slots__ = ()

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        self[name] = value


# ---------------------------------------------------------------- wire types
#
# The classes below describe a message's shape (built from schema.jsonl); their codecs
# are generated Python functions (see "generated codecs"), one decoder and one encoder per
# struct: straight-line code over the frame's bytes, unpack_from for each run of fixed-size
# fields, instead of a construct object tree walked per field and per message.

def encode_uvarint(n: int) -> bytes:
    if n < 0x80:
        return bytes((n,))
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def read_uvarint(buf, pos: int) -> tuple[int, int]:
    """Unsigned varint (7 bits per byte, low group first) at buf[pos] -> (value, next position),
    read as Kafka's ByteUtils.readUnsignedVarint reads a message's lengths, counts and tags: at
    most 5 bytes (a 5th with its high bit set is an error), the value a Java int (its low 32 bits,
    signed: 2^31 reads as -2^31, 2^32 as 0), so a hostile count means to us what it means to Kafka."""
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise SchemaError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            break
        shift += 7
        if shift > 28:
            raise SchemaError("varint is too long (more than 5 bytes)")
    result &= 0xFFFFFFFF
    return (result - 0x100000000 if result & 0x80000000 else result), pos


class KString(Construct):
    """string: int16 length (classic) or uvarint length+1 (compact); null = -1 / 0."""

    def __init__(self, compact: bool, nullable: bool):
        super().__init__()
        self.compact, self.nullable = compact, nullable


class KBytes(Construct):
    """bytes / records: int32 length (classic) or uvarint length+1 (compact); null = -1 / 0.
    ``view``: decoded as a read-only view of an immutable frame (a request's records), not copied."""

    def __init__(self, compact: bool, nullable: bool, view: bool = False):
        super().__init__()
        self.compact, self.nullable, self.view = compact, nullable, view


class KUuid(Construct):
    """uuid: 16 bytes (a missing value is written as the zero UUID)."""


ZERO_UUID = uuidlib.UUID(int=0)


class KArray(Construct):
    """Array: int32 count (classic) or uvarint count+1 (compact); null = -1 / 0."""

    def __init__(self, elem: Construct, compact: bool, nullable: bool = False):
        super().__init__()
        self.elem, self.compact, self.nullable = elem, compact, nullable


class Field:
    __slots__ = ("name", "con", "default", "tag", "nullable")

    def __init__(self, name, con, default, tag=None, nullable=False):
        self.name, self.con, self.default, self.tag = name, con, default, tag
        self.nullable = nullable

    def make_default(self):
        d = self.default
        if isinstance(d, list):
            return []
        if callable(d):
            return d()
        return d


class KStruct(Construct):
    """A struct: positional fields, then (flexible versions) a tagged-field section.

    `absent` are the fields this version does not carry: decoding fills in their
    defaults so the decoded dict always has the full shape. Its decoder and encoder are
    generated on first use (`decode(buf, pos) -> (Msg, end)`, `encode(obj, ChunkWriter)`).
    """

    def __init__(self, fields: list[Field], tagged: list[Field] | None, absent: list[Field]):
        super().__init__()
        self.fields = fields
        self.tagged = sorted(tagged, key=lambda f: f.tag) if tagged is not None else None
        self.absent = absent
        # each generated on its first use: a request's struct is only decoded and a response's
        # only encoded, so making both at once doubled the code a broker's first request of each
        # API generates and compiles (on the first Metadata answer after a start)
        self._decoder = self._encoder = None

    @property
    def decode(self):
        if self._decoder is None:
            self._decoder = _compile_decoder(self)
        return self._decoder

    @property
    def encode(self):
        if self._encoder is None:
            self._encoder = _compile_encoder(self)
        return self._encoder

    def _parse(self, stream, context, path):  # construct's own parse()/parse_stream()
        return _decode_all(self, stream.read(), 0)[0]

    def _build(self, obj, stream, context, path):  # construct's own build()/build_stream()
        stream.write(build(self, obj))
        return obj

    def default_value(self):
        out = Msg()
        for f in self.fields + self.absent + (self.tagged or []):
            out[f.name] = f.make_default()
        return out


class NullableStruct(Construct):
    """A struct field listed in nullableVersions: int8 marker (-1 null, 1 present)."""

    def __init__(self, inner: KStruct):
        super().__init__()
        self.inner = inner


def _code(con) -> str | None:
    """The struct code of a fixed-size primitive construct, None for anything else."""
    if con is Flag:
        return "?"
    if isinstance(con, FormatField):
        return con.fmtstr.lstrip("<>=!")
    return None


# ------------------------------------------------------------ generated codecs

class _Source:
    """The text of one generated function, and the constants its code refers to by name."""

    def __init__(self, ns: dict):
        self.lines: list[str] = []
        self.ns = ns
        self.names = 0

    def fresh(self, prefix: str) -> str:
        """A local variable name not used elsewhere in the function (nested structs are inlined)."""
        self.names += 1
        return f"{prefix}{self.names}"

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)

    def const(self, value) -> str:
        name = f"_k{len(self.ns)}"
        self.ns[name] = value
        return name


def _default_expr(src: _Source, f: Field) -> str:
    """An expression giving the field's default (a fresh list, a fresh default struct)."""
    d = f.default
    if isinstance(d, list):
        return "[]"
    if callable(d):
        return src.const(d) + "()"
    return src.const(d)


def _emit_length(src: _Source, ind: int, compact: bool, size_code: str) -> None:
    """n = the length/count prefix (-1 for null), pos past it."""
    if compact:
        src.emit(ind, "n = buf[pos]")
        src.emit(ind, "if n < 0x80:")
        src.emit(ind + 1, "pos += 1")
        src.emit(ind, "else:")
        src.emit(ind + 1, "n, pos = _uv(buf, pos)")
        src.emit(ind + 1, "if n == -0x80000000:")
        src.emit(ind + 2, "n = 0x80000000  # (Java: Integer.MIN_VALUE - 1 is Integer.MAX_VALUE)")
        src.emit(ind, "n -= 1")
    else:
        size = {"h": 2, "i": 4}[size_code]
        src.emit(ind, f"n = {src.const(struct.Struct('>' + size_code).unpack_from)}(buf, pos)[0]")
        src.emit(ind, f"pos += {size}")


def _emit_null(src: _Source, ind: int, nullable: bool, target: str, what: str) -> None:
    """After _emit_length: a negative length is null (where allowed: any negative, as Kafka's
    generated readers take it) or malformed."""
    src.emit(ind, "if n < 0:")
    if nullable:
        src.emit(ind + 1, f"{target} = None")
    else:
        # Kafka's generated readers refuse both ("non-nullable field was serialized as null")
        src.emit(ind + 1, f"raise SchemaError('null in a non-nullable {what}' if n == -1 else 'negative {what}')")
    src.emit(ind, "else:")


def _emit_decode(src: _Source, ind: int, con, target: str) -> None:
    """Code that decodes one value of `con` at buf[pos] into `target` and moves pos past it."""
    code = _code(con)
    if code is not None:
        s = struct.Struct(">" + code)
        src.emit(ind, f"{target} = {src.const(s.unpack_from)}(buf, pos)[0]")
        src.emit(ind, f"pos += {s.size}")
    elif isinstance(con, KStruct):
        _emit_struct_decode(src, ind, con, target)
    elif isinstance(con, NullableStruct):
        src.emit(ind, "if buf[pos] >= 0x80:")  # int8 marker: negative is null
        src.emit(ind + 1, "pos += 1")
        src.emit(ind + 1, f"{target} = None")
        src.emit(ind, "else:")
        src.emit(ind + 1, "pos += 1")
        _emit_struct_decode(src, ind + 1, con.inner, target)
    elif isinstance(con, (KString, KBytes)):
        string = isinstance(con, KString)
        what = "string" if string else "bytes field"
        _emit_length(src, ind, con.compact, "h" if string else "i")
        _emit_null(src, ind, con.nullable, target, what if string else "bytes length")
        if string and con.compact:
            # Kafka's readers: "string field X had invalid length" past a Java short
            src.emit(ind + 1, "if n > 0x7fff:")
            src.emit(ind + 2, "raise SchemaError(f'string of invalid length {n}')")
        src.emit(ind + 1, "end = pos + n")
        src.emit(ind + 1, "if end > len(buf):")
        src.emit(ind + 2, "raise SchemaError(f'truncated: wanted {n} bytes, {len(buf) - pos} left')")
        if string:
            src.emit(ind + 1, f"{target} = str(buf[pos:end], 'utf-8')")
        elif con.view:
            # a view of a frame that never changes (bytes, a read-only view); a writable one is copied
            m = src.fresh("m")
            src.emit(ind + 1, f"{m} = memoryview(buf)[pos:end]")
            src.emit(ind + 1, f"{target} = {m} if {m}.readonly else bytes({m})")
        else:
            src.emit(ind + 1, f"{target} = bytes(buf[pos:end])")
        src.emit(ind + 1, "pos = end")
    elif isinstance(con, KUuid):
        src.emit(ind, "if pos + 16 > len(buf):")
        src.emit(ind + 1, "raise SchemaError('truncated uuid')")
        src.emit(ind, f"{target} = {src.const(uuidlib.UUID)}(bytes=bytes(buf[pos:pos + 16]))")
        src.emit(ind, "pos += 16")
    elif isinstance(con, KArray):
        _emit_length(src, ind, con.compact, "i")
        _emit_null(src, ind, con.nullable, target, "array count")
        # A count far beyond the bytes left is malformed; refuse before allocating.
        src.emit(ind + 1, "if n > len(buf) - pos:")
        src.emit(ind + 2, "raise SchemaError(f'array count {n} exceeds remaining bytes')")
        code = _code(con.elem)
        if code is not None:
            size = struct.calcsize(">" + code)
            src.emit(ind + 1, f"{target} = list({src.const(struct.unpack_from)}(f'>{{n}}{code}', buf, pos))")
            src.emit(ind + 1, f"pos += n * {size}")
        else:
            var = src.fresh("a")
            src.emit(ind + 1, f"{var} = []")
            src.emit(ind + 1, "for _ in range(n):")
            _emit_decode(src, ind + 2, con.elem, "v")
            src.emit(ind + 2, f"{var}.append(v)")
            src.emit(ind + 1, f"{target} = {var}")
    else:
        raise TypeError(f"no decoder for {con!r}")


def _emit_encode(src: _Source, ind: int, con, value: str, may_be_none: bool = True) -> None:
    """Code that writes `value` (an expression without side effects) as `con` to `b`
    (the writer's buffer; `w` the writer, for large chunks and nested structs)."""
    code = _code(con)
    if code is not None:
        src.emit(ind, f"b += {src.const(struct.Struct('>' + code).pack)}({value})")
    elif isinstance(con, KStruct):
        _emit_struct_encode(src, ind, con, value)
    elif isinstance(con, NullableStruct):
        src.emit(ind, f"if {value} is None:")
        src.emit(ind + 1, "b.append(0xff)")
        src.emit(ind, "else:")
        src.emit(ind + 1, "b.append(1)")
        _emit_encode(src, ind + 1, con.inner, value)
    elif isinstance(con, (KString, KBytes, KArray)):
        at = ind  # where the value's code goes: under "else:" when it may be None
        if may_be_none:
            null = b"\x00" if con.compact else (b"\xff\xff" if isinstance(con, KString) else b"\xff\xff\xff\xff")
            src.emit(ind, f"if {value} is None:")
            src.emit(ind + 1, f"b += {src.const(null)}")
            src.emit(ind, "else:")
            at = ind + 1
        data = value
        if isinstance(con, KString):
            data = src.fresh("d")
            src.emit(at, f"{data} = {value}.encode('utf-8')")
        if con.compact:
            src.emit(at, f"n = len({data}) + 1")
            src.emit(at, "if n < 0x80:")
            src.emit(at + 1, "b.append(n)")
            src.emit(at, "else:")
            src.emit(at + 1, "b += _euv(n)")
        else:
            code = "h" if isinstance(con, KString) else "i"
            src.emit(at, f"b += {src.const(struct.Struct('>' + code).pack)}(len({data}))")
        if isinstance(con, KString):
            src.emit(at, f"b += {data}")
        elif isinstance(con, KBytes):
            # through the writer: a large record set (or a file region) becomes its own chunk;
            # an empty one has nothing to write (most partitions of a large Fetch answer)
            if con.compact:
                src.emit(at, "if n > 1:")
                at += 1
            src.emit(at, f"w.write({data})")
            src.emit(at, "b = w.buf")
        else:
            code = _code(con.elem)
            if code is not None:
                src.emit(at, f"b += {src.const(struct.pack)}(f'>{{len({value})}}{code}', *{value})")
            else:
                item = src.fresh("e")
                src.emit(at, f"for {item} in {value}:")
                _emit_encode(src, at + 1, con.elem, item)
    elif isinstance(con, KUuid):
        src.emit(ind, f"b += {src.const(_uuid_bytes)}({value})")
    else:
        raise TypeError(f"no encoder for {con!r}")


def _uuid_bytes(value) -> bytes:
    if value is None:
        return ZERO_UUID.bytes
    return value.bytes if isinstance(value, uuidlib.UUID) else bytes(value)


def _runs(fields: list[Field]) -> list[tuple]:
    """(fields, struct codes) for each run of non-nullable fixed-size fields, ([field], None)
    for any other field, in order (a Fetch answer has thousands of partitions of six such
    fields each: one unpack/pack a run)."""
    steps, pending, codes = [], [], ""
    for f in fields:
        code = _code(f.con)
        if code is not None and not f.nullable:
            pending.append(f)
            codes += code
            continue
        if pending:
            steps.append((pending, codes))
            pending, codes = [], ""
        steps.append(([f], None))
    if pending:
        steps.append((pending, codes))
    return steps


def _emit_struct_decode(src: _Source, ind: int, st: KStruct, target: str) -> None:
    o = src.fresh("o")
    src.emit(ind, f"{o} = Msg()")
    for fields, codes in _runs(st.fields):
        if codes is None:
            _emit_decode(src, ind, fields[0].con, f"{o}[{fields[0].name!r}]")
            continue
        targets = ", ".join(f"{o}[{f.name!r}]" for f in fields) + ("," if len(fields) == 1 else "")
        s = struct.Struct(">" + codes)
        src.emit(ind, f"{targets} = {src.const(s.unpack_from)}(buf, pos)")
        src.emit(ind, f"pos += {s.size}")
    for f in st.absent + (st.tagged or []):
        src.emit(ind, f"{o}[{f.name!r}] = {_default_expr(src, f)}")
    if st.tagged is not None:
        src.emit(ind, "if buf[pos] == 0:")  # (nearly always: no tagged field)
        src.emit(ind + 1, "pos += 1")
        src.emit(ind, "else:")
        src.emit(ind + 1, "count, pos = _uv(buf, pos)")
        src.emit(ind + 1, "for _ in range(count):")  # (a negative count, as in Kafka's loop: none)
        src.emit(ind + 2, "tag, pos = _uv(buf, pos)")
        src.emit(ind + 2, "size, pos = _uv(buf, pos)")
        src.emit(ind + 2, "end = pos + size")
        src.emit(ind + 2, "if size < 0 or end > len(buf):")
        src.emit(ind + 3, "raise SchemaError(f'truncated: wanted {size} bytes, {len(buf) - pos} left')")
        for f in st.tagged:  # unknown tags are skipped, as Kafka's readers do
            src.emit(ind + 2, f"if tag == {f.tag}:")
            src.emit(ind + 3, f"{o}[{f.name!r}] = {src.const(_tagged_decoder(f.con))}(buf[pos:end])")
        src.emit(ind + 2, "pos = end")
    src.emit(ind, f"{target} = {o}")


def _emit_struct_encode(src: _Source, ind: int, st: KStruct, value: str) -> None:
    g = src.fresh("g")
    src.emit(ind, f"{g} = {value}.get")
    for fields, codes in _runs(st.fields):
        if codes is None:
            f = fields[0]
            src.emit(ind, f"v = {g}({f.name!r})")
            defaulted = not f.nullable and f.default is not None
            if defaulted:
                src.emit(ind, "if v is None:")
                src.emit(ind + 1, f"v = {_default_expr(src, f)}")
            _emit_encode(src, ind, f.con, "v", may_be_none=not defaulted)
            continue
        args = ", ".join(f"(v if (v := {g}({f.name!r})) is not None else {src.const(f.default)})" for f in fields)
        src.emit(ind, f"b += {src.const(struct.Struct('>' + codes).pack)}({args})")
    if st.tagged == []:
        src.emit(ind, "b.append(0)")  # an empty tagged-field section
    elif st.tagged is not None:
        # none of the tagged fields given (the usual case, e.g. each partition of a Fetch
        # answer): an empty section, without building the list of the tags to write
        values = [src.fresh("t") for _ in st.tagged]
        for var, f in zip(values, st.tagged):
            src.emit(ind, f"{var} = {g}({f.name!r})")
        src.emit(ind, "if " + " and ".join(f"{var} is None" for var in values) + ":")
        src.emit(ind + 1, "b.append(0)")
        src.emit(ind, "else:")
        tags = src.fresh("tags")
        src.emit(ind + 1, f"{tags} = []")
        for var, f in zip(values, st.tagged):
            src.emit(ind + 1, f"if {var} is not None and {var} != {_default_expr(src, f)}:")
            src.emit(ind + 2, f"{tags}.append(({f.tag}, {src.const(_tagged_encoder(f.con))}({var})))")
        src.emit(ind + 1, f"if not {tags}:")
        src.emit(ind + 2, "b.append(0)")
        src.emit(ind + 1, "else:")
        src.emit(ind + 2, f"b += _euv(len({tags}))")
        src.emit(ind + 2, f"for tag, data in {tags}:")
        src.emit(ind + 3, "b += _euv(tag)")
        src.emit(ind + 3, "b += _euv(len(data))")
        src.emit(ind + 3, "b += data")


# what a struct's generated decoder and encoder refer to by name (each gets its own copy: the
# generated function is defined into it)
_CODEC_NAMES = {"Msg": Msg, "SchemaError": SchemaError, "_uv": read_uvarint, "_euv": encode_uvarint}


def _compile_decoder(st: KStruct):
    """The generated decoder of one struct, nested structs inlined."""
    dec = _Source(dict(_CODEC_NAMES))
    dec.emit(0, "def decode(buf, pos):")
    _emit_struct_decode(dec, 1, st, "r")
    dec.emit(1, "return r, pos")
    return _define(dec, "decode")


def _compile_encoder(st: KStruct):
    """The generated encoder of one struct, nested structs inlined."""
    enc = _Source(dict(_CODEC_NAMES))
    enc.emit(0, "def encode(o, w):")
    enc.emit(1, "b = w.buf")
    _emit_struct_encode(enc, 1, st, "o")
    return _define(enc, "encode")


def _tagged_decoder(con):
    """A tagged field's value is decoded from its own bytes (what follows it inside them is ignored)."""
    src = _Source({"Msg": Msg, "SchemaError": SchemaError, "_uv": read_uvarint})
    src.emit(0, "def decode_tagged(buf):")
    src.emit(1, "pos = 0")
    _emit_decode(src, 1, con, "v")
    src.emit(1, "return v")
    return _define(src, "decode_tagged")


def _tagged_encoder(con):
    src = _Source({"_euv": encode_uvarint, "ChunkWriter": ChunkWriter, "_join": _join})
    src.emit(0, "def encode_tagged(v):")
    src.emit(1, "w = ChunkWriter()")
    src.emit(1, "b = w.buf")
    _emit_encode(src, 1, con, "v")
    src.emit(1, "return _join(w.parts())")
    return _define(src, "encode_tagged")


def _define(src: _Source, name: str):
    exec(compile("\n".join(src.lines) + "\n", f"<schema codec {name}>", "exec"), src.ns)
    return src.ns[name]


def _join(parts: list) -> bytes:
    return b"".join(p if isinstance(p, (bytes, bytearray, memoryview)) else p.read() for p in parts)


_PRIMITIVES = {
    "bool": Flag, "int8": Int8sb, "int16": Int16sb, "uint16": Int16ub, "int32": Int32sb,
    "uint32": Int32ub, "int64": Int64sb, "float64": Float64b,
}


def _in(version: int, rng) -> bool:
    return rng is not None and rng[0] <= version and (rng[1] is None or version <= rng[1])


def _default(c: dict, version: int):
    t = c["t"]
    d = c.get("d")
    if t.startswith("[]"):
        return []
    if t == "struct":
        return None  # replaced with a factory in _field
    if t in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
        if d is None or d == "":
            return 0
        return int(d, 0) if isinstance(d, str) else int(d)
    if t == "float64":
        return float(d) if d is not None else 0.0
    if t == "bool":
        return d in (True, "true")
    if t == "string":
        if d == "null":
            return None
        return d if d is not None else ""
    if t in ("bytes", "records"):
        return None if t == "records" or _in(version, c.get("nv")) else b""
    if t == "uuid":
        return ZERO_UUID
    raise ValueError(f"unknown type {t}")


def _type_con(c: dict, version: int, flexible: bool, views: bool) -> Construct:
    t = c["t"]
    compact = flexible and not ("fv" in c and not _in(version, c["fv"]))
    nullable = _in(version, c.get("nv"))
    if t == "struct":
        inner = build_struct(c["f"], version, flexible, views)
        return NullableStruct(inner) if nullable else inner
    if t == "[]struct":
        return KArray(build_struct(c["f"], version, flexible, views), compact, nullable)
    if t.startswith("[]"):
        return KArray(_type_con({"t": t[2:]}, version, flexible, views), compact, nullable)
    if t == "string":
        return KString(compact, nullable)
    if t in ("bytes", "records"):
        return KBytes(compact, nullable, view=views and t == "records")
    if t == "uuid":
        return KUuid()
    return _PRIMITIVES[t]


def _field(c: dict, version: int, flexible: bool, views: bool, tag=None) -> Field:
    con = _type_con(c, version, flexible, views) if (_in(version, c["v"]) or tag is not None) else None
    if c["t"] == "struct":
        # a nullable struct defaulting to null ("default": "null", or JSON null as in
        # ConsumerGroupMemberMetadataValue's tagged ClassicMemberMetadata): absent means None
        if _in(version, c.get("nv")) and "d" in c and c["d"] in ("null", None):
            default = None
        else:
            inner = build_struct(c["f"], version, flexible, views)
            default = inner.default_value
    else:
        default = _default(c, version)
    return Field(c["n"], con, default, tag, nullable=_in(version, c.get("nv")))


def build_struct(fields: list[dict], version: int, flexible: bool, views: bool = False) -> KStruct:
    """``views``: its ``records`` fields are decoded as views of the frame (requests only)."""
    pos, tagged, absent = [], [], []
    for c in fields:
        if flexible and _in(version, c.get("tv")):
            tagged.append(_field(c, version, flexible, views, tag=c["tag"]))
        elif _in(version, c["v"]):
            pos.append(_field(c, version, flexible, views))
        else:
            absent.append(_field(c, version, flexible, views))
    return KStruct(pos, tagged if flexible else None, absent)


# ------------------------------------------------------------- message level

def _layout(api_key: int, kind: str, version: int) -> dict:
    for layout in api_spec(api_key)[kind]:
        lo, hi = layout["versions"]
        if lo <= version <= hi:
            return layout
    raise KeyError(f"{API_NAMES.get(api_key, api_key)} v{version} has no {kind} schema")


def is_flexible(api_key: int, version: int) -> bool:
    return _in(version, _layout(api_key, "request", version)["flexible"])


def schema_versions(api_key: int) -> tuple[int, int]:
    lo, hi = _INDEX["apis"][str(api_key)]["versions"]
    return lo, hi


def data_versions(name: str) -> tuple[int, int]:
    lo, hi = _INDEX["data"][name]["versions"]
    return lo, hi


@functools.lru_cache(maxsize=None)
def message(api_key: int, kind: str, version: int) -> KStruct:
    """The construct object for one API's request or response body at `version`."""
    layout = _layout(api_key, kind, version)
    return build_struct(layout["fields"], version, _in(version, layout["flexible"]), views=kind == "request")


@functools.lru_cache(maxsize=None)
def data_message(name: str, version: int) -> KStruct:
    """A `data` spec (coordinator records, control record values, consumer protocol)."""
    spec = data_spec(name)
    return build_struct(spec["fields"], version, _in(version, spec["flexible"]))


@functools.lru_cache(maxsize=None)
def request_header_version(api_key: int, version: int) -> int:
    if api_key == 7 and version == 0:  # ControlledShutdown v0 predates the client id
        return 0
    return 2 if is_flexible(api_key, version) else 1


@functools.lru_cache(maxsize=None)
def response_header_version(api_key: int, version: int) -> int:
    if api_key == 18:  # ApiVersions: always v0 so any client can read it (KIP-511)
        return 0
    return 1 if is_flexible(api_key, version) else 0


def parse(con: KStruct, data, start: int = 0):
    """Parse ``data[start:]`` (without copying it) -> (object, end position in ``data``)."""
    return _decode_all(con, data, start)


def _decode_all(con: KStruct, data, start: int):
    try:
        return con.decode(data, start)
    except (struct.error, IndexError) as e:  # read past the end
        raise SchemaError(f"truncated: {e}") from None
    except UnicodeDecodeError as e:
        raise SchemaError(f"string is not UTF-8: {e}") from None


def build(con: KStruct, obj) -> bytes:
    w = ChunkWriter()
    con.encode(obj, w)
    return _join(w.parts())


class ChunkWriter:
    """A write-only stream that keeps large writes (record sets) as they are.

    Fetch responses carry megabytes of records; writing them into a BytesIO and
    then prefixing the frame size would copy them three times. Here small writes
    gather in a bytearray (`buf`, which generated encoders extend directly) and a
    large one becomes its own chunk, so the frame is sent chunk by chunk without
    being assembled.

    A ``records`` value may also be a deferred region of a file (an object with
    ``len()`` and ``read()``, storage's FileSlice): a large one stays a chunk for the
    server to send from the file itself (sendfile); a small one is read in here, where
    one more syscall per chunk would cost more than the copy.
    """

    LARGE = 16384

    __slots__ = ("chunks", "buf")

    def __init__(self):
        self.chunks: list = []
        self.buf = bytearray()

    def write(self, data) -> None:
        if len(data) >= self.LARGE:
            if self.buf:
                self.chunks.append(self.buf)
                self.buf = bytearray()
            self.chunks.append(data)
        else:
            try:
                self.buf += data
            except TypeError:  # a small deferred region
                self.buf += data.read()

    def parts(self) -> list:
        if self.buf:
            self.chunks.append(self.buf)
            self.buf = bytearray()
        return self.chunks


# ---------------------------------------------------------------- headers

class RequestHeader:
    __slots__ = ("api_key", "api_version", "correlation_id", "client_id", "size")

    def __init__(self, api_key, api_version, correlation_id, client_id, size):
        self.api_key, self.api_version, self.correlation_id = api_key, api_version, correlation_id
        self.client_id, self.size = client_id, size

    def __repr__(self):
        return (f"RequestHeader({API_NAMES.get(self.api_key, self.api_key)} v{self.api_version}, "
                f"corr={self.correlation_id}, client={self.client_id!r})")


_HDR = struct.Struct(">hhi")


def peek_request_header(frame: bytes) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id) from the first 8 bytes of a request frame."""
    if len(frame) < 8:
        raise SchemaError("request shorter than its header")
    return _HDR.unpack_from(frame, 0)


def decode_request_header(frame: bytes) -> RequestHeader:
    """Parse the header of a request whose api key and version are known to the schema."""
    api_key, api_version, corr = peek_request_header(frame)
    hv = request_header_version(api_key, api_version)
    pos, client_id = 8, None
    if hv >= 1:
        if len(frame) < 10:
            raise SchemaError("truncated client id")
        (n,) = struct.unpack_from(">h", frame, 8)
        pos = 10
        if n >= 0:
            if pos + n > len(frame):
                raise SchemaError("truncated client id")
            client_id = str(frame[pos:pos + n], "utf-8", "replace")
            pos += n
    if hv >= 2:
        pos = _skip_tagged(frame, pos)
    return RequestHeader(api_key, api_version, corr, client_id, pos)


def _skip_tagged(frame, pos: int) -> int:
    """Past a header's tagged-field section (no header tag is read)."""
    count, pos = read_uvarint(frame, pos)
    for _ in range(count):  # (a negative count, as in Kafka's loop: none)
        _, pos = read_uvarint(frame, pos)
        size, pos = read_uvarint(frame, pos)
        pos += size
        if size < 0 or pos > len(frame):
            raise SchemaError(f"truncated: a header tagged field of {size} bytes")
    return pos


def decode_request(frame: bytes):
    """frame (without the size prefix) -> (RequestHeader, Msg body)."""
    header = decode_request_header(frame)
    body, _ = parse(message(header.api_key, "request", header.api_version), frame, header.size)
    return header, body


def encode_request(api_key: int, version: int, correlation_id: int, client_id: str | None, body: dict) -> bytes:
    """A whole request frame, size prefix included (used by tests and our own CLI tools)."""
    hv = request_header_version(api_key, version)
    head = _HDR.pack(api_key, version, correlation_id)
    if hv >= 1:
        if client_id is None:
            head += b"\xff\xff"
        else:
            cid = client_id.encode()
            head += struct.pack(">h", len(cid)) + cid
    if hv >= 2:
        head += b"\x00"
    payload = head + build(message(api_key, "request", version), body)
    return struct.pack(">i", len(payload)) + payload


def encode_response_parts(api_key: int, version: int, correlation_id: int, body: dict) -> list:
    """A whole response frame, size prefix included, as the chunks to send in order: bytes-like
    objects and large deferred file regions (see ChunkWriter)."""
    out = ChunkWriter()
    flexible_header = response_header_version(api_key, version) >= 1
    out.write(b"\x00" * (9 if flexible_header else 8))  # size + header, patched below
    message(api_key, "response", version).encode(body, out)
    parts = out.parts()
    size = sum(map(len, parts)) - 4
    if flexible_header:
        struct.pack_into(">iib", parts[0], 0, size, correlation_id, 0)
    else:
        struct.pack_into(">ii", parts[0], 0, size, correlation_id)
    return parts


def encode_response(api_key: int, version: int, correlation_id: int, body: dict) -> bytes:
    """A whole response frame, size prefix included, as one bytes object."""
    parts = encode_response_parts(api_key, version, correlation_id, body)
    return _join(parts)


def decode_response(api_key: int, version: int, frame: bytes):
    """frame (without size prefix) -> (correlation_id, Msg body)."""
    corr, body, _ = decode_response_end(api_key, version, frame)
    return corr, body


def decode_response_end(api_key: int, version: int, frame: bytes):
    """frame (without size prefix) -> (correlation_id, Msg body, where the body ended): bytes
    after that position are not part of the answer."""
    (corr,) = struct.unpack_from(">i", frame, 0)
    pos = 4
    if response_header_version(api_key, version) >= 1:
        pos = _skip_tagged(frame, 4)
    body, end = parse(message(api_key, "response", version), frame, pos)
    return corr, body, end
