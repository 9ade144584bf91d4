"""Delegation tokens (KIP-48): CreateDelegationToken, RenewDelegationToken, ExpireDelegationToken,
DescribeDelegationToken and SASL/SCRAM login with a token, on a broker with ACLs, a token secret
and the SCRAM mechanisms (dsl.TOKENS). The plain connection ("main", User:ANONYMOUS) may not
manage tokens (PLAINTEXT), nor may an SSL client without a certificate; alice, bob and carol
speak over SASL PLAIN, conn="token:t" over SCRAM with the token saved as "t" (its owner's session).

Token ids (random) are K1, K2, ... and HMACs "<hmac of K1>" in the transcripts; a token's expiry
and maximum lifetime are shown relative to its issue time. Kafka's brokers learn of a new or
removed token from the metadata log a moment after the controller answered: the step after a
create retries (retry_while) or polls (until) until Kafka knows the token."""
from __future__ import annotations

import base64
import secrets
from dataclasses import dataclass

from minikafka.admin.wire import WireClient, scram_client_final

from ..dsl import PRESENT, TOKENS, TOKENS_NO_SECRET, Call, Scenario, batch, call, produce, ref, restart
from .acls import acl, create_acls

ALICE, BOB, CAROL = "sasl:alice", "sasl:bob", "sasl:carol"
USER, DELEGATION_TOKEN, TOPIC = 7, 6, 2
CREATE_TOKENS, DESCRIBE_TOKENS, DESCRIBE, WRITE = 13, 14, 8, 4
NOT_FOUND = 62
OK = {"error_code": 0}


def create(save=None, renewers=(), max_lifetime_ms=-1, owner=None, owner_type="User", v=3, conn=ALICE, **kw):
    body = {"renewers": [{"principal_type": t, "principal_name": n} for t, n in renewers],
            "max_lifetime_ms": max_lifetime_ms}
    if v >= 3:
        body.update(owner_principal_type=owner_type if owner else None, owner_principal_name=owner)
    return call(38, v, body, save=save, conn=conn, **kw)


def renew(token, period=-1, v=2, conn=ALICE, **kw):
    hmac = ref(f"{token}.hmac") if isinstance(token, str) else token
    return call(39, v, {"hmac": hmac, "renew_period_ms": period}, conn=conn, **kw)


def expire(token, period=-1, v=2, conn=ALICE, **kw):
    hmac = ref(f"{token}.hmac") if isinstance(token, str) else token
    return call(40, v, {"hmac": hmac, "expiry_time_period_ms": period}, conn=conn, **kw)


def describe(owners=None, v=3, conn=ALICE, **kw):
    return call(41, v, {"owners": None if owners is None else
                        [{"principal_type": "User", "principal_name": o} for o in owners]}, conn=conn, **kw)


def listed(**kw):
    """DescribeDelegationToken until this scenario's tokens are listed."""
    return describe(until={"tokens.0": PRESENT}, **kw)


@dataclass
class TokenLogin(Call):
    """A SCRAM login with a token on a new connection to the SASL listener (body: token_id, hmac,
    mechanism, tokenauth); the answer is the exchange's last SaslAuthenticate error."""

    def exchange(self, conn, body):
        host, port = conn.sock.getpeername()[:2]
        with WireClient(host, port, timeout=30, client_id="conformance") as c:   # a failed login closes it
            mechanism = body["mechanism"]
            hs = c.request(17, 1, {"mechanism": mechanism})
            if hs.error_code:
                return {"error_code": hs.error_code, "error_message": None}
            first = f"n={body['token_id']},r={base64.b64encode(secrets.token_bytes(18)).decode()}"
            if body["tokenauth"]:
                first += ",tokenauth=true"
            r = c.request(36, 2, {"auth_bytes": ("n,," + first).encode()})
            if r.error_code:
                return {"error_code": r.error_code, "error_message": r.error_message}
            final, _ = scram_client_final(mechanism, base64.b64encode(body["hmac"]).decode(), first,
                                          r.auth_bytes.decode())
            r = c.request(36, 2, {"auth_bytes": final})
            return {"error_code": r.error_code, "error_message": r.error_message}


