"""ACL authorization (StandardAuthorizer semantics) against a real broker with raw frames:
SASL PLAIN principals (User:admin is a super user), an SSL listener whose clients without a
certificate are User:ANONYMOUS, and the PLAINTEXT listener (also User:ANONYMOUS)."""
from __future__ import annotations

import socket
import ssl

import pytest

from harness import BrokerProcess, free_port, wait_until
from rawclient import RawClient, make_batch
from security_kit import SCRAM_JAAS, make_certs, plain_jaas

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
# Kafka's codes
TOPIC, GROUP, CLUSTER, TXN = 2, 3, 4, 5
READ, WRITE, CREATE, DESCRIBE, ALL = 3, 4, 5, 8, 2
LITERAL, PREFIXED = 3, 4
DENY, ALLOW = 2, 3
TOPIC_AUTHZ, GROUP_AUTHZ, CLUSTER_AUTHZ, TXN_AUTHZ = 29, 30, 31, 53


class SockClient(RawClient):
    def __init__(self, sock):
        self.sock, self.client_id, self.corr = sock, "authz-test", 0


@pytest.fixture(scope="module")
def authz(tmp_path_factory):
    d = tmp_path_factory.mktemp("authz")
    certs = make_certs(d / "certs")
    ports = {"PLAINTEXT": free_port(), "SASL_PLAINTEXT": free_port(), "SSL": free_port(), "SASL_SSL": free_port()}
    overrides = {
        "listeners": ",".join(f"{k}://127.0.0.1:{v}" for k, v in ports.items()),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain_jaas(USERS),
        "listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-256",
        "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs.server),
        "ssl.client.auth": "requested", "ssl.truststore.type": "PEM", "ssl.truststore.location": str(certs.ca),
        "group.initial.rebalance.delay.ms": "0",
    }
    proc = BrokerProcess(d / "data", port=ports["PLAINTEXT"], overrides=overrides, name="authz")
    proc.start()
    proc.ports, proc.certs = ports, certs
    try:
        yield proc
    finally:
        proc.close()


def login(b, user: str) -> SockClient:
    c = SockClient(socket.create_connection(("127.0.0.1", b.ports["SASL_PLAINTEXT"]), timeout=10))
    assert c.request(17, 1, {"mechanism": "PLAIN"}).error_code == 0
    assert c.request(36, 2, {"auth_bytes": f"\0{user}\0{USERS[user]}".encode()}).error_code == 0
    return c


def acl(resource_type, name, principal, operation, permission=ALLOW, pattern=LITERAL, host="*") -> dict:
    return {"resource_type": resource_type, "resource_name": name, "resource_pattern_type": pattern,
            "principal": principal, "host": host, "operation": operation, "permission_type": permission}


def create_acls(c, *acls):
    r = c.request(30, 3, {"creations": list(acls)})
    assert [x.error_code for x in r.results] == [0] * len(acls), r


def create_topic(c, name, partitions=1):
    r = c.request(19, 7, {"topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1,
                                      "assignments": [], "configs": []}], "timeout_ms": 10000, "validate_only": False})
    assert r.topics[0].error_code == 0, r


def produce(c, topic, version=9, **batch):
    r = c.request(0, version, {"transactional_id": batch.pop("transactional_id", None), "acks": -1, "timeout_ms": 5000,
                               "topic_data": [{"name": topic, "partition_data": [
                                   {"index": 0, "records": make_batch([b"v"], **batch)}]}]})
    return r.responses[0].partition_responses[0].error_code


def metadata(c, topics=None):
    return c.request(3, 12, {"topics": None if topics is None else [{"name": t, "topic_id": None} for t in topics],
                             "allow_auto_topic_creation": False, "include_topic_authorized_operations": True})


