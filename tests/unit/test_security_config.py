"""Listeners and security settings as Kafka reads them; what minikafka cannot serve is refused
at start with one line naming the key and the value, never served some other way."""
from __future__ import annotations

import subprocess
import sys

import pytest

from minikafka.broker.config import BrokerConfig, ConfigError


def load(**kv):
    return BrokerConfig.load(overrides={"log.dirs": "/nonexistent", **kv})


def test_default_is_one_plaintext_listener_on_loopback():
    c = load()
    assert [(x.name, x.protocol, x.host, x.port) for x in c.listeners] == [("PLAINTEXT", "PLAINTEXT", "127.0.0.1", 9092)]


def test_named_listeners_map_to_protocols_and_advertise_a_subset():
    c = load(**{"listeners": "INTERNAL://127.0.0.1:0,EXTERNAL://0.0.0.0:9093",
                "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
                "advertised.listeners": "EXTERNAL://broker.example:19093"})
    assert [(x.name, x.protocol) for x in c.listeners] == [("INTERNAL", "PLAINTEXT"), ("EXTERNAL", "PLAINTEXT")]
    assert c.advertised == {"EXTERNAL": ("broker.example", 19093)}


@pytest.mark.parametrize("kv,key,value", [
    ({"listeners": "FOO://127.0.0.1:0"}, "listeners", "FOO://127.0.0.1:0"),
    ({"listener.security.protocol.map": "PLAINTEXT:TLS"}, "listener.security.protocol.map", "PLAINTEXT:TLS"),
    ({"listeners": "PLAINTEXT://127.0.0.1:1,PLAINTEXT://127.0.0.1:2"}, "listeners", "PLAINTEXT://127.0.0.1:1"),
    ({"listeners": "A://127.0.0.1:7,B://127.0.0.1:7", "listener.security.protocol.map": "A:PLAINTEXT,B:PLAINTEXT"},
     "listeners", "A://127.0.0.1:7"),
    ({"advertised.listeners": "SSL://x:1"}, "advertised.listeners", "SSL://x:1"),
    ({"listeners": "PLAINTEXT:9092"}, "listeners", "PLAINTEXT:9092"),
    ({"connections.max.reauth.ms": "60000"}, "connections.max.reauth.ms", "60000"),
    ({"principal.builder.class": "com.example.Builder"}, "principal.builder.class", "com.example.Builder"),
    ({"listener.name.plaintext.num.partitions": "3"}, "listener.name.plaintext.num.partitions", "3"),
    ({"listener.name.other.ssl.client.auth": "required"}, "listener.name.other.ssl.client.auth", "required"),
])
def test_refused_with_the_key_and_value(kv, key, value):
    with pytest.raises(ConfigError) as e:
        load(**kv)
    msg = str(e.value)
    assert "\n" not in msg
    assert f"for configuration {key}:" in msg and value in msg


def test_reauth_disabled_explicitly_is_accepted():
    load(**{"connections.max.reauth.ms": "0"})


@pytest.mark.parametrize("listeners", ["SSL://127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0",
                                       "SASL_SSL://127.0.0.1:0", "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"])