def token_login(token, hmac=None, mechanism="SCRAM-SHA-256", tokenauth=True, **kw):
    return TokenLogin(36, 2, {"token_id": ref(f"{token}.token_id"), "hmac": hmac or ref(f"{token}.hmac"),
                              "mechanism": mechanism, "tokenauth": tokenauth}, conn="sasl-raw", **kw)


SCENARIOS = [
    Scenario("token/refused_without_authentication",
             "Kafka refuses the token APIs over PLAINTEXT and over SSL without a client certificate "
             "(DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, whatever the version), even to a super user; an SSL "
             "client with a certificate (CN=alice) may.", broker=TOKENS, steps=[
        create(conn="main"), create(v=1, conn="main"), create(v=2, conn="main"),
        renew(b"no-such-hmac", conn="main"), renew(b"no-such-hmac", v=1, conn="main"),
        expire(b"no-such-hmac", conn="main"), expire(b"no-such-hmac", v=1, conn="main"),
        describe(conn="main"), describe(v=1, conn="main"),
        create(conn="ssl"), describe(conn="ssl"),
        create("t", conn="ssl:alice"),
        describe(conn="ssl:alice", until={"tokens.0": PRESENT}),
    ]),
    Scenario("token/lifecycle",
             "alice creates a token with bob as renewer (an hour's maximum lifetime, so its expiry is its "
             "maximum); carol may neither renew, expire nor see it; bob renews it and sees it when asking "
             "for alice's tokens; an empty owner list lists nothing; alice expires it at once (period -1), "
             "after which it is not found.", broker=TOKENS, steps=[
        create("t", renewers=[("User", "bob")], max_lifetime_ms=3600000),
        listed(),
        renew("t", conn=CAROL, retry_while=(NOT_FOUND,)),
        expire("t", 1000, conn=CAROL),
        describe(conn=CAROL),
        renew("t", 7200000, conn=BOB),
        describe(["alice"], conn=BOB),
        describe(["carol"], conn=BOB),
        describe([], conn=BOB),
        describe(["bob"], conn=BOB, label="bob is a renewer: his tokens include it"),
        expire("t", -1),
        # (Kafka: a renewal sent before its brokers learnt of the removal would write the token again)
        describe(until={"tokens.0": "<absent>"}),
        renew("t"),
        expire("t", -1),
    ]),
    Scenario("token/create_variants",
             "v1 and v2 (the requester is the owner), v3 naming alice herself as owner, a maximum lifetime "
             "shorter than the renewal time (expiry = maximum) and one longer than "
             "delegation.token.max.lifetime.ms (capped), a renewer that is no User (INVALID_PRINCIPAL_TYPE), "
             "another owner without CREATE_TOKENS on that user (DELEGATION_TOKEN_AUTHORIZATION_FAILED) and "
             "with it; a token alice requested for another owner is hers to describe (as its requester), "
             "and its renewer's.", broker=TOKENS, steps=[
        create("a", v=1), create("b", v=2), create("c", owner="alice"),
        create("d", max_lifetime_ms=60000), create("e", max_lifetime_ms=10 ** 15),
        create(renewers=[("User", "bob"), ("Group", "ops")]),
        create(owner="{o}"),
        create(owner="{o}", owner_type="Group"),
        create_acls(acl(USER, "User:{o}", CREATE_TOKENS)),
        create("f", owner="{o}", renewers=[("User", "carol")], until=OK),
        describe(until={"tokens.5": PRESENT}, label="the six alice owns or requested"),
        describe(["{o}"]),
        describe(["{o}"], conn=CAROL, until={"tokens.0": PRESENT}, label="carol renews it"),
        create_acls(acl(USER, "User:{o}", DESCRIBE_TOKENS)),
        describe(["{o}"], until={"tokens.0": PRESENT}),
    ]),
    Scenario("token/describe_acls",
             "A token alice owns is shown to carol once she may DESCRIBE that DELEGATION_TOKEN (its id), or "
             "DESCRIBE_TOKENS of User:alice; bob sees none of them.", broker=TOKENS, steps=[
        create("t"),
        listed(),
        describe(["alice"], conn=CAROL),
        create_acls(acl(DELEGATION_TOKEN, ref("t.token_id"), DESCRIBE, principal="User:carol")),
        describe(["alice"], conn=CAROL, until={"tokens.0": PRESENT}),
        describe(["alice"], conn=BOB),
    ]),
    Scenario("token/expiry",
             "A token with a one-second maximum lifetime: renewed while it lasts (never past its maximum), "
             "then DELEGATION_TOKEN_EXPIRED to a renewal and to an expiry with a period, while an expiry "
             "with period -1 still removes it.", broker=TOKENS, steps=[
        create("t", max_lifetime_ms=1000),
        renew("t", 100000, until={"error_code": 66}, retry_while=(NOT_FOUND,)),
        expire("t", 5000),
        expire("t", -1),
        renew("t", until={"error_code": NOT_FOUND}),
    ]),
    Scenario("token/session_ends_with_token",
             "A session authenticated with a token of ten seconds' maximum lifetime serves requests until "
             "the token expires; its first request after that closes the connection (Kafka: the session "
             "expired and was not re-authenticated).", broker=TOKENS, steps=[
        create("t", max_lifetime_ms=10000),
        create_acls(acl(TOPIC, "{t}", WRITE)),
        produce(batch(), conn="token:t", until={"responses.0.partition_responses.0.error_code": 0}),
        renew("t", until={"error_code": 66}, label="until it expired"),
        produce(batch(), conn="token:t"),
    ]),
    Scenario("token/swept",
             "With delegation.token.expiry.check.interval.ms=500 a token past its five seconds is removed: "
             "a renewal gets DELEGATION_TOKEN_NOT_FOUND, and it is no longer listed.", broker=dict(TOKENS, **{"delegation.token.expiry.check.interval.ms": "500"}), steps=[
        create("t", max_lifetime_ms=5000),
        listed(),
        renew("t", until={"error_code": NOT_FOUND}, timeout_s=30),
        describe(),
    ]),
    Scenario("token/login",
             "SASL/SCRAM with a token (tokenauth=true) is a session of its owner: alice's WRITE ACL lets it "
             "produce, with SCRAM-SHA-256 and SCRAM-SHA-512, but it may not manage tokens "
             "(DELEGATION_TOKEN_REQUEST_NOT_ALLOWED). A wrong HMAC, an unknown token id, the token id "
             "without tokenauth: SASL_AUTHENTICATION_FAILED. Once the token is expired (removed), a new "
             "login fails; the session already open goes on (Kafka ends it at the expiry it had at login).",
             broker=TOKENS, steps=[
        create("t"),
        token_login("t", until=OK),
        produce(batch(), conn="token:t"),
        create_acls(acl(TOPIC, "{t}", WRITE)),
        produce(batch(), conn="token:t", until={"responses.0.partition_responses.0.error_code": 0}),
        produce(batch(), conn="token-sha512:t"),
        create(conn="token:t"),
        renew("t", conn="token:t"),
        expire("t", conn="token:t"),
        describe(conn="token:t"),
        token_login("t", hmac=b"\x00" * 64),
        token_login("t", mechanism="SCRAM-SHA-512", hmac=b"wrong"),
        token_login("t", tokenauth=False),
        expire("t", -1),
        token_login("t", until={"error_code": 58}),
        produce(batch(), conn="token:t", label="the session open before goes on"),
    ]),
    Scenario("token/survive_kill",
             "Tokens survive a kill -9 right after the answer and a clean restart: listed with the same "
             "lifetimes, their HMACs still renew them, a login with them still works.",
             broker=TOKENS, steps=[
        create("t", renewers=[("User", "bob")], max_lifetime_ms=3600000),
        create("u", max_lifetime_ms=7200000),
        restart(kill=True),
        listed(),
        renew("t", conn=BOB),
        token_login("u", until=OK),
        expire("u", -1),
        restart(),
        describe(until={"tokens.1": "<absent>"}),
        token_login("t", until=OK),
    ]),
    Scenario("token/disabled",
             "Without delegation.token.secret.key every token API answers DELEGATION_TOKEN_AUTH_DISABLED "
             "to an authenticated client (after Kafka's own checks: a PLAINTEXT client is still refused "
             "first, an unknown renewer type still INVALID_PRINCIPAL_TYPE).", broker=TOKENS_NO_SECRET, steps=[
        create(), create(v=1),
        create(renewers=[("Group", "x")]),
        renew(b"x" * 64), expire(b"x" * 64), describe(), describe(v=1),
        create(conn="main"), describe(conn="main"),
    ]),
]
