"""Sample messages for every advertised (api, version), for codec and fuzz tests."""
from __future__ import annotations

import uuid

from minikafka.protocol import schema


def advertised():
    from minikafka.broker import handlers
    for key, api in sorted(handlers.APIS.items()):
        lo, hi = api.versions
        for v in range(lo, (api.unstable or hi) + 1):
            yield key, v


def sample(con, depth=0):
    """A value exercising every field of a struct with non-default data."""
    out = {}
    fields = con.fields + (con.tagged or [])
    for f in fields:
        out[f.name] = value(f.con, depth)
    return out


def value(con, depth):
    from construct import Flag, Int8sb, Int16sb, Int16ub, Int32sb, Int32ub, Int64sb, Float64b
    if isinstance(con, schema.KStruct):
        return sample(con, depth + 1)
    if isinstance(con, schema.NullableStruct):
        return sample(con.inner, depth + 1)
    if isinstance(con, schema.KArray):
        return [value(con.elem, depth + 1) for _ in range(2)] if depth < 4 else []
    if isinstance(con, schema.KString):
        return "s\u00e9"
    if isinstance(con, schema.KBytes):
        return b"\x00\x01bytes"
    if isinstance(con, schema.KUuid):
        return uuid.UUID(int=0x1234)
    return {Flag: True, Int8sb: -3, Int16sb: -300, Int16ub: 65000, Int32sb: -70000, Int32ub: 4000000000,
            Int64sb: -(1 << 40), Float64b: 1.5}[con]
