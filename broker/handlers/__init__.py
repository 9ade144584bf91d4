"""One module per Kafka API, named after the API: `produce.py`, `fetch.py`,
`init_producer_id.py`, `end_txn.py`, ... (`from minikafka.broker.handlers import end_txn`).

APIS below says which APIs are served, by which module, at which versions (what ApiVersions
advertises, as Kafka's ApiKeys). Each module defines `async def handle(conn, header, request)
-> dict | None`, and optionally `error_response(request, code, message)` (the answer Kafka's
AbstractRequest.getErrorResponse builds for an error that refuses the whole request, e.g. a
request during SASL authentication; without it, the answer is the top-level error code alone).
A module is imported when its API is first used: a client uses a handful of the 53, and
importing them all would lengthen every start (bench/README.md).
Modules not in APIS (common.py, group_common.py, ...) are shared helpers.
"""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import Callable, NamedTuple


class Api(NamedTuple):
    module: str  # the handler module in this package
    versions: tuple[int, int]  # served and advertised
    unstable: int | None = None  # the newest version with unstable.api.versions.enable
    # (broker) -> bool: served now. Advertised either way, as Kafka's; while False every request
    # is answered UNSUPPORTED_VERSION (the module's error_response) before any authorization
    enabled: Callable | None = None


def consumer_groups(ctx) -> bool:
    """Kafka's isConsumerGroupProtocolEnabled: KIP-848's groups are served with `consumer` in
    group.coordinator.rebalance.protocols and the finalized group.version at 1 or more."""
    return "consumer" in ctx.config["group.coordinator.rebalance.protocols"] and ctx.features.group_version >= 1


APIS: dict[int, Api] = {
    0: Api("produce", (0, 13)),
    1: Api("fetch", (4, 18)),
    2: Api("list_offsets", (1, 10)),
    3: Api("metadata", (0, 13)),
    8: Api("offset_commit", (2, 9), unstable=10),
    9: Api("offset_fetch", (1, 9), unstable=10),
    10: Api("find_coordinator", (0, 6)),
    11: Api("join_group", (0, 9)),
    12: Api("heartbeat", (0, 4)),
    13: Api("leave_group", (0, 5)),
    14: Api("sync_group", (0, 5)),
    15: Api("describe_groups", (0, 6)),
    16: Api("list_groups", (0, 5)),
    17: Api("sasl_handshake", (0, 1)),
    18: Api("api_versions", (0, 4)),
    19: Api("create_topics", (2, 7)),
    20: Api("delete_topics", (1, 6)),
    21: Api("delete_records", (0, 2)),
    22: Api("init_producer_id", (0, 5), unstable=6),
    23: Api("offset_for_leader_epoch", (2, 4)),
    24: Api("add_partitions_to_txn", (0, 5)),
    25: Api("add_offsets_to_txn", (0, 4)),
    26: Api("end_txn", (0, 5)),
    27: Api("write_txn_markers", (1, 1)),  # as Kafka 4.x: v0 was removed (KIP-896), v2 (KIP-1228) is newer than 4.1
    28: Api("txn_offset_commit", (0, 5)),
    29: Api("describe_acls", (1, 3)),  # Kafka 4.x removed v0
    30: Api("create_acls", (1, 3)),  # Kafka 4.x removed v0
    31: Api("delete_acls", (1, 3)),  # Kafka 4.x removed v0
    32: Api("describe_configs", (1, 4)),
    33: Api("alter_configs", (0, 2)),
    34: Api("alter_replica_log_dirs", (1, 2)),  # Kafka 4.x removed v0
    35: Api("describe_log_dirs", (1, 4)),
    36: Api("sasl_authenticate", (0, 2)),
    37: Api("create_partitions", (0, 3)),
    38: Api("create_delegation_token", (1, 3)),  # Kafka 4.x removed v0 of the token APIs (KIP-896)
    39: Api("renew_delegation_token", (1, 2)),
    40: Api("expire_delegation_token", (1, 2)),
    41: Api("describe_delegation_token", (1, 3)),
    42: Api("delete_groups", (0, 2)),
    43: Api("elect_leaders", (0, 2)),
    44: Api("incremental_alter_configs", (0, 1)),
    45: Api("alter_partition_reassignments", (0, 1)),
    46: Api("list_partition_reassignments", (0, 0)),
    47: Api("offset_delete", (0, 0)),
    48: Api("describe_client_quotas", (0, 1)),
    49: Api("alter_client_quotas", (0, 1)),
    50: Api("describe_user_scram_credentials", (0, 0)),
    51: Api("alter_user_scram_credentials", (0, 0)),
    55: Api("describe_quorum", (0, 2)),
    57: Api("update_features", (0, 2)),
    60: Api("describe_cluster", (0, 2)),
    61: Api("describe_producers", (0, 0)),
    65: Api("describe_transactions", (0, 0)),
    66: Api("list_transactions", (0, 2)),
    68: Api("consumer_group_heartbeat", (0, 1), enabled=consumer_groups),
    69: Api("consumer_group_describe", (0, 1), enabled=consumer_groups),
    74: Api("list_config_resources", (0, 1)),
    75: Api("describe_topic_partitions", (0, 0)),
}

_loaded: dict[int, ModuleType] = {}


def handler(api_key: int) -> ModuleType | None:
    """The module serving `api_key` (imported on its first use), None if the API is not served."""
    mod = _loaded.get(api_key)
    if mod is None and api_key in APIS:
        mod = _loaded[api_key] = importlib.import_module(f"{__name__}.{APIS[api_key].module}")
    return mod


def advertised_range(api: Api, ctx) -> tuple[int, int]:
    lo, hi = api.versions
    if api.unstable is not None and ctx.config["unstable.api.versions.enable"]:
        hi = api.unstable
    return lo, hi


def api_versions_body(ctx, api_version: int = 0) -> dict:
    keys = []
    for key in sorted(APIS):
        api = APIS[key]
        lo, hi = advertised_range(api, ctx)
        keys.append({"api_key": key, "min_version": lo, "max_version": hi})
    body = {"error_code": 0, "api_keys": keys, "throttle_time_ms": 0}
    if api_version >= 3:  # KIP-584: supported and finalized features (transaction.version, ...)
        body.update(ctx.features.api_versions_fields(api_version))
    return body
