"""Kafka message schemas as construct objects, built from protocol/schema.json.

schema.json is derived (tools/gen_protocol.py) from Apache Kafka's own message
definitions, so no field list is typed here: this module only knows the wire
*types* (int16, compact string, tagged fields, ...) and turns the field trees
into construct objects for one (api key, version, request|response).

Decoded messages are `Msg` dicts with snake_case keys that also allow attribute
access (``req.topics[0].partitions``). Every field of the message's schema is
present after decoding: fields that the version lacks get their default, so
handlers never branch on versions just to read. Encoding takes plain dicts; a
missing key is written as the field's default and fields the version lacks are
skipped, so a handler can build one response for all versions.
"""
from __future__ import annotations

import functools
import io
import json
import os
import struct
import uuid as uuidlib

from construct import Construct, Float64b, Flag, FormatField, Int8sb, Int16sb, Int16ub, Int32sb, Int32ub, Int64sb
from construct.core import StreamError, stream_read, stream_write

_SCHEMA_PATH = os.path.join(os.path.dirname(__file__), "schema.json")
with open(_SCHEMA_PATH) as _f:
    SCHEMA = json.load(_f)
APIS: dict[int, dict] = {int(k): v for k, v in SCHEMA["apis"].items()}
API_NAMES: dict[int, str] = {k: v["name"] for k, v in APIS.items()}


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

class UVarInt(Construct):
    """Unsigned varint (7 bits per byte, low group first) used by flexible versions."""

    def _parse(self, stream, context, path):
        result = shift = 0
        while True:
            b = stream.read(1)
            if not b:
                raise SchemaError("truncated varint")
            byte = b[0]
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7
            if shift > 63:
                raise SchemaError("varint too long")

    def _build(self, obj, stream, context, path):
        stream.write(encode_uvarint(obj))
        return obj


def encode_uvarint(n: int) -> bytes:
    if n < 0x80:
        return bytes((n,))
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


uvarint = UVarInt()


def _read(stream, n):
    if n > _remaining(stream):  # also keeps absurd varint lengths away from read()
        raise SchemaError(f"truncated: wanted {n} bytes, {_remaining(stream)} left")
    data = stream.read(n)
    if len(data) != n:
        raise SchemaError(f"truncated: wanted {n} bytes, got {len(data)}")
    return data


class KString(Construct):
    """string: int16 length (classic) or uvarint length+1 (compact); null = -1 / 0."""

    def __init__(self, compact: bool, nullable: bool):
        super().__init__()
        self.compact, self.nullable = compact, nullable

    def _parse(self, stream, context, path):
        n = uvarint._parse(stream, context, path) - 1 if self.compact else Int16sb._parse(stream, context, path)
        if n < 0:
            if n == -1 and self.nullable:
                return None
            # Kafka's generated readers refuse both ("non-nullable field was serialized as null")
            raise SchemaError("null in a non-nullable string" if n == -1 else "negative string length")
        try:
            return _read(stream, n).decode("utf-8")
        except UnicodeDecodeError as e:
            raise SchemaError(f"string is not UTF-8: {e}") from None

    def _build(self, obj, stream, context, path):
        if obj is None:
            stream.write(b"\x00" if self.compact else b"\xff\xff")
            return obj
        data = obj.encode("utf-8")
        stream.write(encode_uvarint(len(data) + 1) if self.compact else struct.pack(">h", len(data)))
        stream.write(data)
        return obj


class KBytes(Construct):
    """bytes / records: int32 length (classic) or uvarint length+1 (compact); null = -1 / 0."""

    def __init__(self, compact: bool, nullable: bool):
        super().__init__()
        self.compact, self.nullable = compact, nullable

    def _parse(self, stream, context, path):
        n = uvarint._parse(stream, context, path) - 1 if self.compact else Int32sb._parse(stream, context, path)
        if n < 0:
            if n == -1 and self.nullable:
                return None
            raise SchemaError("null in a non-nullable bytes field" if n == -1 else "negative bytes length")
        return _read(stream, n)

    def _build(self, obj, stream, context, path):
        if obj is None:
            stream.write(b"\x00" if self.compact else b"\xff\xff\xff\xff")
            return obj
        n = len(obj)
        stream.write(encode_uvarint(n + 1) if self.compact else struct.pack(">i", n))
        stream.write(obj)
        return obj


