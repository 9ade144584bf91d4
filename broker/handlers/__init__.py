"""One module per Kafka API, named after the API: `produce.py`, `fetch.py`,
`init_producer_id.py`, `end_txn.py`, ... (`from minikafka.broker.handlers import end_txn`).

Each module defines API_KEY, VERSIONS (the range we advertise and serve) and
`async def handle(conn, header, request) -> dict | None`. Optional:
`UNSTABLE_VERSIONS` (advertised only with unstable.api.versions.enable), `enabled(broker)`
(False: not advertised, e.g. KIP-848 APIs without `consumer` in group.coordinator.rebalance.protocols),
`error_response(request, code)` (the answer Kafka's AbstractRequest.getErrorResponse builds for an
error that refuses the whole request, e.g. a request during SASL authentication; without it, the
answer is the top-level error code alone).
Modules without API_KEY (common.py, group_common.py, ...) are shared helpers.
"""
from __future__ import annotations

import importlib
import pkgutil


def advertised_range(handler, broker) -> tuple[int, int]:
    lo, hi = handler.VERSIONS
    if broker.config["unstable.api.versions.enable"]:
        hi = getattr(handler, "UNSTABLE_VERSIONS", (lo, hi))[1]
    return lo, hi


def api_versions_body(broker, error_code: int = 0, api_version: int = 0) -> dict:
    keys = []
    for key in sorted(REGISTRY):
        if not getattr(REGISTRY[key], "enabled", lambda b: True)(broker):
            continue
        lo, hi = advertised_range(REGISTRY[key], broker)
        keys.append({"api_key": key, "min_version": lo, "max_version": hi})
    body = {"error_code": error_code, "api_keys": keys, "throttle_time_ms": 0}
    if api_version >= 3:  # KIP-584: supported and finalized features (transaction.version, ...)
        body.update(broker.features.api_versions_fields(api_version))
    return body


REGISTRY: dict = {}

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    _mod = importlib.import_module(f"{__name__}.{_info.name}")
    if hasattr(_mod, "API_KEY"):
        assert _mod.API_KEY not in REGISTRY, f"API key {_mod.API_KEY}: {_info.name} and {REGISTRY[_mod.API_KEY].__name__}"
        REGISTRY[_mod.API_KEY] = _mod
