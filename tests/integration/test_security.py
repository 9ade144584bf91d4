"""TLS and SASL listeners against real clients and raw frames.

One broker for the module with four listeners (PLAINTEXT for setup, SSL with client
certificates requested, SASL_PLAINTEXT and SASL_SSL with PLAIN, SCRAM-SHA-256 and
SCRAM-SHA-512); certificates are made at test time with openssl.
"""
from __future__ import annotations

import secrets
import socket
import ssl
import struct
import time
import warnings

import pytest

from minikafka.broker.security.sasl import salted_password
from minikafka.protocol import schema
from harness import BrokerProcess, free_port, wait_until
from rawclient import RawClient
from security_kit import CLIENT_DN, SCRAM_JAAS, make_certs, plain_jaas

USERS = {"alice": "alice-secret", "bob": "bob-secret"}
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


class SecuredBroker:
    def __init__(self, proc: BrokerProcess, ports: dict[str, int], certs):
        self.proc, self.ports, self.certs = proc, ports, certs

    def address(self, protocol: str) -> str:
        return f"127.0.0.1:{self.ports[protocol]}"


def secured_overrides(ports: dict[str, int], certs) -> dict[str, str]:
    o = {"listeners": ",".join(f"{p}://127.0.0.1:{ports[p]}" for p in PROTOCOLS),
         "ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs.server),
         "ssl.truststore.type": "PEM", "ssl.truststore.location": str(certs.ca),
         "listener.name.ssl.ssl.client.auth": "requested",
         "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
         "group.initial.rebalance.delay.ms": "0"}
    for lst in ("sasl_plaintext", "sasl_ssl"):
        o[f"listener.name.{lst}.plain.sasl.jaas.config"] = plain_jaas(USERS)
        for mech in ("scram-sha-256", "scram-sha-512"):
            o[f"listener.name.{lst}.{mech}.sasl.jaas.config"] = SCRAM_JAAS
    return o


def add_scram_user(bootstrap: str, user: str, password: str, mechanisms=(1, 2), iterations: int = 4096):
    # one request per mechanism: Kafka refuses a user named twice in one request (DUPLICATE_RESOURCE)
    with RawClient.to(bootstrap) as c:
        for m in mechanisms:
            salt = secrets.token_bytes(16)
            r = c.request(51, 0, {"deletions": [], "upsertions": [
                {"name": user, "mechanism": m, "iterations": iterations, "salt": salt,
                 "salted_password": salted_password({1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}[m], password, salt,
                                                    iterations)}]})
            assert [x.error_code for x in r.results] == [0], r


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    d = tmp_path_factory.mktemp("secured")
    certs = make_certs(d / "certs")
    ports = {p: free_port() for p in PROTOCOLS}
    metrics_port = free_port()
    proc = BrokerProcess(d / "data", port=ports["PLAINTEXT"], name="secured",
                         overrides={**secured_overrides(ports, certs), "metrics.listener": f"127.0.0.1:{metrics_port}"})
    proc.metrics_port = metrics_port
    try:
        proc.start()
        for user, pw in USERS.items():
            add_scram_user(proc.bootstrap, user, pw)
        yield SecuredBroker(proc, ports, certs)
    finally:
        proc.close()


# ----------------------------------------------------------------------------- raw frames
def tls_socket(b: SecuredBroker, protocol: str = "SSL", cert: bool = False, ca: bool = True) -> ssl.SSLSocket:
    ctx = ssl.create_default_context(cafile=str(b.certs.ca) if ca else None)
    if cert:
        ctx.load_cert_chain(str(b.certs.client_cert), str(b.certs.client_key))
    raw = socket.create_connection(("127.0.0.1", b.ports[protocol]), timeout=10)
    return ctx.wrap_socket(raw, server_hostname="127.0.0.1")


class SockClient(RawClient):
    """RawClient over an already connected (possibly TLS) socket."""

    def __init__(self, sock):
        self.sock, self.client_id, self.corr = sock, "security-test", 0