class KUuid(Construct):
    def _parse(self, stream, context, path):
        return uuidlib.UUID(bytes=_read(stream, 16))

    def _build(self, obj, stream, context, path):
        if obj is None:
            obj = ZERO_UUID
        stream.write(obj.bytes if isinstance(obj, uuidlib.UUID) else bytes(obj))
        return obj


ZERO_UUID = uuidlib.UUID(int=0)


class KArray(Construct):
    """Array: int32 count (classic) or uvarint count+1 (compact); null = -1 / 0."""

    def __init__(self, elem: Construct, compact: bool, nullable: bool = False):
        super().__init__()
        self.elem, self.compact, self.nullable = elem, compact, nullable

    def _parse(self, stream, context, path):
        n = uvarint._parse(stream, context, path) - 1 if self.compact else Int32sb._parse(stream, context, path)
        if n < 0:
            if n == -1 and self.nullable:
                return None
            raise SchemaError("null in a non-nullable array" if n == -1 else "negative array count")
        # A count far beyond the bytes left is malformed; refuse before allocating.
        if n > _remaining(stream):
            raise SchemaError(f"array count {n} exceeds remaining bytes")
        p = self.elem._parse
        return [p(stream, context, path) for _ in range(n)]

    def _build(self, obj, stream, context, path):
        if obj is None:
            stream.write(b"\x00" if self.compact else b"\xff\xff\xff\xff")
            return obj
        stream.write(encode_uvarint(len(obj) + 1) if self.compact else struct.pack(">i", len(obj)))
        b = self.elem._build
        for item in obj:
            b(item, stream, context, path)
        return obj


