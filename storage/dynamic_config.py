"""Configs changed at run time: GROUP resource configs (KIP-848) and dynamic broker
configs. Kafka keeps them in its metadata log; here they are one small JSON file in the
first log dir (``minikafka-dynamic-configs.json``), replaced atomically (fsync + rename)
on every change, read at start-up.

    {"groups": {"<group id>": {"consumer.session.timeout.ms": "60000", ...}},
     "broker": {"<node id>" or "": {"log.retention.ms": "...", ...}}}
"""
from __future__ import annotations

import json
import os

from .checkpoint import atomic_write

FILE = "minikafka-dynamic-configs.json"


class DynamicConfigStore:
    def __init__(self, log_dir: str):
        self.path = os.path.join(log_dir, FILE)
        self.groups: dict[str, dict[str, str]] = {}
        self.broker: dict[str, dict[str, str]] = {}
        try:
            with open(self.path, "rb") as f:
                data = json.loads(f.read() or b"{}")
        except FileNotFoundError:
            data = {}
        self.groups = {g: dict(v) for g, v in (data.get("groups") or {}).items()}
        self.broker = {n: dict(v) for n, v in (data.get("broker") or {}).items()}

    def group(self, group_id: str) -> dict[str, str]:
        return self.groups.get(group_id, {})

    def set_group(self, group_id: str, overrides: dict[str, str]) -> None:
        new = dict(self.groups)
        if overrides:
            new[group_id] = dict(overrides)
        else:
            new.pop(group_id, None)
        self._write(new, self.broker)
        self.groups = new

    def set_broker(self, name: str, overrides: dict[str, str]) -> None:
        new = dict(self.broker)
        if overrides:
            new[name] = dict(overrides)
        else:
            new.pop(name, None)
        self._write(self.groups, new)
        self.broker = new

    def _write(self, groups, broker) -> None:
        atomic_write(self.path, json.dumps({"groups": groups, "broker": broker}, sort_keys=True, indent=1))


QUOTAS_FILE = "client-quotas.json"


class ClientQuotaStore:
    """Client quotas (kafka-configs' users, clients and ips): one JSON file in the first log dir,
    replaced atomically before a change is answered.

        [{"entity": {"user": "alice", "client-id": null}, "quotas": {"producer_byte_rate": 1048576.0}}, ...]

    An entity maps its types to a name, null being the type's default."""

    def __init__(self, log_dir: str):
        self.path = os.path.join(log_dir, QUOTAS_FILE)
        self.entities: dict[tuple, dict[str, float]] = {}
        try:
            with open(self.path, "rb") as f:
                rows = json.loads(f.read() or b"[]")
        except FileNotFoundError:
            rows = []
        for row in rows:
            self.entities[entity_key(row["entity"])] = {k: float(v) for k, v in row["quotas"].items()}

    def save(self, entities: dict[tuple, dict[str, float]]) -> None:
        rows = [{"entity": dict(key), "quotas": values} for key, values in entities.items() if values]
        atomic_write(self.path, json.dumps(rows, indent=1))
        self.entities = {k: dict(v) for k, v in entities.items() if v}


def entity_key(entity: dict) -> tuple:
    """An entity (type -> name or None) as a hashable key, in type order."""
    return tuple(sorted(entity.items(), key=lambda kv: kv[0]))
