"""TLS misuse: plaintext and garbage on TLS ports (SSL and SASL_SSL), certificates the broker does
not trust or whose name no mapping rule takes, requests before SASL on SASL_SSL, a PKCS12 key
store. Each: the answer Kafka gives (no Kafka frame, the close, a failed authentication counted),
the broker still serving, the bystander still working. The principal a client certificate maps to
is checked through what the authorizer lets it do."""
from __future__ import annotations

import os
import ssl
import subprocess

import pytest

from harness import BrokerProcess, free_port, wait_until
from rawclient import RawClient
from security_kit import make_certs, plain_jaas

from .hostile import API_VERSIONS, connect, metric, no_kafka_answer, outcome

RULES = "RULE:^CN=([^,]+),OU=test,O=minikafka$/$1/U"  # no DEFAULT: any other name matches no rule
TOPIC = "secret"


def client_cert(certs, name: str, subject: str):
    """A client certificate signed by the test CA (key + certificate PEM files)."""
    d = certs.dir
    subprocess.run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out",
                    f"{name}.csr", "-subj", subject], cwd=d, check=True, capture_output=True, timeout=60)
    subprocess.run(["openssl", "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                    "-CAcreateserial", "-out", f"{name}.pem", "-days", "2"], cwd=d, check=True,
                   capture_output=True, timeout=60)
    return d / f"{name}.pem", d / f"{name}.key"


@pytest.fixture(scope="module")
def tls_broker(tmp_path_factory):
    d = tmp_path_factory.mktemp("tls")
    certs = make_certs(d / "certs")
    certs.mallory = client_cert(certs, "mallory", "/O=elsewhere/CN=mallory")
    ports = {"SSL": free_port(), "SASL_SSL": free_port()}
    metrics_port = free_port()
    b = BrokerProcess(d / "data", name="tls")
    b.overrides = {
        "listeners": f"PLAINTEXT://127.0.0.1:{b.port},SSL://127.0.0.1:{ports['SSL']},"
                     f"SASL_SSL://127.0.0.1:{ports['SASL_SSL']}",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs.server),
        "ssl.truststore.type": "PEM", "ssl.truststore.location": str(certs.ca),
        "listener.name.ssl.ssl.client.auth": "required", "ssl.principal.mapping.rules": RULES,
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": plain_jaas({"alice": "alice-secret"}),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:ANONYMOUS", "metrics.listener": f"127.0.0.1:{metrics_port}"}
    b.addresses = {name: f"127.0.0.1:{port}" for name, port in ports.items()}
    b.metrics_port, b.certs = metrics_port, certs
    try:
        b.start()
        with RawClient.to(b.bootstrap) as c:  # (as User:ANONYMOUS, a super user)
            assert c.create_topic(TOPIC) == 0
            # User:CLIENT (the rule's upper-cased CN of the test client certificate) may describe it
            r = c.request(30, 3, {"creations": [{"resource_type": 2, "resource_name": TOPIC,
                                                 "resource_pattern_type": 3, "principal": "User:CLIENT",
                                                 "host": "*", "operation": 8, "permission_type": 3}]})
            assert r.results[0].error_code == 0
        yield b
    finally:
        b.close()


def tls_to(b, listener: str, cert=None) -> ssl.SSLSocket:
    ctx = ssl.create_default_context(cafile=str(b.certs.ca))
    if cert is not None:
        ctx.load_cert_chain(*map(str, cert))
    return ctx.wrap_socket(connect(b.addresses[listener]), server_hostname="127.0.0.1")


def failed_authentications(b) -> float:
    return metric(b.metrics_port, "kafka_server_socketservermetrics_failed_authentication_total")


def topic_error(sock) -> int:
    c = RawClient.__new__(RawClient)
    c.sock, c.client_id, c.corr = sock, "t", 0
    return c.request(3, 12, {"topics": [{"name": TOPIC, "topic_id": None}], "allow_auto_topic_creation": False,
                             "include_topic_authorized_operations": False}).topics[0].error_code


@pytest.mark.parametrize("listener", ["SSL", "SASL_SSL"])
@pytest.mark.parametrize("what", ["a Kafka request", "garbage", "a TLS record header announcing 16 MB"])
def test_plaintext_and_garbage_on_a_tls_port_get_no_kafka_answer(tls_broker, bystander, listener, what):
    by = bystander(tls_broker.bootstrap)
    before = failed_authentications(tls_broker)
    data = {"a Kafka request": API_VERSIONS, "garbage": os.urandom(3000),
            "a TLS record header announcing 16 MB": b"\x16\x03\x03\xff\xff" + b"\x00" * 100}[what]
    with connect(tls_broker.addresses[listener]) as s:
        s.sendall(data)
        assert no_kafka_answer(s)  # nothing, or a TLS alert, then the close
    wait_until(lambda: failed_authentications(tls_broker) > before, 10)  # counted as Kafka counts it
    by.wait_progress()


