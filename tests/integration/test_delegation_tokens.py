"""Delegation tokens with real clients: the Java client (kafka-clients 4.1, ScramLoginModule with
tokenauth="true") produces and consumes with a token as its owner; tokens survive kill -9; an
expired token stops authenticating once swept; `minikafka` tools log in with a token.
(kafka-python and librdkafka have no SCRAM tokenauth extension; the wire-level cases are the
conformance scenarios of scenarios/delegation_tokens.py.)"""
from __future__ import annotations

import base64

import pytest

from harness import free_port, wait_until
from minikafka.admin.wire import WireClient, connect

USERS = {"alice": "alice-secret", "admin": "admin-secret"}
TOPIC, GROUP, CLUSTER = 2, 3, 4
READ, WRITE, CREATE, DESCRIBE = 3, 4, 5, 8
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule required"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule required"


class TokenBroker:
    def __init__(self, proc, sasl_port: int):
        self.proc, self.sasl = proc, f"127.0.0.1:{sasl_port}"

    def login(self, user: str) -> WireClient:
        return connect(self.sasl, {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                                   "sasl.jaas.config": f'{PLAIN_MODULE} username="{user}" password="{USERS[user]}";'})

    def token_props(self, token, mechanism: str = "SCRAM-SHA-256") -> dict[str, str]:
        return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
                "sasl.jaas.config": f'{SCRAM_MODULE} username="{token.token_id}" '
                                    f'password="{base64.b64encode(token.hmac).decode()}" tokenauth="true";'}


