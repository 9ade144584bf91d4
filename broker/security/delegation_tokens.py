"""Delegation tokens (KIP-48), as Kafka's DelegationTokenControlManager and DelegationTokenManager
keep them: created for an owner (by default the requester) with renewers, an expiry
(``delegation.token.expiry.time.ms`` after the last renewal) and a maximum lifetime
(``delegation.token.max.lifetime.ms``); the HMAC is HMAC-SHA512 of the token id under
``delegation.token.secret.key`` (none set: the token APIs answer DELEGATION_TOKEN_AUTH_DISABLED).
A token authenticates with SCRAM (either mechanism): user name the token id, password the
base64 HMAC, extension ``tokenauth=true``; the session is the owner's. Expired tokens are removed
every ``delegation.token.expiry.check.interval.ms``. Tokens are stored durably
(storage.security_store.DelegationTokenStore) before an answer names them.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import secrets
import uuid

from minikafka.protocol.errors import ErrorCode
from minikafka.storage.security_store import DelegationTokenStore
from .sasl import SCRAM_HASHES, SCRAM_MIN_ITERATIONS, salted_password, scram_keys

log = logging.getLogger("minikafka.tokens")
LONG_MAX = 2**63 - 1


def kafka_uuid() -> str:
    """Kafka's Uuid.randomUuid().toString(): 16 random bytes in URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def _sum(now: int, duration: int) -> int:
    return LONG_MAX if now > LONG_MAX - duration else now + duration


def principal(kind: str, name: str) -> str:
    return f"{kind}:{name}"


def split_principal(text: str) -> tuple[str, str]:
    kind, _, name = text.partition(":")
    return kind, name