def _remaining(stream) -> int:
    if isinstance(stream, io.BytesIO):
        buf = stream.getbuffer()
        n = len(buf) - stream.tell()
        buf.release()
        return n
    return 1 << 31


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
    defaults so the decoded dict always has the full shape.
    """

    def __init__(self, fields: list[Field], tagged: list[Field] | None, absent: list[Field]):
        super().__init__()
        self.fields = fields
        self.tagged = sorted(tagged, key=lambda f: f.tag) if tagged is not None else None
        self.by_tag = {f.tag: f for f in (tagged or [])}
        self.absent = absent
        self.steps = _steps(fields)

    def _parse(self, stream, context, path):
        out = Msg()
        for run, f in self.steps:
            if run is None:
                out[f.name] = f.con._parse(stream, context, path)
                continue
            data = stream.read(run.size)
            if len(data) != run.size:
                raise SchemaError(f"truncated: wanted {run.size} bytes, got {len(data)}")
            for name, v in zip(run.names, run.unpack(data)):
                out[name] = v
        for f in self.absent:
            out[f.name] = f.make_default()
        if self.tagged is not None:
            for f in self.tagged:
                out[f.name] = f.make_default()
            count = uvarint._parse(stream, context, path)
            for _ in range(count):
                tag = uvarint._parse(stream, context, path)
                size = uvarint._parse(stream, context, path)
                data = _read(stream, size)
                f = self.by_tag.get(tag)
                if f is not None:  # unknown tags are skipped, as Kafka's readers do
                    out[f.name] = f.con._parse(io.BytesIO(data), context, path)
        return out

    def _build(self, obj, stream, context, path):
        get = obj.get
        for run, f in self.steps:
            if run is None:
                v = get(f.name)
                if v is None and not f.nullable and f.default is not None:
                    v = f.make_default()
                f.con._build(v, stream, context, path)
                continue
            vals = []
            for name, default in run.items:
                v = get(name)
                vals.append(default if v is None else v)
            stream.write(run.pack(*vals))
        if self.tagged is not None:
            items = []
            for f in self.tagged:
                v = get(f.name)
                if v is None or v == f.make_default():
                    continue
                sub = io.BytesIO()
                f.con._build(v, sub, context, path)
                items.append((f.tag, sub.getvalue()))
            stream.write(encode_uvarint(len(items)))
            for tag, data in items:
                stream.write(encode_uvarint(tag))
                stream.write(encode_uvarint(len(data)))
                stream.write(data)
        return obj

    def default_value(self):
        out = Msg()
        for f in self.fields + self.absent + (self.tagged or []):
            out[f.name] = f.make_default()
        return out


class _Run:
    """Consecutive fixed-size primitive fields of a struct, packed and unpacked with one
    struct.Struct (a Fetch answer has thousands of partitions of six such fields each)."""

    __slots__ = ("items", "names", "size", "pack", "unpack")

    def __init__(self, fields: list[Field], codes: str):
        st = struct.Struct(">" + codes)
        self.items = [(f.name, f.default) for f in fields]
        self.names = [f.name for f in fields]
        self.size, self.pack, self.unpack = st.size, st.pack, st.unpack


def _code(con) -> str | None:
    """The struct code of a fixed-size primitive construct, None for anything else."""
    if con is Flag:
        return "?"
    if isinstance(con, FormatField):
        return con.fmtstr.lstrip("<>=!")
    return None


def _steps(fields: list[Field]) -> list[tuple]:
    """(run, None) for each run of primitive fields, (None, field) for any other field, in order."""
    steps, pending, codes = [], [], ""
    for f in fields:
        code = _code(f.con)
        if code is not None and not f.nullable:
            pending.append(f)
            codes += code
            continue
        if pending:
            steps.append((_Run(pending, codes), None))
            pending, codes = [], ""
        steps.append((None, f))
    if pending:
        steps.append((_Run(pending, codes), None))
    return steps


class NullableStruct(Construct):
    """A struct field listed in nullableVersions: int8 marker (-1 null, 1 present)."""

    def __init__(self, inner: KStruct):
        super().__init__()
        self.inner = inner

    def _parse(self, stream, context, path):
        if Int8sb._parse(stream, context, path) < 0:
            return None
        return self.inner._parse(stream, context, path)

    def _build(self, obj, stream, context, path):
        if obj is None:
            stream.write(b"\xff")
            return obj
        stream.write(b"\x01")
        return self.inner._build(obj, stream, context, path)


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


def _type_con(c: dict, version: int, flexible: bool) -> Construct:
    t = c["t"]
    compact = flexible and not ("fv" in c and not _in(version, c["fv"]))
    nullable = _in(version, c.get("nv"))
    if t == "struct":
        inner = build_struct(c["f"], version, flexible)
        return NullableStruct(inner) if nullable else inner
    if t == "[]struct":
        return KArray(build_struct(c["f"], version, flexible), compact, nullable)
    if t.startswith("[]"):
        return KArray(_type_con({"t": t[2:]}, version, flexible), compact, nullable)
    if t == "string":
        return KString(compact, nullable)
    if t in ("bytes", "records"):
        return KBytes(compact, nullable)
    if t == "uuid":
        return KUuid()
    return _PRIMITIVES[t]


def _field(c: dict, version: int, flexible: bool, tag=None) -> Field:
    con = _type_con(c, version, flexible) if (_in(version, c["v"]) or tag is not None) else None
    if c["t"] == "struct":
        # a nullable struct defaulting to null ("default": "null", or JSON null as in
        # ConsumerGroupMemberMetadataValue's tagged ClassicMemberMetadata): absent means None
        if _in(version, c.get("nv")) and "d" in c and c["d"] in ("null", None):
            default = None
        else:
            inner = build_struct(c["f"], version, flexible)
            default = inner.default_value
    else:
        default = _default(c, version)
    return Field(c["n"], con, default, tag, nullable=_in(version, c.get("nv")))


def build_struct(fields: list[dict], version: int, flexible: bool) -> KStruct:
    pos, tagged, absent = [], [], []
    for c in fields:
        if flexible and _in(version, c.get("tv")):
            tagged.append(_field(c, version, flexible, tag=c["tag"]))
        elif _in(version, c["v"]):
            pos.append(_field(c, version, flexible))
        else:
            absent.append(_field(c, version, flexible))
    return KStruct(pos, tagged if flexible else None, absent)


# ------------------------------------------------------------- message level

def _layout(api_key: int, kind: str, version: int) -> dict:
    for layout in APIS[api_key][kind]:
        lo, hi = layout["versions"]
        if lo <= version <= hi:
            return layout
    raise KeyError(f"{API_NAMES.get(api_key, api_key)} v{version} has no {kind} schema")


def is_flexible(api_key: int, version: int) -> bool:
    return _in(version, _layout(api_key, "request", version)["flexible"])


def schema_versions(api_key: int) -> tuple[int, int]:
    lo, hi = APIS[api_key]["versions"]
    return lo, hi


@functools.lru_cache(maxsize=None)
def message(api_key: int, kind: str, version: int) -> KStruct:
    """The construct object for one API's request or response body at `version`."""
    layout = _layout(api_key, kind, version)
    return build_struct(layout["fields"], version, _in(version, layout["flexible"]))


