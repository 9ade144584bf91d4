"""Hostile principals against a secured broker (Kafka's default strictness: only User:admin is a super
user, allow.everyone.if.no.acl.found=false), with raw frames: the KIP-848 takeover of issue 32 (describe
another's consumer group, join it, leave in the victim's name, heartbeat as the victim) refused with
GROUP_AUTHORIZATION_FAILED at each step, over SASL as a user without ACLs and over TLS without a
certificate; and a regex subscription that would reach topics the principal may not DESCRIBE. A
well-behaved transactional producer and read_committed consumer (the bystander, as admin) keep working."""
from __future__ import annotations

import socket
import ssl
import uuid

import pytest

from harness import BrokerProcess, free_port
from rawclient import RawClient, make_batch
from security_kit import make_certs, plain_jaas

USERS = {"admin": "admin-secret", "mallory": "mallory-secret"}
ADMIN = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
         "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required '
                             'username="admin" password="admin-secret";'}
TOPIC, GROUP = 2, 3
READ, DESCRIBE = 3, 8
TOPIC_AUTHZ, GROUP_AUTHZ = 29, 30
HIDDEN_TOPICS = "The group has described topic(s) that the client is not authorized to describe."


class SockClient(RawClient):
    def __init__(self, sock):
        self.sock, self.client_id, self.corr = sock, "hostile-authz", 0


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile-authz")
    certs = make_certs(d / "certs")
    ports = {"PLAINTEXT": free_port(), "SASL_PLAINTEXT": free_port(), "SSL": free_port()}
    overrides = {
        "listeners": ",".join(f"{k}://127.0.0.1:{v}" for k, v in ports.items()),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin", "allow.everyone.if.no.acl.found": "false",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain_jaas(USERS),
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs.server), "ssl.client.auth": "none",
        "group.coordinator.rebalance.protocols": "classic,consumer",
    }
    proc = BrokerProcess(d / "data", port=ports["PLAINTEXT"], overrides=overrides, name="hostile-authz")
    proc.start()
    proc.ports, proc.certs = ports, certs
    proc.sasl_bootstrap = f"127.0.0.1:{ports['SASL_PLAINTEXT']}"
    try:
        yield proc
    finally:
        proc.close()


def login(b, user: str) -> SockClient:
    c = SockClient(socket.create_connection(("127.0.0.1", b.ports["SASL_PLAINTEXT"]), timeout=10))
    assert c.request(17, 1, {"mechanism": "PLAIN"}).error_code == 0
    assert c.request(36, 2, {"auth_bytes": f"\0{user}\0{USERS[user]}".encode()}).error_code == 0
    return c


def anonymous_tls(b) -> SockClient:
    ctx = ssl.create_default_context(cafile=str(b.certs.ca))
    return SockClient(ctx.wrap_socket(socket.create_connection(("127.0.0.1", b.ports["SSL"]), timeout=10),
                                      server_hostname="127.0.0.1"))


def create_topic(admin, name: str, partitions: int) -> uuid.UUID:
    assert admin.create_topic(name, partitions) == 0
    md = admin.request(3, 12, {"topics": [{"name": name, "topic_id": None}], "allow_auto_topic_creation": False,
                                    "include_topic_authorized_operations": False})
    return md.topics[0].topic_id


def allow(admin, principal: str, *entries):
    r = admin.request(30, 3, {"creations": [
        {"resource_type": rt, "resource_name": name, "resource_pattern_type": 3, "principal": principal, "host": "*",
         "operation": op, "permission_type": 3} for rt, name, op in entries]})
    assert [x.error_code for x in r.results] == [0] * len(entries), r


def heartbeat(c, group: str, member: str, epoch: int, topics=None, regex=None, owned=None, rto: int = -1):
    return c.request(68, 1, {"group_id": group, "member_id": member, "member_epoch": epoch, "instance_id": None,
                             "rack_id": None, "rebalance_timeout_ms": rto, "subscribed_topic_names": topics,
                             "subscribed_topic_regex": regex, "server_assignor": None, "topic_partitions": owned})


def join(c, group: str, member: str, topics=None, regex=None):
    return heartbeat(c, group, member, 0, topics=topics, regex=regex, owned=[], rto=30000)


def assigned(answer) -> dict:
    return {tp.topic_id: sorted(tp.partitions) for tp in answer.assignment.topic_partitions}


def describe(c, group: str):
    return c.request(69, 1, {"group_ids": [group], "include_authorized_operations": False}).groups[0]