def closed(c: SockClient, timeout: float = 5.0) -> bool:
    c.sock.settimeout(timeout)
    try:
        return c.sock.recv(1) == b""
    except (ConnectionResetError, ssl.SSLError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


def sasl_client(b: SecuredBroker, protocol: str = "SASL_PLAINTEXT") -> SockClient:
    if protocol == "SASL_SSL":
        return SockClient(tls_socket(b, "SASL_SSL"))
    return SockClient(socket.create_connection(("127.0.0.1", b.ports[protocol]), timeout=10))


def plain_login(c: SockClient, user: str, password: str, version: int = 2):
    hs = c.request(17, 1, {"mechanism": "PLAIN"})
    assert hs.error_code == 0 and "PLAIN" in hs.mechanisms
    return c.request(36, version, {"auth_bytes": f"\0{user}\0{password}".encode()})


def test_ssl_listener_never_answers_plaintext(secured):
    """The downgrade this issue starts from: a plaintext ApiVersions to the SSL port gets no Kafka answer."""
    with RawClient.to(secured.address("SSL")) as c:
        c.send(18, 3, {"client_software_name": "t", "client_software_version": "1"})
        c.sock.settimeout(10)
        try:
            data = c.sock.recv(4096)
        except ConnectionResetError:
            data = b""
        assert not data or data[:1] == b"\x15"  # nothing, or a TLS alert record: never a Kafka frame


def test_tls_requests_and_tls12_minimum(secured):
    with tls_socket(secured, cert=True) as s:
        assert s.version() in ("TLSv1.2", "TLSv1.3")
        c = SockClient(s)
        assert c.request(3, 12, {"topics": [], "allow_auto_topic_creation": False,
                                 "include_topic_authorized_operations": False}).brokers[0].port == secured.ports["SSL"]
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        ctx.minimum_version = ctx.maximum_version = ssl.TLSVersion.TLSv1_1
    try:
        ctx.set_ciphers("DEFAULT:@SECLEVEL=0")
    except ssl.SSLError:
        pass
    with socket.create_connection(("127.0.0.1", secured.ports["SSL"]), timeout=10) as raw:
        with pytest.raises((ssl.SSLError, ConnectionError)):
            ctx.wrap_socket(raw).do_handshake()


def test_client_certificate_principal_is_its_dn():
    from minikafka.broker.security.tls import principal_from_cert
    subject = ((("organizationName", "minikafka"),), (("organizationalUnitName", "test"),), (("commonName", "client"),))
    assert principal_from_cert({"subject": subject}) == "User:" + CLIENT_DN
    assert principal_from_cert({"subject": ((("commonName", "a,b"),),)}) == "User:CN=a\\,b"
    assert principal_from_cert(None) == principal_from_cert({}) == "User:ANONYMOUS"


@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_requests_before_authentication_close_the_connection(secured, protocol):
    c = sasl_client(secured, protocol)
    c.send(3, 12, {"topics": [], "allow_auto_topic_creation": False, "include_topic_authorized_operations": False})
    assert closed(c)


def test_apiversions_then_plain_then_requests(secured):
    c = sasl_client(secured)
    assert c.request(18, 3, {"client_software_name": "t", "client_software_version": "1"}).error_code == 0
    r = plain_login(c, "alice", "alice-secret")
    assert (r.error_code, r.session_lifetime_ms) == (0, 0)
    md = c.request(3, 12, {"topics": [], "allow_auto_topic_creation": False, "include_topic_authorized_operations": False})
    assert md.brokers[0].port == secured.ports["SASL_PLAINTEXT"]
    again = c.request(36, 2, {"auth_bytes": b"\0alice\0alice-secret"})
    assert again.error_code == 34  # ILLEGAL_SASL_STATE: no re-authentication
    assert c.request(17, 1, {"mechanism": "PLAIN"}).error_code == 34


@pytest.mark.parametrize("user,password", [("alice", "wrong"), ("nobody", "alice-secret"), ("alice", "")])
def test_plain_failure_same_answer_then_close(secured, user, password):
    c = sasl_client(secured)
    r = plain_login(c, user, password)
    assert r.error_code == 58  # SASL_AUTHENTICATION_FAILED
    expected = ("Authentication failed: password not specified" if not password
                else "Authentication failed: Invalid username or password")
    assert r.error_message == expected
    assert closed(c)


def test_failed_authentication_is_logged_and_counted(secured):
    import urllib.request

    def count():
        text = urllib.request.urlopen(f"http://127.0.0.1:{secured.proc.metrics_port}/metrics", timeout=10).read().decode()
        line = next(x for x in text.splitlines() if x.startswith("kafka_server_socketservermetrics_failed_authentication_total"))
        return float(line.split()[-1])

    before = count()
    c = sasl_client(secured)
    port = c.sock.getsockname()[1]
    assert plain_login(c, "alice", "nope").error_code == 58
    wait_until(lambda: count() == before + 1, timeout=10)
    wait_until(lambda: f"Failed authentication with /127.0.0.1:{port} (Authentication failed: Invalid username or password)"
               in secured.proc.log_path.read_text(), timeout=10)


def test_unsupported_mechanism_lists_enabled_then_closes(secured):
    c = sasl_client(secured)
    r = c.request(17, 1, {"mechanism": "GSSAPI"})
    assert r.error_code == 33 and r.mechanisms == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
    assert closed(c)


def test_handshake_v0_unframed_plain(secured):
    """Old clients: SaslHandshake v0, then the token as a bare size-prefixed frame."""
    c = sasl_client(secured)
    assert c.request(17, 0, {"mechanism": "PLAIN"}).error_code == 0
    token = b"\0bob\0bob-secret"
    c.sock.sendall(struct.pack(">i", len(token)) + token)
    assert c.recv_frame() == b""
    md = c.request(3, 1, {"topics": []})
    assert md.brokers
    bad = sasl_client(secured)
    assert bad.request(17, 0, {"mechanism": "PLAIN"}).error_code == 0
    bad.sock.sendall(struct.pack(">i", 12) + b"\0bob\0nopenop")
    assert closed(bad)


def test_scram_credentials_api_and_durability(secured):
    b = secured.proc.bootstrap
    with RawClient.to(b) as c:
        d = c.request(50, 0, {"users": [{"name": "alice"}, {"name": "ghost"}]})
        by = {r.user: r for r in d.results}
        assert sorted((i.mechanism, i.iterations) for i in by["alice"].credential_infos) == [(1, 4096), (2, 4096)]
        assert by["ghost"].error_code == 91
        r = c.request(51, 0, {"deletions": [{"name": "ghost", "mechanism": 1}],
                              "upsertions": [{"name": "carol", "mechanism": 1, "iterations": 10, "salt": b"s",
                                              "salted_password": b"p"},
                                             {"name": "dave", "mechanism": 7, "iterations": 4096, "salt": b"s",
                                              "salted_password": b"p"}]})
        assert {x.user: x.error_code for x in r.results} == {"ghost": 91, "carol": 93, "dave": 33}
    text = (secured.proc.data_dir / "scram-credentials.json").read_text()
    assert "alice-secret" not in text and "salted" not in text
    add_scram_user(b, "erin", "erin-secret", mechanisms=(2,))
    secured.proc.kill9()
    secured.proc.restart()
    c = sasl_client(secured)
    assert scram_login(c, "erin", "erin-secret", "SCRAM-SHA-512") == 0


def scram_login(c: SockClient, user: str, password: str, mechanism: str) -> int:
    """A client-side RFC 5802 exchange; the error code of the last SaslAuthenticate."""
    import base64
    from minikafka.admin.wire import scram_client_final
    assert c.request(17, 1, {"mechanism": mechanism}).error_code == 0
    nonce = base64.b64encode(secrets.token_bytes(12)).decode()
    first_bare = f"n={user},r={nonce}"
    r1 = c.request(36, 2, {"auth_bytes": ("n,," + first_bare).encode()})
    if r1.error_code:
        return r1.error_code
    client_final, server_final = scram_client_final(mechanism, password, first_bare, r1.auth_bytes.decode())
    r2 = c.request(36, 2, {"auth_bytes": client_final})
    if r2.error_code == 0:
        assert r2.auth_bytes == server_final
    return r2.error_code


def test_scram_wrong_password_and_unknown_user_get_the_same_message(secured):
    for user, pw in (("alice", "nope"), ("ghost", "alice-secret")):
        c = sasl_client(secured)
        assert scram_login(c, user, pw, "SCRAM-SHA-256") == 58
        assert closed(c)


# ----------------------------------------------------------------------------- real clients
def kp_config(b: SecuredBroker, protocol: str, mechanism: str | None, user="alice", password=None, ca=True):
    cfg = {"bootstrap_servers": b.address(protocol), "security_protocol": protocol}
    if "SSL" in protocol:
        cfg["ssl_cafile"] = str(b.certs.ca if ca else b.certs.other_ca)
    if mechanism:
        cfg.update(sasl_mechanism=mechanism, sasl_plain_username=user,
                   sasl_plain_password=password if password is not None else USERS.get(user, "x"))
    return cfg


MATRIX = [("SSL", None), ("SASL_PLAINTEXT", "PLAIN"), ("SASL_PLAINTEXT", "SCRAM-SHA-512"), ("SASL_SSL", "SCRAM-SHA-256")]


@pytest.mark.parametrize("protocol,mechanism", MATRIX)
def test_kafka_python_produces_and_consumes(secured, unique_topic, protocol, mechanism):
    from kafka import KafkaConsumer, KafkaProducer
    topic = unique_topic()
    p = KafkaProducer(**kp_config(secured, protocol, mechanism))
    p.send(topic, b"v-" + protocol.encode()).get(15)
    p.close()
    c = KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=20000, **kp_config(secured, protocol, mechanism))
    first = next(iter(c), None)  # the first record ends the wait (the timeout only bounds it)
    c.close()
    assert first is not None and first.value == b"v-" + protocol.encode()