def test_acl_apis_and_produce_needs_write(authz, unique_topic):
    topic = unique_topic()
    admin = login(authz, "admin")
    create_topic(admin, topic)
    alice = login(authz, "alice")
    assert produce(alice, topic) == TOPIC_AUTHZ
    create_acls(admin, acl(TOPIC, topic[:-4], "User:alice", WRITE, pattern=PREFIXED))
    assert produce(alice, topic) == 0
    # WRITE implies DESCRIBE: the topic is now visible to alice, not to bob
    md = metadata(alice, [topic])
    assert md.topics[0].error_code == 0 and md.topics[0].topic_authorized_operations == (1 << WRITE) | (1 << DESCRIBE)
    bob = login(authz, "bob")
    assert metadata(bob, [topic]).topics[0].error_code == TOPIC_AUTHZ
    assert topic not in {t.name for t in metadata(bob).topics}
    assert topic in {t.name for t in metadata(alice).topics}
    # a DENY wins over the ALLOW
    create_acls(admin, acl(TOPIC, topic, "User:alice", WRITE, DENY))
    assert produce(alice, topic) == TOPIC_AUTHZ
    d = admin.request(29, 3, {"resource_type_filter": TOPIC, "resource_name_filter": topic, "pattern_type_filter": 2,
                              "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1})
    assert sorted((r.pattern_type, r.resource_name) for r in d.resources) == [(LITERAL, topic), (PREFIXED, topic[:-4])]
    r = admin.request(31, 3, {"filters": [{"resource_type_filter": TOPIC, "resource_name_filter": topic,
                                           "pattern_type_filter": LITERAL, "principal_filter": "User:alice",
                                           "host_filter": None, "operation": WRITE, "permission_type": DENY}]})
    assert len(r.filter_results[0].matching_acls) == 1
    assert produce(alice, topic) == 0
    # non super users may not manage ACLs
    assert alice.request(30, 3, {"creations": [acl(TOPIC, "*", "User:alice", ALL)]}).results[0].error_code == CLUSTER_AUTHZ


def test_transactional_id_needs_describe_and_write(authz, unique_topic):
    tid = unique_topic("txn")
    admin, alice = login(authz, "admin"), login(authz, "alice")
    r = alice.request(10, 4, {"key_type": 1, "coordinator_keys": [tid]})
    assert (r.coordinators[0].error_code, r.coordinators[0].node_id) == (TXN_AUTHZ, -1)
    assert r.coordinators[0].error_message == ""  # Kafka 4.1: no message in v4's list (recorded)
    v3 = alice.request(10, 3, {"key": tid, "key_type": 1})
    assert (v3.error_code, v3.error_message) == (TXN_AUTHZ, "Transactional Id authorization failed.")
    create_acls(admin, acl(TXN, tid, "User:alice", DESCRIBE))
    assert alice.request(10, 4, {"key_type": 1, "coordinator_keys": [tid]}).coordinators[0].error_code == 0
    r = alice.request(22, 4, {"transactional_id": tid, "transaction_timeout_ms": 60000, "producer_id": -1, "producer_epoch": -1})
    assert r.error_code == TXN_AUTHZ
    create_acls(admin, acl(TXN, tid, "User:alice", WRITE))
    r = wait_until(lambda: (x := alice.request(22, 4, {"transactional_id": tid, "transaction_timeout_ms": 60000,
                                                      "producer_id": -1, "producer_epoch": -1})).error_code == 0 and x,
                   timeout=15)
    assert r.producer_id >= 0
    # an idempotent producer needs IDEMPOTENT_WRITE on the cluster or WRITE on some topic
    bob = login(authz, "bob")
    r = bob.request(22, 4, {"transactional_id": None, "transaction_timeout_ms": 60000, "producer_id": -1, "producer_epoch": -1})
    assert r.error_code == CLUSTER_AUTHZ


def test_group_read_needed_to_commit_offsets(authz, unique_topic):
    topic, group = unique_topic(), unique_topic("grp")
    admin, alice = login(authz, "admin"), login(authz, "alice")
    create_topic(admin, topic)
    create_acls(admin, acl(TOPIC, topic, "User:alice", READ))
    commit = {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
              "retention_time_ms": -1, "topics": [{"name": topic, "partitions": [
                  {"partition_index": 0, "committed_offset": 0, "committed_leader_epoch": -1, "committed_metadata": ""}]}]}
    assert alice.request(8, 8, commit).topics[0].partitions[0].error_code == GROUP_AUTHZ
    r = alice.request(10, 4, {"key_type": 0, "coordinator_keys": [group]})
    assert r.coordinators[0].error_code == GROUP_AUTHZ
    create_acls(admin, acl(GROUP, group, "User:alice", READ))
    assert alice.request(8, 8, commit).topics[0].partitions[0].error_code == 0
    # a read_committed fetch needs READ on the topic: bob has none
    bob = login(authz, "bob")
    f = bob.request(1, 12, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
                            "isolation_level": 1, "session_id": 0, "session_epoch": -1, "topics": [
                                {"topic": topic, "partitions": [{"partition": 0, "current_leader_epoch": -1,
                                                                 "fetch_offset": 0, "last_fetched_epoch": -1,
                                                                 "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}],
                            "forgotten_topics_data": [], "rack_id": ""})
    assert f.responses[0].partitions[0].error_code == TOPIC_AUTHZ


def test_ssl_without_certificate_is_anonymous_and_needs_acls(authz, unique_topic):
    topic = unique_topic()
    admin = login(authz, "admin")
    create_topic(admin, topic)
    ctx = ssl.create_default_context(cafile=str(authz.certs.ca))
    anon = SockClient(ctx.wrap_socket(socket.create_connection(("127.0.0.1", authz.ports["SSL"]), timeout=10),
                                      server_hostname="127.0.0.1"))
    assert produce(anon, topic) == TOPIC_AUTHZ
    ctx2 = ssl.create_default_context(cafile=str(authz.certs.ca))
    ctx2.load_cert_chain(str(authz.certs.client_cert), str(authz.certs.client_key))
    certified = SockClient(ctx2.wrap_socket(socket.create_connection(("127.0.0.1", authz.ports["SSL"]), timeout=10),
                                            server_hostname="127.0.0.1"))
    create_acls(admin, acl(TOPIC, topic, "User:CN=client,OU=test,O=minikafka", WRITE))
    assert produce(certified, topic) == 0  # the certificate's DN is the principal
    assert produce(anon, topic) == TOPIC_AUTHZ
    create_acls(admin, acl(TOPIC, topic, "User:ANONYMOUS", WRITE))
    assert produce(anon, topic) == 0


def test_super_user_and_cluster_actions(authz, unique_topic):
    topic = unique_topic()
    admin, alice = login(authz, "admin"), login(authz, "alice")
    create_topic(admin, topic)
    assert produce(admin, topic) == 0
    markers = {"markers": [{"producer_id": 1, "producer_epoch": 0, "transaction_result": False,
                            "topics": [{"name": topic, "partition_indexes": [0]}], "coordinator_epoch": 0}]}
    assert alice.request(27, 1, markers).markers[0].topics[0].partitions[0].error_code == CLUSTER_AUTHZ
    r = alice.request(19, 7, {"topics": [{"name": unique_topic("x"), "num_partitions": 1, "replication_factor": 1,
                                          "assignments": [], "configs": []}], "timeout_ms": 1000, "validate_only": False})
    assert r.topics[0].error_code == TOPIC_AUTHZ
    # the PLAINTEXT listener's User:ANONYMOUS is nobody special either
    with RawClient.to(authz.bootstrap) as plain:
        assert produce(plain, topic) == TOPIC_AUTHZ
        assert plain.request(29, 3, {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
                                     "principal_filter": None, "host_filter": None, "operation": 1,
                                     "permission_type": 1}).error_code == CLUSTER_AUTHZ


def test_acls_survive_kill9(authz, unique_topic):
    topic = unique_topic()
    admin = login(authz, "admin")
    create_topic(admin, topic)
    create_acls(admin, acl(TOPIC, topic, "User:bob", WRITE))
    authz.kill9()
    authz.restart()
    assert produce(login(authz, "bob"), topic) == 0
    assert produce(login(authz, "alice"), topic) == TOPIC_AUTHZ


def test_acls_without_authorizer_are_security_disabled(broker):
    with RawClient.to(broker.bootstrap) as c:
        r = c.request(30, 3, {"creations": [acl(TOPIC, "t", "User:x", READ)]})
        assert r.results[0].error_code == 54  # SECURITY_DISABLED


def test_acls_cli_with_command_config(authz, unique_topic, tmp_path):
    import subprocess
    import sys
    topic, group = unique_topic(), unique_topic("g")
    cfg = tmp_path / "admin.properties"
    cfg.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config="
                   'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret";\n')
    bootstrap = f"127.0.0.1:{authz.ports['SASL_PLAINTEXT']}"

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "minikafka", "acls", "--bootstrap-server", bootstrap,
                               "--command-config", str(cfg), *args], capture_output=True, text=True, timeout=30)

    r = cli("--add", "--allow-principal", "User:bob", "--consumer", "--topic", topic, "--group", group)
    assert r.returncode == 0, r.stderr
    listed = cli("--list", "--topic", topic).stdout
    assert f"ResourcePattern(resourceType=TOPIC, name={topic}, patternType=LITERAL)" in listed
    assert "(principal=User:bob, host=*, operation=READ, permissionType=ALLOW)" in listed
    bob = login(authz, "bob")
    f = bob.request(9, 7, {"group_id": group, "topics": None, "require_stable": True})
    assert f.error_code == 0
    r = cli("--remove", "--allow-principal", "User:bob", "--consumer", "--topic", topic, "--group", group)
    assert r.returncode == 0 and "Removed 3 ACL(s)." in r.stdout, r.stdout + r.stderr
    assert bob.request(9, 7, {"group_id": group, "topics": None, "require_stable": True}).error_code == GROUP_AUTHZ
    # without credentials: refused in one line
    bad = tmp_path / "bad.properties"
    bad.write_text(cfg.read_text().replace("admin-secret", "nope"))
    r = subprocess.run([sys.executable, "-m", "minikafka", "acls", "--bootstrap-server", bootstrap, "--command-config",
                        str(bad), "--list"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and r.stderr.strip().count("\n") == 0
    assert "Authentication failed: Invalid username or password" in r.stderr


def test_eos_pipeline_over_sasl_ssl_with_exactly_the_acls_it_needs(authz, unique_topic):
    """consume-transform-produce, exactly once, as a SCRAM-SHA-256 user over SASL_SSL whose ACLs
    are READ on the input and the group, WRITE on the output and the transactional id."""
    import secrets as _secrets

    import confluent_kafka as ck
    from minikafka.broker.security.sasl import salted_password
    src, dst, group, tid = unique_topic("in"), unique_topic("out"), unique_topic("grp"), unique_topic("tid")
    admin = login(authz, "admin")
    create_topic(admin, src)
    create_topic(admin, dst)
    salt = _secrets.token_bytes(16)
    r = admin.request(51, 0, {"deletions": [], "upsertions": [{"name": "pipeline", "mechanism": 1, "iterations": 4096,
                                                                 "salt": salt, "salted_password": salted_password(
                                                                     "SCRAM-SHA-256", "pipe-secret", salt, 4096)}]})
    assert r.results[0].error_code == 0
    me = "User:pipeline"
    create_acls(admin, acl(TOPIC, src, me, READ), acl(GROUP, group, me, READ), acl(TOPIC, dst, me, WRITE),
                acl(TXN, tid, me, WRITE))
    for i in range(10):
        assert produce(admin, src, version=9) == 0
    base = {"bootstrap.servers": f"127.0.0.1:{authz.ports['SASL_SSL']}", "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(authz.certs.ca), "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": "pipeline", "sasl.password": "pipe-secret"}
    consumer = ck.Consumer({**base, "group.id": group, "isolation.level": "read_committed",
                            "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    producer = ck.Producer({**base, "transactional.id": tid})
    producer.init_transactions(30)
    consumer.subscribe([src])
    seen = 0
    import time as _time
    deadline = _time.monotonic() + 60
    while seen < 10 and _time.monotonic() < deadline:
        msgs = consumer.consume(10, 1.0)
        msgs = [m for m in msgs if not m.error()]
        if not msgs:
            continue
        producer.begin_transaction()
        for m in msgs:
            producer.produce(dst, m.value().upper())
        producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                             consumer.consumer_group_metadata(), 30)
        producer.commit_transaction(30)
        seen += len(msgs)
    consumer.close()
    assert seen == 10
    producer.flush(10)
    # the output holds the 10 records once, committed (read as the super user), the group's offset is 10
    reader = ck.Consumer({"bootstrap.servers": f"127.0.0.1:{authz.ports['SASL_PLAINTEXT']}",
                          "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "admin",
                          "sasl.password": USERS["admin"], "group.id": group + "-check", "isolation.level": "read_committed",
                          "auto.offset.reset": "earliest", "enable.partition.eof": True})
    reader.subscribe([dst])
    out, eof = [], False
    deadline = _time.monotonic() + 30
    while not eof and _time.monotonic() < deadline:
        m = reader.poll(0.5)
        if m is None:
            continue
        if m.error():
            eof = m.error().code() == ck.KafkaError._PARTITION_EOF
            continue
        out.append(m.value())
    reader.close()
    assert out == [b"V"] * 10
    # and another principal may not write to the pipeline's output
    assert produce(login(authz, "alice"), dst) == TOPIC_AUTHZ
    f = admin.request(9, 7, {"group_id": group, "topics": [{"name": src, "partition_indexes": [0]}], "require_stable": True})
    assert f.topics[0].partitions[0].committed_offset == 10