def start(broker_factory, **extra) -> TokenBroker:
    plain, sasl = free_port(), free_port()
    users = " ".join(f'user_{u}="{p}"' for u, p in USERS.items())
    proc = broker_factory(port=plain, overrides={
        "listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": f"{PLAIN_MODULE} {users};",
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": f"{SCRAM_MODULE};",
        "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": f"{SCRAM_MODULE};",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin", "delegation.token.secret.key": "integration-secret", **extra})
    return TokenBroker(proc, sasl)


def create_token(c: WireClient, max_lifetime_ms: int = -1):
    r = c.request(38, 3, {"owner_principal_type": None, "owner_principal_name": None, "renewers": [],
                          "max_lifetime_ms": max_lifetime_ms})
    assert r.error_code == 0, r
    return r


def grant_alice(b: TokenBroker, topic: str) -> None:
    with b.login("admin") as c:
        r = c.request(30, 3, {"creations": [
            {"resource_type": t, "resource_name": n, "resource_pattern_type": 3, "principal": "User:alice",
             "host": "*", "operation": op, "permission_type": 3}
            for t, n, op in ((TOPIC, topic, WRITE), (TOPIC, topic, READ), (TOPIC, topic, CREATE))]})
        assert [x.error_code for x in r.results] == [0, 0, 0], r
        r = c.request(19, 5, {"topics": [{"name": topic, "num_partitions": 1, "replication_factor": 1,
                                          "assignments": [], "configs": []}], "timeout_ms": 10000, "validate_only": False})
        assert r.topics[0].error_code == 0, r


def test_java_client_produces_and_consumes_with_a_token(broker_factory, java_client, unique_topic):
    """kafka-clients 4.1 with ScramLoginModule tokenauth="true" (SCRAM-SHA-256 to produce, -512 to
    consume) is alice's session: her ACLs let it write and read; the same client with a wrong HMAC
    gets Kafka's authentication failure."""
    b = start(broker_factory)
    topic = unique_topic("tok")
    grant_alice(b, topic)
    with b.login("alice") as c:
        token = create_token(c)
    produce = [x for k, v in b.token_props(token).items() for x in ("--producer-config", f"{k}={v}")]
    java_client.run("produce", "--bootstrap", b.sasl, "--topic", topic, "--count", "20", "--tag", "tok", *produce,
                    broker=b.proc)
    consume = [x for k, v in b.token_props(token, "SCRAM-SHA-512").items() for x in ("--consumer-config", f"{k}={v}")]
    res = java_client.run("consume", "--bootstrap", b.sasl, "--topic", topic, "--expected", "20",
                          "--timeout-ms", "30000", *consume, broker=b.proc)
    assert res.summary()["count"] == 20
    token.hmac = b"\x00" * 64
    bad = [x for k, v in b.token_props(token).items() for x in ("--producer-config", f"{k}={v}")]
    res = java_client.run("produce", "--bootstrap", b.sasl, "--topic", topic, "--count", "1", "--tag", "x", *bad,
                          check=False, timeout=90)
    assert res.returncode != 0
    assert ("SaslAuthenticationException: Authentication failed during authentication due to invalid credentials "
            "with SASL mechanism SCRAM-SHA-256") in res.stdout + res.stderr


def test_tokens_survive_kill_9_and_a_restart(broker_factory, unique_topic):
    """A token acknowledged by CreateDelegationToken is there after kill -9: the same HMAC renews
    it and logs in (the HMAC is made again from the secret); one expired at once is gone."""
    b = start(broker_factory)
    with b.login("alice") as c:
        kept = create_token(c)
        gone = create_token(c)
        assert c.request(40, 2, {"hmac": gone.hmac, "expiry_time_period_ms": -1}).error_code == 0
    b.proc.kill9()
    b.proc.restart()
    with b.login("alice") as c:
        r = c.request(41, 3, {"owners": None})
        assert [t.token_id for t in r.tokens] == [kept.token_id]
        assert (r.tokens[0].issue_timestamp, r.tokens[0].max_timestamp) == (kept.issue_timestamp_ms, kept.max_timestamp_ms)
        assert c.request(39, 2, {"hmac": kept.hmac, "renew_period_ms": -1}).error_code == 0
        assert c.request(39, 2, {"hmac": gone.hmac, "renew_period_ms": -1}).error_code == 62
    with connect(b.sasl, b.token_props(kept)) as t:
        assert t.request(3, 12, {"topics": [], "allow_auto_topic_creation": False,
                                 "include_topic_authorized_operations": False}).brokers
    b.proc.restart()
    with connect(b.sasl, b.token_props(kept, "SCRAM-SHA-512")) as t:
        assert t.request(41, 3, {"owners": None}).error_code == 64   # a token's session manages no tokens


def test_expired_token_is_swept_and_no_longer_authenticates(broker_factory):
    b = start(broker_factory, **{"delegation.token.expiry.check.interval.ms": "200"})
    with b.login("alice") as c:
        token = create_token(c, max_lifetime_ms=1000)
        with connect(b.sasl, b.token_props(token)) as t:
            assert t.request(18, 3, {"client_software_name": "t", "client_software_version": "1"}).error_code == 0
            wait_until(lambda: c.request(39, 2, {"hmac": token.hmac, "renew_period_ms": -1}).error_code == 62, 15)
            # the session ends at the token's expiry: its next request closes the connection
            with pytest.raises(ConnectionError):
                t.request(18, 3, {"client_software_name": "t", "client_software_version": "1"})
        assert c.request(41, 3, {"owners": None}).tokens == []
    with pytest.raises(ConnectionError, match="Authentication failed"):
        connect(b.sasl, b.token_props(token))


def test_no_secret_means_no_token_login(broker_factory):
    """Without delegation.token.secret.key nothing authenticates with tokenauth=true (a token made
    while one was set neither: its HMAC belongs to that secret)."""
    b = start(broker_factory)
    with b.login("alice") as c:
        token = create_token(c)
    b.proc.stop()
    b.proc.overrides.pop("delegation.token.secret.key")
    b.proc.start()
    with pytest.raises(ConnectionError, match="Authentication failed"):
        connect(b.sasl, b.token_props(token))
    with b.login("alice") as c:
        assert c.request(41, 3, {"owners": None}).error_code == 61


def test_describe_configs_hides_the_secret(broker_factory):
    b = start(broker_factory)
    with b.login("admin") as c:
        r = c.request(32, 4, {"resources": [{"resource_type": 4, "resource_name": "1",
                                             "configuration_keys": ["delegation.token.secret.key"]}],
                              "include_synonyms": True, "include_documentation": False})
    entry = r.results[0].configs[0]
    assert (entry.name, entry.value, entry.is_sensitive, entry.config_type) == (
        "delegation.token.secret.key", None, True, 9)
    assert all(s.value is None for s in entry.synonyms)
    assert "integration-secret" not in repr(r)