def ck_config(b: SecuredBroker, protocol: str, mechanism: str | None, user="alice", password=None, ca=True):
    cfg = {"bootstrap.servers": b.address(protocol), "security.protocol": protocol}
    if "SSL" in protocol:
        cfg["ssl.ca.location"] = str(b.certs.ca if ca else b.certs.other_ca)
    if mechanism:
        cfg.update({"sasl.mechanism": mechanism, "sasl.username": user,
                    "sasl.password": password if password is not None else USERS.get(user, "x")})
    return cfg


@pytest.mark.parametrize("protocol,mechanism", MATRIX)
def test_confluent_kafka_produces_and_consumes(secured, unique_topic, protocol, mechanism):
    import confluent_kafka as ck
    topic = unique_topic()
    p = ck.Producer(ck_config(secured, protocol, mechanism))
    p.produce(topic, b"v")
    assert p.flush(20) == 0
    c = ck.Consumer({**ck_config(secured, protocol, mechanism), "group.id": topic, "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got = []
    deadline = time.monotonic() + 20
    while not got and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append(m.value())
    c.close()
    assert got == [b"v"]


@pytest.mark.parametrize("case", ["wrong password", "unknown user", "no CA"])
def test_confluent_kafka_refusals(secured, case):
    import confluent_kafka as ck
    if case == "no CA":
        cfg = ck_config(secured, "SASL_SSL", "SCRAM-SHA-256", ca=False)
    else:
        user, pw = ("alice", "bad") if case == "wrong password" else ("ghost", "x")
        cfg = ck_config(secured, "SASL_PLAINTEXT", "SCRAM-SHA-512", user=user, password=pw)
    errors = []
    p = ck.Producer({**cfg, "error_cb": lambda e: errors.append(e)})
    wait_until(lambda: p.poll(0.2) is not None and errors, timeout=20)
    if case == "no CA":  # librdkafka's own verification fails, as against Kafka
        assert errors[0].code() in (ck.KafkaError._SSL, ck.KafkaError._TRANSPORT), errors
        assert "certificate verify failed" in errors[0].str()
    else:
        assert errors[0].code() == ck.KafkaError._AUTHENTICATION, errors
        assert "Authentication failed during authentication due to invalid credentials with SASL mechanism " \
               "SCRAM-SHA-512" in errors[0].str()


@pytest.mark.parametrize("case", ["wrong password", "unknown user", "no CA"])
def test_kafka_python_refusals(secured, case, caplog):
    """kafka-python logs the broker's error and never gets metadata (a KafkaTimeoutError), as against Kafka."""
    from kafka import KafkaProducer
    from kafka.errors import KafkaTimeoutError
    if case == "no CA":
        cfg = kp_config(secured, "SSL", None, ca=False)
    else:
        user, pw = ("alice", "bad") if case == "wrong password" else ("ghost", "x")
        cfg = kp_config(secured, "SASL_PLAINTEXT", "PLAIN", user=user, password=pw)
    p = KafkaProducer(**cfg, api_version=(2, 6), max_block_ms=3000)
    with pytest.raises(KafkaTimeoutError):
        p.send("t", b"x").get(5)
    p.close(0)
    expected = "CERTIFICATE_VERIFY_FAILED" if case == "no CA" else "Authentication failed: Invalid username or password"
    assert expected in caplog.text


def test_aiokafka_matrix_and_refusal(secured, unique_topic, caplog):
    import asyncio
    aiokafka = pytest.importorskip("aiokafka")
    from aiokafka.helpers import create_ssl_context

    def cfg(protocol, mechanism, password=None, user="alice"):
        c = {"bootstrap_servers": secured.address(protocol), "security_protocol": protocol}
        if "SSL" in protocol:
            c["ssl_context"] = create_ssl_context(cafile=str(secured.certs.ca))
        if mechanism:
            c.update(sasl_mechanism=mechanism, sasl_plain_username=user,
                     sasl_plain_password=password or USERS["alice"])
        return c

    async def roundtrip(protocol, mechanism):
        topic = unique_topic(f"aio-{protocol}-{mechanism}")
        p = aiokafka.AIOKafkaProducer(**cfg(protocol, mechanism))
        await p.start()
        try:
            await p.send_and_wait(topic, b"aio")
        finally:
            await p.stop()
        c = aiokafka.AIOKafkaConsumer(topic, auto_offset_reset="earliest", **cfg(protocol, mechanism))
        await c.start()
        try:
            m = await asyncio.wait_for(c.getone(), 20)
        finally:
            await c.stop()
        return m.value

    async def refused(protocol="SASL_PLAINTEXT", password="bad", ca=True, user="alice"):
        c = cfg(protocol, "SCRAM-SHA-512", password=password, user=user)
        if not ca:
            c["ssl_context"] = create_ssl_context(cafile=str(secured.certs.other_ca))
        p = aiokafka.AIOKafkaProducer(**c)
        try:
            await p.start()
        except Exception as e:
            return e
        finally:
            await p.stop()
        return None

    for protocol, mechanism in MATRIX:
        assert asyncio.run(roundtrip(protocol, mechanism)) == b"aio", (protocol, mechanism)
    err = asyncio.run(refused())
    assert err is not None  # aiokafka: KafkaConnectionError, the broker's SaslAuthenticationFailed logged
    assert ("SaslAuthenticationFailed: Authentication failed during authentication due to invalid credentials "
            "with SASL mechanism SCRAM-SHA-512") in caplog.text
    caplog.clear()
    # an unknown user: the same answer as a wrong password (SCRAM reveals nothing), as Kafka's
    assert asyncio.run(refused(password="x", user="nobody-here")) is not None
    assert ("SaslAuthenticationFailed: Authentication failed during authentication due to invalid credentials "
            "with SASL mechanism SCRAM-SHA-512") in caplog.text
    caplog.clear()
    assert asyncio.run(refused("SASL_SSL", password=USERS["alice"], ca=False)) is not None
    assert "CERTIFICATE_VERIFY_FAILED" in caplog.text


def java_props(b: SecuredBroker, protocol: str, mechanism: str | None, password=None, user="alice",
               ca=True) -> list[str]:
    props = [f"security.protocol={protocol}"]
    if "SSL" in protocol:
        props += ["ssl.truststore.type=PEM", f"ssl.truststore.location={b.certs.ca if ca else b.certs.other_ca}"]
    if mechanism:
        module = ("org.apache.kafka.common.security.plain.PlainLoginModule" if mechanism == "PLAIN"
                  else "org.apache.kafka.common.security.scram.ScramLoginModule")
        props += [f"sasl.mechanism={mechanism}",
                  f'sasl.jaas.config={module} required username="{user}" password="{password or USERS.get(user, "x")}";']
    return props


@pytest.mark.parametrize("protocol,mechanism", MATRIX)
def test_java_client_produces_and_consumes(secured, java_client, unique_topic, protocol, mechanism):
    topic = unique_topic()
    props = java_props(secured, protocol, mechanism)
    java_client.run("produce", "--bootstrap", secured.address(protocol), "--topic", topic, "--count", "5",
                    "--tag", "sec", *[x for p in props for x in ("--producer-config", p)], broker=secured.proc)
    res = java_client.run("consume", "--bootstrap", secured.address(protocol), "--topic", topic, "--expected", "5",
                          "--timeout-ms", "30000", *[x for p in props for x in ("--consumer-config", p)],
                          broker=secured.proc)
    assert res.summary()["count"] == 5


@pytest.mark.parametrize("case,expected", [
    ("wrong password", "SaslAuthenticationException: Authentication failed during authentication due to invalid "
                       "credentials with SASL mechanism SCRAM-SHA-256"),
    ("unknown user", "SaslAuthenticationException: Authentication failed during authentication due to invalid "
                     "credentials with SASL mechanism SCRAM-SHA-256"),
    ("no CA", "SslAuthenticationException: SSL handshake failed"),
])
def test_java_client_refusals(secured, java_client, unique_topic, case, expected):
    props = java_props(secured, "SASL_SSL", "SCRAM-SHA-256", password="bad" if case == "wrong password" else None,
                       user="ghost" if case == "unknown user" else "alice", ca=case != "no CA")
    res = java_client.run("produce", "--bootstrap", secured.address("SASL_SSL"), "--topic", unique_topic(),
                          "--count", "1", "--tag", "x", *[x for p in props for x in ("--producer-config", p)],
                          check=False, timeout=90)
    assert res.returncode != 0
    assert expected in res.stdout + res.stderr


# ----------------------------------------------------------------------------- fuzz
def test_fuzz_sasl_frames_and_tls_garbage(secured):
    """Malformed SASL exchanges and TLS garbage on every secured listener: never a crash, a hang
    or an authenticated session. Bounded: a fixed number of examples, each on a fresh connection."""
    from hypothesis import HealthCheck, given, settings, strategies as st

    def metadata_answered(c: SockClient) -> bool:
        try:
            c.sock.settimeout(3)
            c.send(3, 1, {"topics": []})
            return c.recv_frame() is not None
        except (OSError, ssl.SSLError, ConnectionError):
            return False

    frames = st.one_of(
        st.binary(max_size=64),
        st.builds(lambda mech, tok: ("handshake", mech, tok), st.sampled_from(["PLAIN", "SCRAM-SHA-256", "X", ""]),
                  st.binary(max_size=80)),
        st.builds(lambda tok: ("scram", tok), st.text(max_size=80)),
    )

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
    @given(frames, st.sampled_from(["SSL", "SASL_PLAINTEXT", "SASL_SSL"]))
    def run(frame, protocol):
        if protocol == "SSL" or isinstance(frame, bytes):
            raw = socket.create_connection(("127.0.0.1", secured.ports[protocol]), timeout=5)
            if protocol == "SASL_SSL" and isinstance(frame, bytes):
                raw.close()
                raw = tls_socket(secured, "SASL_SSL")
            body = frame if isinstance(frame, bytes) else repr(frame).encode()
            try:
                raw.sendall(struct.pack(">i", len(body)) + body if protocol != "SSL" else body)
            except OSError:
                pass
            c = SockClient(raw)
            if protocol != "SSL":
                assert not metadata_answered(c)
            raw.close()
            return
        c = sasl_client(secured, protocol)
        try:
            if frame[0] == "handshake":
                r = c.request(17, 1, {"mechanism": frame[1]})
                if r.error_code == 0:
                    r = c.request(36, 2, {"auth_bytes": frame[2]})
                    assert r.error_code == 58
            else:
                assert c.request(17, 1, {"mechanism": "SCRAM-SHA-256"}).error_code == 0
                r = c.request(36, 2, {"auth_bytes": frame[1].encode()})
                if r.error_code == 0:  # a first message that parsed for a real user: send garbage final
                    r = c.request(36, 2, {"auth_bytes": b"c=biws,r=x,p=AAAA"})
                assert r.error_code == 58
        except (ConnectionError, OSError, ssl.SSLError):
            pass
        assert not metadata_answered(c)
        c.sock.close()

    run()
    # the broker still serves everyone
    c = sasl_client(secured)
    assert plain_login(c, "alice", "alice-secret").error_code == 0
    assert secured.proc.running


def test_other_request_while_authenticating_gets_its_error_then_close(secured):
    """Kafka 4.1 (recorded): after SaslHandshake, a Metadata request gets a Metadata error response
    (17 bytes, no data) and the connection is closed; nothing is served unauthenticated."""
    c = sasl_client(secured)
    assert c.request(17, 1, {"mechanism": "PLAIN"}).error_code == 0
    c.send(3, 12, {"topics": None, "allow_auto_topic_creation": False, "include_topic_authorized_operations": False})
    frame = c.recv_frame()
    assert frame is not None and len(frame) == 17
    md = schema.decode_response(3, 12, frame)[1]
    assert md.topics == [] and md.brokers == []
    assert closed(c)


def test_scram_proof_of_wrong_length_closes_without_answer(secured):
    c = sasl_client(secured)
    assert c.request(17, 1, {"mechanism": "SCRAM-SHA-256"}).error_code == 0
    first = c.request(36, 2, {"auth_bytes": b"n,,n=alice,r=abcdef"})
    nonce = first.auth_bytes.split(b",")[0][2:]
    c.send(36, 2, {"auth_bytes": b"c=biws,r=" + nonce + b",p=AAAA"})
    assert c.recv_frame() is None


def test_request_sent_right_behind_the_last_token_is_served(secured):
    """Bytes that arrive with the last authentication frame belong to the session (v0 and v1)."""
    c = sasl_client(secured)
    assert c.request(17, 1, {"mechanism": "PLAIN"}).error_code == 0
    auth = schema.encode_request(36, 2, 7, "t", {"auth_bytes": b"\0alice\0alice-secret"})
    md = schema.encode_request(3, 12, 8, "t", {"topics": [], "allow_auto_topic_creation": False,
                                               "include_topic_authorized_operations": False})
    c.sock.sendall(auth + md)
    assert c.receive(36, 2, 7).error_code == 0
    assert c.receive(3, 12, 8).brokers
    v0 = sasl_client(secured)
    assert v0.request(17, 0, {"mechanism": "PLAIN"}).error_code == 0
    token = b"\0bob\0bob-secret"
    v0.sock.sendall(struct.pack(">i", len(token)) + token + md)
    assert v0.recv_frame() == b""
    assert v0.receive(3, 12, 8).brokers
