"""Security metadata kept in log.dirs (Kafka keeps it in the KRaft metadata log): SCRAM
credentials, salted and hashed, never a password. One small JSON file, rewritten atomically
(temp file, fsync, rename, directory fsync) before a change is acknowledged, so an
acknowledged change survives kill -9.
"""
from __future__ import annotations

import base64
import json
import os

from .checkpoint import atomic_write

SCRAM_FILE = "scram-credentials.json"


class ScramCredentialStore:
    """user -> mechanism -> (salt, stored_key, server_key, iterations), as RFC 5802 keeps them."""

    def __init__(self, log_dir: str):
        self.path = os.path.join(log_dir, SCRAM_FILE)
        self.users: dict[str, dict[str, tuple[bytes, bytes, bytes, int]]] = {}
        try:
            with open(self.path, "rb") as f:
                data = json.loads(f.read())
        except FileNotFoundError:
            return
        for user, mechs in data.items():
            self.users[user] = {m: (base64.b64decode(c["salt"]), base64.b64decode(c["stored_key"]),
                                    base64.b64decode(c["server_key"]), int(c["iterations"]))
                                for m, c in mechs.items()}

    def lookup(self, user: str, mechanism: str):
        return self.users.get(user, {}).get(mechanism)

    def apply(self, upserts: list[tuple[str, str, tuple]], deletes: list[tuple[str, str]]) -> None:
        """Apply one request's changes together and make them durable."""
        for user, mechanism in deletes:
            self.users.get(user, {}).pop(mechanism, None)
            if user in self.users and not self.users[user]:
                del self.users[user]
        for user, mechanism, cred in upserts:
            self.users.setdefault(user, {})[mechanism] = cred
        b64 = lambda b: base64.b64encode(b).decode()  # noqa: E731
        atomic_write(self.path, json.dumps({
            user: {m: {"salt": b64(s), "stored_key": b64(st), "server_key": b64(sk), "iterations": i}
                   for m, (s, st, sk, i) in mechs.items()}
            for user, mechs in sorted(self.users.items())}, indent=1))


ACL_FILE = "acls.json"


class AclStore:
    """ACL bindings as lists of plain values (resource type, name, pattern type, principal,
    host, operation, permission: Kafka's codes), rewritten atomically on every change."""

    def __init__(self, log_dir: str):
        self.path = os.path.join(log_dir, ACL_FILE)
        try:
            with open(self.path, "rb") as f:
                self.rows: list[list] = [list(r) for r in json.loads(f.read())]
        except FileNotFoundError:
            self.rows = []

    def save(self, rows: list[list]) -> None:
        atomic_write(self.path, json.dumps(rows, indent=0))
        self.rows = [list(r) for r in rows]


TOKENS_FILE = "delegation-tokens.json"


class DelegationTokenStore:
    """Delegation tokens (KIP-48), without their HMACs (made again from the token id and
    delegation.token.secret.key): token id -> owner, requester and renewers (principals as
    "Type:name"), issue, expiry and max timestamps (ms). Rewritten atomically on every change."""

    def __init__(self, log_dir: str):
        self.path = os.path.join(log_dir, TOKENS_FILE)
        try:
            with open(self.path, "rb") as f:
                self.tokens: dict[str, dict] = json.loads(f.read() or b"{}")
        except FileNotFoundError:
            self.tokens = {}

    def save(self, tokens: dict[str, dict]) -> None:
        atomic_write(self.path, json.dumps(tokens, indent=1, sort_keys=True))
        self.tokens = tokens