def test_kip848_takeover_is_refused_at_each_step(secured, bystander):
    b = bystander(secured.sasl_bootstrap, properties=ADMIN)
    admin = login(secured, "admin")
    topic, group, victim = f"orders-{uuid.uuid4().hex[:8]}", f"billing-{uuid.uuid4().hex[:8]}", str(uuid.uuid4())
    topic_id = create_topic(admin, topic, 2)
    assert admin.produce(topic, 0, make_batch([b"first"])).error_code == 0
    joined = join(admin, group, victim, topics=[topic])
    assert joined.error_code == 0 and assigned(joined) == {topic_id: [0, 1]}, joined
    epoch = joined.member_epoch
    owned = [{"topic_id": topic_id, "partitions": [0, 1]}]
    assert heartbeat(admin, group, victim, epoch, owned=owned).error_code == 0

    mark = b.mark()
    for attacker in (login(secured, "mallory"), anonymous_tls(secured)):
        intruder = str(uuid.uuid4())
        steps = {
            "ConsumerGroupDescribe": lambda: describe(attacker, group),
            "ConsumerGroupHeartbeat join": lambda: join(attacker, group, intruder, topics=[topic]),
            "ConsumerGroupHeartbeat leave as the victim (epoch -1)": lambda: heartbeat(attacker, group, victim, -1),
            "ConsumerGroupHeartbeat as the victim": lambda: heartbeat(attacker, group, victim, epoch, owned=owned),
            "ConsumerGroupHeartbeat join as the victim": lambda: join(attacker, group, victim, topics=[topic]),
            "DescribeGroups": lambda: attacker.request(15, 6, {"groups": [group],
                                                               "include_authorized_operations": True}).groups[0],
            "OffsetFetch": lambda: attacker.request(9, 9, {"groups": [{"group_id": group, "member_id": victim,
                                                                       "member_epoch": epoch, "topics": None}],
                                                           "require_stable": True}).groups[0],
            "OffsetCommit as the victim": lambda: attacker.request(8, 9, {
                "group_id": group, "generation_id_or_member_epoch": epoch, "member_id": victim,
                "group_instance_id": None, "topics": [{"name": topic, "partitions": [
                    {"partition_index": 0, "committed_offset": 1000, "committed_leader_epoch": -1,
                     "committed_metadata": ""}]}]}).topics[0].partitions[0],
            "LeaveGroup (classic) of the victim": lambda: attacker.request(13, 5, {
                "group_id": group, "members": [{"member_id": victim, "group_instance_id": None, "reason": None}]}),
            "OffsetDelete": lambda: attacker.request(47, 0, {"group_id": group, "topics": [
                {"name": topic, "partitions": [{"partition_index": 0}]}]}),
            "DeleteGroups": lambda: attacker.request(42, 2, {"groups_names": [group]}).results[0],
        }
        for what, step in steps.items():
            answer = step()
            assert answer.error_code == GROUP_AUTHZ, (what, answer)
            assert not getattr(answer, "members", None), (what, answer)
        groups = attacker.request(16, 5, {"states_filter": [], "types_filter": []}).groups
        assert group not in {g.group_id for g in groups}

    # the victim is still the group's only member, at its epoch, with both partitions and its offsets
    beat = heartbeat(admin, group, victim, epoch, owned=owned)
    assert (beat.error_code, beat.member_epoch) == (0, epoch), beat
    described = describe(admin, group)
    assert [m.member_id for m in described.members] == [victim], described
    current = described.members[0].assignment.topic_partitions
    assert [(tp.topic_id, sorted(tp.partitions)) for tp in current] == [(topic_id, [0, 1])], described
    fetched = admin.fetch(topic, 0, 0)
    assert fetched.error_code == 0 and fetched.records
    b.wait_progress()
    assert b.p99(since=mark) < 2


def test_subscriptions_reach_only_topics_the_principal_may_describe(secured):
    admin, mallory = login(secured, "admin"), login(secured, "mallory")
    prefix = f"ledger-{uuid.uuid4().hex[:8]}"
    visible, hidden, group = f"{prefix}-public", f"{prefix}-secret", f"audit-{uuid.uuid4().hex[:8]}"
    visible_id, hidden_id = create_topic(admin, visible, 2), create_topic(admin, hidden, 1)
    allow(admin, "User:mallory", (GROUP, group, READ), (TOPIC, visible, DESCRIBE))

    # by name: the whole heartbeat is refused, before the group sees it
    for topics in ([hidden], [visible, hidden]):
        answer = join(mallory, group, str(uuid.uuid4()), topics=topics)
        assert answer.error_code == TOPIC_AUTHZ and answer.member_id is None, answer
    assert describe(admin, group).error_code == 69  # GROUP_ID_NOT_FOUND: nobody joined

    # by regex: it resolves to the describable topic only
    member = str(uuid.uuid4())
    answer = join(mallory, group, member, regex=f"{prefix}-.*")
    assert answer.error_code == 0 and assigned(answer) == {visible_id: [0, 1]}, answer
    assert hidden_id not in assigned(heartbeat(mallory, group, member, answer.member_epoch, regex=f"{prefix}-.*",
                                               owned=[], rto=30000))
    mine = describe(mallory, group)
    assert mine.error_code == 0 and [m.member_id for m in mine.members] == [member]

    # once another member of the group is assigned the hidden topic, describing the group would name it
    other = join(admin, group, str(uuid.uuid4()), topics=[hidden])
    assert other.error_code == 0 and assigned(other) == {hidden_id: [0]}, other
    refused = describe(mallory, group)
    assert (refused.error_code, refused.error_message, refused.members) == (TOPIC_AUTHZ, HIDDEN_TOPICS, []), refused
    assert len(describe(admin, group).members) == 2
