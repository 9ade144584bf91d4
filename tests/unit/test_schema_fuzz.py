"""Fuzzing the request decoders: truncated, bit-flipped and random bodies for every
advertised (api, version) either decode or raise SchemaError, quickly, and never
anything else (the broker turns SchemaError into a clean connection close)."""
from __future__ import annotations

import random
import time

import pytest

from minikafka.protocol import schema
from schema_samples import advertised as _advertised, sample as _sample


@pytest.mark.parametrize("key,version", list(_advertised()))
def test_mutated_requests_fail_only_with_schema_error(key, version):
    rng = random.Random(key * 1000 + version)
    con = schema.message(key, "request", version)
    good = schema.build(con, _sample(con))
    inputs = [good[:n] for n in range(0, len(good), max(1, len(good) // 40))]
    for _ in range(150 if good else 0):
        data = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        inputs.append(bytes(data))
    inputs += [bytes(rng.randrange(256) for _ in range(rng.randint(0, 64))) for _ in range(50)]
    inputs.append(b"\xff" * 64)  # huge/negative lengths and counts everywhere
    started = time.monotonic()
    for data in inputs:
        try:
            schema.parse(con, data)
        except schema.SchemaError:
            pass
    assert time.monotonic() - started < 5  # no pathological slowness (e.g. giant allocations)