@functools.lru_cache(maxsize=None)
def data_message(name: str, version: int) -> KStruct:
    """A `data` spec (coordinator records, control record values, consumer protocol)."""
    spec = SCHEMA["data"][name]
    return build_struct(spec["fields"], version, _in(version, spec["flexible"]))


def request_header_version(api_key: int, version: int) -> int:
    if api_key == 7 and version == 0:  # ControlledShutdown v0 predates the client id
        return 0
    return 2 if is_flexible(api_key, version) else 1


def response_header_version(api_key: int, version: int) -> int:
    if api_key == 18:  # ApiVersions: always v0 so any client can read it (KIP-511)
        return 0
    return 1 if is_flexible(api_key, version) else 0


def parse(con: Construct, data: bytes, start: int = 0):
    """Parse ``data[start:]`` (without copying it) -> (object, end position in ``data``)."""
    stream = io.BytesIO(data)
    if start:
        stream.seek(start)
    try:
        obj = con._parse(stream, None, "")
    except (StreamError, struct.error) as e:
        raise SchemaError(str(e)) from None
    return obj, stream.tell()


def build(con: Construct, obj) -> bytes:
    stream = io.BytesIO()
    con._build(obj, stream, None, "")
    return stream.getvalue()


class ChunkWriter:
    """A write-only stream that keeps large writes (record sets) as they are.

    Fetch responses carry megabytes of records; writing them into a BytesIO and
    then prefixing the frame size would copy them three times. Here small writes
    gather in a bytearray and a large one becomes its own chunk, so the frame is
    sent chunk by chunk without being assembled.

    A ``records`` value may also be a deferred region of a file (an object with
    ``len()`` and ``read()``, storage's FileSlice): a large one stays a chunk for the
    server to send from the file itself (sendfile); a small one is read in here, where
    one more syscall per chunk would cost more than the copy.
    """

    LARGE = 16384

    __slots__ = ("chunks", "buf", "size")

    def __init__(self):
        self.chunks: list = []
        self.buf = bytearray()
        self.size = 0

    def write(self, data) -> int:
        n = len(data)
        if n >= self.LARGE:
            if self.buf:
                self.chunks.append(self.buf)
                self.buf = bytearray()
            self.chunks.append(data)
        else:
            try:
                self.buf += data
            except TypeError:  # a small deferred region
                self.buf += data.read()
        self.size += n
        return n

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
            client_id = bytes(frame[pos:pos + n]).decode("utf-8", "replace")
            pos += n
    if hv >= 2:
        stream = io.BytesIO(frame)
        stream.seek(pos)
        count = uvarint._parse(stream, None, "")
        for _ in range(count):
            uvarint._parse(stream, None, "")
            _read(stream, uvarint._parse(stream, None, ""))
        pos = stream.tell()
    return RequestHeader(api_key, api_version, corr, client_id, pos)


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
    message(api_key, "response", version)._build(body, out, None, "")
    parts = out.parts()
    head = parts[0]
    if flexible_header:
        struct.pack_into(">iib", head, 0, out.size - 4, correlation_id, 0)
    else:
        struct.pack_into(">ii", head, 0, out.size - 4, correlation_id)
    return parts


def encode_response(api_key: int, version: int, correlation_id: int, body: dict) -> bytes:
    """A whole response frame, size prefix included, as one bytes object."""
    parts = encode_response_parts(api_key, version, correlation_id, body)
    if len(parts) == 1:
        return bytes(parts[0])
    return b"".join(p if isinstance(p, (bytes, bytearray, memoryview)) else p.read() for p in parts)


def decode_response(api_key: int, version: int, frame: bytes):
    """frame (without size prefix) -> (correlation_id, Msg body)."""
    (corr,) = struct.unpack_from(">i", frame, 0)
    pos = 4
    if response_header_version(api_key, version) >= 1:
        stream = io.BytesIO(frame)
        stream.seek(4)
        count = uvarint._parse(stream, None, "")
        for _ in range(count):
            uvarint._parse(stream, None, "")
            _read(stream, uvarint._parse(stream, None, ""))
        pos = stream.tell()
    body, _ = parse(message(api_key, "response", version), frame[pos:])
    return corr, body