def test_secured_listener_without_its_settings_does_not_start(tmp_path, listeners):
    """Before: an SSL:// listener started and served plaintext. Now a secured listener missing its
    key store / mechanisms is refused at start: exit 2, one line, nothing bound."""
    r = subprocess.run([sys.executable, "-m", "minikafka", "--override", f"listeners={listeners}",
                        "--override", f"log.dirs={tmp_path}"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "ready" not in r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("minikafka: configuration error: Invalid value"), r.stderr


# ------------------------------------------------------------------ TLS and SASL settings
@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    from security_kit import make_certs
    return make_certs(tmp_path_factory.mktemp("certs"))


def ssl_listener(certs, **kv):
    return {"listeners": "SSL://127.0.0.1:0", "ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs.server), **kv}


def test_pem_keystore_file_or_inline(certs):
    c = load(**ssl_listener(certs, **{"ssl.client.auth": "required", "ssl.truststore.type": "PEM",
                                      "ssl.truststore.location": str(certs.ca)}))
    assert c.listeners[0].ssl_context is not None and c.listeners[0].client_auth == "required"
    inline = {"listeners": "SSL://127.0.0.1:0", "ssl.keystore.type": "PEM",
              "ssl.keystore.certificate.chain": certs.server_cert.read_text(),
              "ssl.keystore.key": certs.server_key.read_text()}
    assert load(**inline).listeners[0].ssl_context is not None


@pytest.mark.parametrize("extra,key", [
    ({"ssl.keystore.type": "PKCS12"}, "ssl.keystore.password"),
    ({"ssl.keystore.type": "JKS"}, "ssl.keystore.type"),
    ({"ssl.keystore.location": "/no/such.pem"}, "ssl.keystore.location"),
    ({"ssl.keystore.password": "x"}, "ssl.keystore.password"),
    ({"ssl.client.auth": "sometimes"}, "ssl.client.auth"),
    ({"ssl.enabled.protocols": "TLSv1.1,TLSv1.2"}, "ssl.enabled.protocols"),
    ({"ssl.principal.mapping.rules": "nonsense"}, "ssl.principal.mapping.rules"),
    ({"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256"}, "ssl.cipher.suites"),
    ({"listener.name.ssl.ssl.client.auth": "required", "ssl.truststore.type": "PEM",
      "ssl.truststore.location": "/no/ca.pem"}, "ssl.truststore.location"),
])
def test_tls_settings_not_served_are_refused(certs, extra, key):
    with pytest.raises(ConfigError) as e:
        load(**ssl_listener(certs, **extra))
    assert f"for configuration {key}:" in str(e.value) and "\n" not in str(e.value)


PLAIN = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="a-secret" user_bob="b";'


def test_sasl_listener_mechanisms_and_jaas_users():
    c = load(**{"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "PLAIN",
                "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN})
    assert c.listeners[0].sasl_mechanisms == ["PLAIN"]
    assert c.listeners[0].plain_users == {"alice": "a-secret", "bob": "b"}


@pytest.mark.parametrize("kv,key", [
    ({}, "sasl.enabled.mechanisms"),  # Kafka's default, GSSAPI, is not served
    ({"sasl.enabled.mechanisms": "OAUTHBEARER"}, "sasl.enabled.mechanisms"),
    ({"sasl.enabled.mechanisms": "PLAIN"}, "listener.name.sasl_plaintext.plain.sasl.jaas.config"),
    ({"sasl.enabled.mechanisms": "PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config": "nonsense"},
     "listener.name.sasl_plaintext.plain.sasl.jaas.config"),
    ({"sasl.enabled.mechanisms": "PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config":
      "org.apache.kafka.common.security.scram.ScramLoginModule required;"}, "listener.name.sasl_plaintext.plain.sasl.jaas.config"),
    ({"sasl.enabled.mechanisms": "PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN,
      "sasl.server.callback.handler.class": "x.Y"}, "sasl.server.callback.handler.class"),
])
def test_sasl_settings_not_served_are_refused(kv, key):
    with pytest.raises(ConfigError) as e:
        load(**{"listeners": "SASL_PLAINTEXT://127.0.0.1:0", **kv})
    assert f"for configuration {key}:" in str(e.value) and "\n" not in str(e.value)
    assert "a-secret" not in str(e.value)


def test_principal_mapping_rules_as_kafka():
    from minikafka.broker.security.tls import NoMatchingRule, parse_mapping_rules, principal_from_cert
    subject = ((("organizationName", "acme"),), (("commonName", "Alice"),))
    rules = parse_mapping_rules("RULE:^CN=([^,]+).*$/$1/L,DEFAULT")
    assert principal_from_cert({"subject": subject}, rules) == "User:alice"
    assert principal_from_cert({"subject": ((("organizationName", "acme"),),)}, rules) == "User:O=acme"
    only = parse_mapping_rules("RULE:^CN=(.*),O=(.*)$/$2-$1/U")
    assert principal_from_cert({"subject": subject}, only) == "User:ACME-ALICE"
    with pytest.raises(NoMatchingRule):
        principal_from_cert({"subject": ((("organizationName", "acme"),),)}, only)
    assert principal_from_cert(None, only) == "User:ANONYMOUS"



def test_pkcs12_key_and_trust_stores(certs, tmp_path):
    """PKCS12 stores (openssl-made, as keytool's) serve TLS; a wrong password names the store."""
    import socket
    import ssl
    import threading
    pytest.importorskip("cryptography")
    ks, ts = tmp_path / "server.p12", tmp_path / "trust.p12"
    subprocess.run(["openssl", "pkcs12", "-export", "-in", str(certs.server_cert), "-inkey", str(certs.server_key),
                    "-out", str(ks), "-passout", "pass:ks-secret"], check=True, capture_output=True)
    subprocess.run(["openssl", "pkcs12", "-export", "-nokeys", "-in", str(certs.ca), "-out", str(ts),
                    "-passout", "pass:ts-secret"], check=True, capture_output=True)
    settings = {"listeners": "SSL://127.0.0.1:0", "ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(ks),
                "ssl.keystore.password": "ks-secret", "ssl.truststore.type": "PKCS12",
                "ssl.truststore.location": str(ts), "ssl.truststore.password": "ts-secret",
                "ssl.client.auth": "required"}
    server_ctx = load(**settings).listeners[0].ssl_context
    with pytest.raises(ConfigError, match="for configuration ssl.keystore.location: .*wrong password"):
        load(**{**settings, "ssl.keystore.password": "nope"})
    # a real handshake, client certificate required and verified against the PKCS12 trust store
    srv = socket.create_server(("127.0.0.1", 0))
    got = {}

    def serve():
        conn, _ = srv.accept()
        with server_ctx.wrap_socket(conn, server_side=True) as t:
            got["peer"] = t.getpeercert()["subject"]
            t.sendall(b"ok")

    th = threading.Thread(target=serve)
    th.start()
    client_ctx = ssl.create_default_context(cafile=str(certs.ca))
    client_ctx.load_cert_chain(str(certs.client_cert), str(certs.client_key))
    with client_ctx.wrap_socket(socket.create_connection(srv.getsockname(), timeout=10),
                                server_hostname="127.0.0.1") as c:
        assert c.recv(2) == b"ok"
    th.join(10)
    srv.close()
    assert (("commonName", "client"),) in got["peer"]


def test_client_auth_on_sasl_ssl_only_with_the_listener_prefix(certs):
    base = {"listeners": "SASL_SSL://127.0.0.1:0", "ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs.server),
            "ssl.truststore.type": "PEM", "ssl.truststore.location": str(certs.ca), "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN}
    assert load(**base, **{"ssl.client.auth": "required"}).listeners[0].client_auth == "none"
    assert load(**base, **{"listener.name.sasl_ssl.ssl.client.auth": "required"}).listeners[0].client_auth == "required"


def test_format_add_scram_stores_a_usable_credential(tmp_path):
    """`minikafka format --add-scram` (kafka-storage.sh's): the first SASL user exists before the start."""
    import base64
    import hashlib
    import hmac
    import json
    r = subprocess.run([sys.executable, "-m", "minikafka", "format", "--override", f"log.dirs={tmp_path}",
                        "--add-scram", "SCRAM-SHA-512=[name=admin,password=admin-secret,iterations=8192]"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "scram-credentials.json").read_text()
    assert "admin-secret" not in text
    c = json.loads(text)["admin"]["SCRAM-SHA-512"]
    salted = hashlib.pbkdf2_hmac("sha512", b"admin-secret", base64.b64decode(c["salt"]), 8192)
    client_key = hmac.new(salted, b"Client Key", hashlib.sha512).digest()
    assert base64.b64decode(c["stored_key"]) == hashlib.sha512(client_key).digest() and c["iterations"] == 8192
    bad = subprocess.run([sys.executable, "-m", "minikafka", "format", "--override", f"log.dirs={tmp_path}/b",
                          "--add-scram", "SCRAM-SHA-1=[name=a,password=b]"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1 and "--add-scram" in bad.stderr
