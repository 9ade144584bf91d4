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
