"""One module per Kafka API, named by its key (as in franz-go's kfake):
`00_produce.py`, `01_fetch.py`, `18_api_versions.py`, ...

Each module defines API_KEY, VERSIONS (the range we advertise and serve) and
`async def handle(conn, header, request) -> dict | None`. Optional:
`UNSTABLE_VERSIONS` (advertised only with unstable.api.versions.enable).
"""
from __future__ import annotations

import importlib
import os
import re

from protocol import schema

def advertised_range(handler, broker) -> tuple[int, int]:
    lo, hi = handler.VERSIONS
    if broker.config["unstable.api.versions.enable"]:
        hi = getattr(handler, "UNSTABLE_VERSIONS", (lo, hi))[1]
    return lo, hi


def api_versions_body(broker, error_code: int = 0) -> dict:
    keys = []
    for key in sorted(REGISTRY):
        lo, hi = advertised_range(REGISTRY[key], broker)
        keys.append({"api_key": key, "min_version": lo, "max_version": hi})
    return {"error_code": error_code, "api_keys": keys, "throttle_time_ms": 0}


REGISTRY: dict = {}

for _fn in sorted(os.listdir(os.path.dirname(__file__))):
    _m = re.match(r"^(\d\d)_\w+\.py$", _fn)
    if _m:
        _mod = importlib.import_module(f"{__name__}.{_fn[:-3]}")
        assert _mod.API_KEY == int(_m.group(1)), _fn
        REGISTRY[_mod.API_KEY] = _mod