def test_a_certificate_from_an_untrusted_ca_is_refused(tls_broker, bystander, tmp_path):
    by = bystander(tls_broker.bootstrap)
    other = make_certs(tmp_path / "other")  # a whole other CA and its client certificate
    before = failed_authentications(tls_broker)
    with pytest.raises((ssl.SSLError, ConnectionError)):
        with tls_to(tls_broker, "SSL", (other.client_cert, other.client_key)) as s:
            s.sendall(API_VERSIONS)
            assert outcome(s, 10) == "closed"
            raise ConnectionError("closed")  # (TLS 1.3: the refusal comes after the client's handshake)
    wait_until(lambda: failed_authentications(tls_broker) > before, 10)
    by.wait_progress()


def test_no_client_certificate_where_it_is_required(tls_broker, bystander):
    by = bystander(tls_broker.bootstrap)
    with pytest.raises((ssl.SSLError, ConnectionError)):
        with tls_to(tls_broker, "SSL") as s:
            s.sendall(API_VERSIONS)
            assert outcome(s, 10) == "closed"
            raise ConnectionError("closed")
    by.wait_progress()


def test_a_certificate_maps_to_its_principal_by_the_rules(tls_broker, bystander):
    """CN=client,OU=test,O=minikafka -> User:CLIENT (the rule, upper-cased), who may describe the
    topic; a certificate no rule takes (and no DEFAULT) is refused, as Kafka's SslPrincipalMapper."""
    by = bystander(tls_broker.bootstrap)
    with tls_to(tls_broker, "SSL", (tls_broker.certs.client_cert, tls_broker.certs.client_key)) as s:
        assert topic_error(s) == 0
    before = failed_authentications(tls_broker)
    with pytest.raises((ssl.SSLError, ConnectionError)):
        with tls_to(tls_broker, "SSL", tls_broker.certs.mallory) as s:
            s.sendall(API_VERSIONS)
            assert outcome(s, 10) == "closed"
            raise ConnectionError("closed")
    wait_until(lambda: failed_authentications(tls_broker) > before, 10)
    assert "No rules apply to CN=mallory,O=elsewhere" in tls_broker.log_text()
    by.wait_progress()


def test_sasl_ssl_serves_nothing_before_authentication(tls_broker, bystander):
    by = bystander(tls_broker.bootstrap)
    with tls_to(tls_broker, "SASL_SSL") as s:
        c = RawClient.__new__(RawClient)
        c.sock, c.client_id, c.corr = s, "t", 0
        c.send(3, 12, {"topics": None, "allow_auto_topic_creation": False,
                       "include_topic_authorized_operations": False})
        assert outcome(s, 10) == "closed"
    with tls_to(tls_broker, "SASL_SSL") as s:
        c = RawClient.__new__(RawClient)
        c.sock, c.client_id, c.corr = s, "t", 0
        assert c.request(17, 1, {"mechanism": "PLAIN"}).error_code == 0
        assert c.request(36, 2, {"auth_bytes": b"\0alice\0alice-secret"}).error_code == 0
        assert topic_error(s) == 29  # User:alice: no ACL on the topic (TOPIC_AUTHORIZATION_FAILED)
    by.wait_progress()


def test_a_pkcs12_key_store_serves_tls_and_refuses_plaintext(tmp_path, bystander):
    pytest.importorskip("cryptography")
    certs = make_certs(tmp_path / "certs")
    ks = tmp_path / "server.p12"
    subprocess.run(["openssl", "pkcs12", "-export", "-in", str(certs.server_cert), "-inkey", str(certs.server_key),
                    "-out", str(ks), "-passout", "pass:ks-secret"], check=True, capture_output=True, timeout=60)
    tls_port = free_port()
    b = BrokerProcess(tmp_path / "data", name="pkcs12")
    b.overrides = {"listeners": f"PLAINTEXT://127.0.0.1:{b.port},SSL://127.0.0.1:{tls_port}",
                   "ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(ks),
                   "ssl.keystore.password": "ks-secret"}
    with b:
        by = bystander(b.bootstrap)
        with connect(f"127.0.0.1:{tls_port}") as s:
            s.sendall(API_VERSIONS)
            assert no_kafka_answer(s)
        ctx = ssl.create_default_context(cafile=str(certs.ca))
        with ctx.wrap_socket(connect(f"127.0.0.1:{tls_port}"), server_hostname="127.0.0.1") as s:
            s.sendall(API_VERSIONS)
            assert outcome(s, 10) == "answered"
        by.wait_progress()
        by.stop()
    by.check()