class DelegationTokenManager:
    def __init__(self, config, log_dir: str, clock_ms):
        self.secret = config["delegation.token.secret.key"] or None
        self.max_lifetime_ms = config["delegation.token.max.lifetime.ms"]
        self.renew_ms = config["delegation.token.expiry.time.ms"]
        self.clock_ms = clock_ms
        self.store = DelegationTokenStore(log_dir)
        self._by_hmac: dict[bytes, str] | None = None
        self._credentials: dict[tuple[str, str], tuple] = {}   # (token id, mechanism) -> SCRAM credential

    @property
    def enabled(self) -> bool:
        return self.secret is not None

    @property
    def tokens(self) -> dict[str, dict]:
        return self.store.tokens

    def hmac(self, token_id: str) -> bytes:
        return hmac.new(self.secret.encode(), token_id.encode(), hashlib.sha512).digest()

    def token_for_hmac(self, mac: bytes) -> str | None:
        if not self.enabled:
            return None
        if self._by_hmac is None:
            self._by_hmac = {self.hmac(t): t for t in self.tokens}
        return self._by_hmac.get(bytes(mac))

    def _save(self, tokens: dict[str, dict]) -> None:
        self.store.save(tokens)
        self._by_hmac = None
        self._credentials = {k: v for k, v in self._credentials.items() if k[0] in tokens}

    # ------------------------------------------------------------------ the APIs
    def create(self, owner: str, requester: str, renewers: list[str], max_lifetime_ms: int) -> dict:
        """A new token (Kafka's createDelegationToken): {token_id, hmac, issue, expiry, max}."""
        now = self.clock_ms()
        lifetime = self.max_lifetime_ms if max_lifetime_ms <= 0 else min(self.max_lifetime_ms, max_lifetime_ms)
        max_ts = _sum(now, lifetime)
        expiry = min(max_ts, _sum(now, self.renew_ms))
        token_id = kafka_uuid()
        tokens = dict(self.tokens)
        tokens[token_id] = {"owner": owner, "requester": requester, "renewers": list(renewers),
                            "issue": now, "expiry": expiry, "max": max_ts}
        self._save(tokens)
        return {"token_id": token_id, "hmac": self.hmac(token_id), "issue": now, "expiry": expiry, "max": max_ts}

    def renew(self, mac: bytes, who: str, renew_period_ms: int) -> tuple[ErrorCode, int]:
        """(error, new expiry) as Kafka's renewDelegationToken (0 with an error)."""
        now = self.clock_ms()
        token_id = self.token_for_hmac(mac)
        if token_id is None:
            return ErrorCode.DELEGATION_TOKEN_NOT_FOUND, 0
        t = self.tokens[token_id]
        if t["max"] < now or t["expiry"] < now:
            return ErrorCode.DELEGATION_TOKEN_EXPIRED, 0
        if not self._may_renew(t, who):
            return ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, 0
        period = self.renew_ms if renew_period_ms <= 0 else min(self.renew_ms, renew_period_ms)
        expiry = min(t["max"], now + period)
        self._save({**self.tokens, token_id: dict(t, expiry=expiry)})
        return ErrorCode.NONE, expiry

    def expire(self, mac: bytes, who: str, expiry_period_ms: int) -> tuple[ErrorCode, int]:
        """(error, new expiry) as Kafka's expireDelegationToken: a negative period removes it now."""
        now = self.clock_ms()
        token_id = self.token_for_hmac(mac)
        if token_id is None:
            return ErrorCode.DELEGATION_TOKEN_NOT_FOUND, 0
        t = self.tokens[token_id]
        if not self._may_renew(t, who):
            return ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, 0
        if expiry_period_ms < 0:
            self._save({k: v for k, v in self.tokens.items() if k != token_id})
            return ErrorCode.NONE, now
        if t["max"] < now or t["expiry"] < now:
            return ErrorCode.DELEGATION_TOKEN_EXPIRED, 0
        expiry = min(t["max"], _sum(now, expiry_period_ms))
        self._save({**self.tokens, token_id: dict(t, expiry=expiry)})
        return ErrorCode.NONE, expiry

    @staticmethod
    def _may_renew(t: dict, who: str) -> bool:
        return t["owner"] == who or who in t["renewers"]

    def describe(self, requester: str, owners: list[str] | None, authorize_token, authorize_owner) -> list[dict]:
        """The tokens the requester may see (Kafka's DelegationTokenManager.filterToken): of the
        given owners, its own, or ones it is allowed to DESCRIBE (DELEGATION_TOKEN) or whose owner
        it may DESCRIBE_TOKENS (USER); a principal's tokens are those it owns, requested or renews
        (TokenInformation.ownerOrRenewer)."""
        out = []
        for token_id, t in self.tokens.items():
            mine = lambda p: t["owner"] == p or t["requester"] == p or p in t["renewers"]  # noqa: E731
            if owners is not None and not any(mine(o) for o in owners):
                continue
            if not (mine(requester) or authorize_token(token_id) or authorize_owner(t["owner"])):
                continue
            out.append(dict(t, token_id=token_id, hmac=self.hmac(token_id)))
        return out

    def expire_tokens(self) -> int:
        """Remove the tokens past their expiry or maximum lifetime (Kafka's periodic sweep)."""
        now = self.clock_ms()
        gone = [k for k, t in self.tokens.items() if t["max"] < now or t["expiry"] < now]
        for k in gone:
            log.info("Delegation token expired for token: %s for owner: %s", k, self.tokens[k]["owner"])
        if gone:
            self._save({k: v for k, v in self.tokens.items() if k not in gone})
        return len(gone)

    # ------------------------------------------------------------------ SASL/SCRAM
    def scram_credential(self, token_id: str, mechanism: str):
        """(salt, stored key, server key, iterations) of a token's password (its base64 HMAC), made
        on first use with a random salt, as Kafka's ScramFormatter.generateCredential; None if no
        such token."""
        if not self.enabled or token_id not in self.tokens or mechanism not in SCRAM_HASHES:
            return None
        key = (token_id, mechanism)
        cred = self._credentials.get(key)
        if cred is None:
            salt = secrets.token_bytes(32)
            password = base64.b64encode(self.hmac(token_id)).decode()
            stored, server = scram_keys(mechanism, salted_password(mechanism, password, salt, SCRAM_MIN_ITERATIONS))
            cred = self._credentials[key] = (salt, stored, server, SCRAM_MIN_ITERATIONS)
        return cred

    def owner(self, token_id: str) -> str | None:
        """The owner's name (what a token's SCRAM session is authenticated as)."""
        t = self.tokens.get(token_id) if self.enabled else None
        return None if t is None else split_principal(t["owner"])[1]

