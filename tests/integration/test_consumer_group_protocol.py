"""KIP-848 with real clients (group.protocol=consumer): confluent-kafka members in
subprocesses (tests/cg_worker.py) and the Java consumer 4.1.

Short timeouts keep these tests quick: the broker gives members a 300 ms heartbeat interval
and removes a silent one after 2 s (group.consumer.session.timeout.ms).
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer

from harness import wait_until
from rawclient import RawClient

WORKER = Path(__file__).resolve().parents[1] / "cg_worker.py"
FAST_GROUPS = {"group.consumer.heartbeat.interval.ms": 300, "group.consumer.min.heartbeat.interval.ms": 100,
               "group.consumer.session.timeout.ms": 2000, "group.consumer.min.session.timeout.ms": 1000,
               "group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 1000}


class Member:
    """A cg_worker subprocess; its JSON lines are read by a thread."""

    def __init__(self, bootstrap: str, group: str, topic: str, *extra: str):
        self.proc = subprocess.Popen([sys.executable, str(WORKER), bootstrap, group, topic, *extra],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.assigned: list[int] = []
        self.committed = 0
        self.stalled = False
        self.events: list[dict] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            self.events.append(ev)
            if "assigned" in ev:
                self.assigned = ev["assigned"]
            if "committed" in ev:
                self.committed = ev["committed"]
            if "stalled" in ev:
                self.stalled = True

    def leave(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)

    def crash(self) -> None:
        self.proc.kill()
        self.proc.wait(10)
        self.assigned = []

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def describe(bootstrap: str, group: str):
    with RawClient.to(bootstrap) as c:
        return c.request(69, 0, {"group_ids": [group], "include_authorized_operations": False}).groups[0]


def balanced(members: list[Member], partitions: int) -> bool:
    got = [p for m in members for p in m.assigned]
    sizes = [len(m.assigned) for m in members]
    return sorted(got) == list(range(partitions)) and max(sizes) - min(sizes) <= 1


def produce(bootstrap: str, topic: str, start: int, n: int, partitions: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for i in range(start, start + n):
        p.produce(topic, str(i).encode(), key=str(i).encode(), partition=i % partitions)
    assert p.flush(30) == 0


@pytest.fixture
def fast_broker(broker_factory):
    # Timed-out transactions aborted within half a second of their timeout, not up to the
    # default 10 s scan later: the exactly-once tests wait for a crashed member's transaction
    # (10 s timeout, tests/cg_worker.py) to be aborted before its partitions move on.
    return broker_factory(overrides={**FAST_GROUPS,
                                     "transaction.abort.timed.out.transaction.cleanup.interval.ms": 500})


@pytest.mark.parametrize("protocol", ["consumer", "classic"])
def test_four_members_join_leave_crash_and_broker_kill(fast_broker, protocol):
    """4 members over 8 partitions; a 5th joins and leaves; one crashes and its partitions move
    after the session timeout; the broker is killed -9 and the group carries on (consumer
    protocol: with the same epochs and assignments)."""
    b = fast_broker
    topic, group = f"cg-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic(topic, 8) == 0
    members = [Member(b.bootstrap, group, topic, "--protocol", protocol) for _ in range(4)]
    try:
        wait_until(lambda: balanced(members, 8) and all(len(m.assigned) == 2 for m in members), 30,
                   message=lambda: [m.assigned for m in members])
        fifth = Member(b.bootstrap, group, topic, "--protocol", protocol)
        members.append(fifth)
        wait_until(lambda: balanced(members, 8) and fifth.assigned, 30, message=lambda: [m.assigned for m in members])
        fifth.leave()
        members.remove(fifth)
        wait_until(lambda: balanced(members, 8) and all(len(m.assigned) == 2 for m in members), 30,
                   message=lambda: [m.assigned for m in members])
        # a crash: nothing is sent; the coordinator notices after the session timeout
        victim = members.pop()
        lost = list(victim.assigned)
        crashed_at = time.monotonic()
        victim.crash()
        wait_until(lambda: balanced(members, 8), 30, message=lambda: [m.assigned for m in members])
        assert time.monotonic() - crashed_at >= 1.5, "partitions moved before the session timeout"
        assert set(lost) <= {p for m in members for p in m.assigned}
        if protocol == "classic":
            b.kill()
            b.start()
            wait_until(lambda: balanced(members, 8), 30, message=lambda: [m.assigned for m in members])
            return
        # the members have their new partitions; the group is Stable once each has said so in a
        # heartbeat (until then Reconciling, as Kafka's), at most a heartbeat interval later
        wait_until(lambda: describe(b.bootstrap, group).group_state == "Stable", 10,
                   message=lambda: describe(b.bootstrap, group).group_state)
        before = describe(b.bootstrap, group)
        assert before.group_state == "Stable" and len(before.members) == 3
        b.kill()
        b.start()
        after = describe(b.bootstrap, group)
        assert (after.group_epoch, after.assignment_epoch) == (before.group_epoch, before.assignment_epoch)
        assert {m.member_id: (m.member_epoch, sorted(m.assignment.topic_partitions[0].partitions))
                for m in after.members} == \
               {m.member_id: (m.member_epoch, sorted(m.assignment.topic_partitions[0].partitions))
                for m in before.members}
        # the members heartbeat on with their epochs: nobody is fenced, nothing moves
        epoch = after.group_epoch
        wait_until(lambda: all(m.member_epoch == epoch for m in describe(b.bootstrap, group).members)
                   and len(describe(b.bootstrap, group).members) == 3, 10)
        assert balanced(members, 8)
    finally:
        for m in members:
            m.close()


def read_values(bootstrap: str, topic: str, partitions: int) -> list[bytes]:
    """What a read_committed consumer gets: aborted transactions dropped (the workers' producers
    abort, and a crashed one's open transaction is aborted when it times out)."""
    out = []
    with RawClient.to(bootstrap) as c:
        for p in range(partitions):
            out += [value for _, value, _ in c.read_partition(topic, p, isolation=1).records]
    return out


# ("consumer", True): the workers' producers do not re-bootstrap after the broker kill (a
# librdkafka bug would hang send_offsets_to_transaction for ever, see tests/cg_worker.py)
@pytest.mark.parametrize("protocol, kill_broker", [("consumer", False), ("consumer", True), ("classic", False)])
def test_eos_consume_transform_produce_nothing_twice(fast_broker, protocol, kill_broker):
    """Two exactly-once workers share the input; one is killed -9 in the middle of a
    transaction (its outputs written, its offsets sent, no commit) and a third takes its place
    (and, in one variant, the broker is killed -9 while they work); every input record is in
    the output exactly once (read_committed): the dead member's partitions wait for its
    transaction to time out and abort (their offsets are unstable until then), and nothing
    of it is read."""
    b = fast_broker
    src, dst, group = f"in-{uuid.uuid4().hex[:6]}", f"out-{uuid.uuid4().hex[:6]}", f"eos-{uuid.uuid4().hex[:6]}"
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic(src, 8) == 0
        assert c.create_topic(dst, 4) == 0
    n = 600
    args = ("--protocol", protocol, "--eos", dst)
    w1 = Member(b.bootstrap, group, src, *args, f"tx-{group}-1")
    w2 = Member(b.bootstrap, group, src, *args, f"tx-{group}-2", "--stall")
    workers = [w1, w2]
    try:
        # input only once both have partitions: w2 stalls in its first transaction, w1 commits
        wait_until(lambda: w1.assigned and w2.assigned, 60, message=lambda: (w1.events[-3:], w2.events[-3:]))
        produce(b.bootstrap, src, 0, n // 2, 8)
        wait_until(lambda: w1.committed > 0 and w2.stalled, 60, message=lambda: (w1.events[-3:], w2.events[-3:]))
        w2.crash()
        produce(b.bootstrap, src, n // 2, n // 2, 8)
        w3 = Member(b.bootstrap, group, src, *args, f"tx-{group}-3")
        workers.append(w3)
        if kill_broker:
            wait_until(lambda: w3.committed > 0 or w1.committed > n // 4, 60)
            b.kill()
            b.start()
        wait_until(lambda: len(read_values(b.bootstrap, dst, 4)) >= n, 90,
                   message=lambda: (len(read_values(b.bootstrap, dst, 4)), w1.events[-3:], w3.events[-3:],
                                    describe(b.bootstrap, group) if protocol == "consumer" else None))
        values = read_values(b.bootstrap, dst, 4)
        dupes = {v for v in values if values.count(v) > 1}
        assert not dupes, f"consumed twice: {sorted(dupes)[:10]}"
        assert sorted(values) == sorted(b"out:%d" % i for i in range(n))
    finally:
        for w in workers:
            w.close()


# ------------------------------------------------------------------ the Java client 4.1
def java(java_client, mode: str, *args: str) -> list[str]:
    return ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", java_client.classpath,
            "TxnTool", mode, *args]


def test_java_consumer_protocol_group_commits_and_resumes(fast_broker, java_client):
    """The Java consumer with group.protocol=consumer reads, commits (OffsetCommit v9 with its
    member epoch), and a second run of the group resumes from there."""
    b = fast_broker
    topic, group = f"jcg-{uuid.uuid4().hex[:6]}", f"jg-{uuid.uuid4().hex[:6]}"
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic(topic, 3) == 0
    produce(b.bootstrap, topic, 0, 30, 3)

    def run(expected):
        r = subprocess.run(java(java_client, "group-consume", "--bootstrap", b.bootstrap, "--topics", topic,
                                "--group", group, "--expected", str(expected), "--timeout-ms", "30000",
                                "--group-protocol", "consumer"), capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr[-3000:]
        lines = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
        return [d["value"] for d in lines if d["type"] == "record"], lines[-1]

    values, summary = run(30)
    assert summary["assignment"] == 3 and sorted(values) == sorted(str(i) for i in range(30))
    produce(b.bootstrap, topic, 30, 3, 3)
    values, _ = run(3)
    assert sorted(values) == ["30", "31", "32"]  # resumed from the committed offsets


def test_java_eos_members_nothing_twice(fast_broker, java_client):
    """Two Java exactly-once members (group.protocol=consumer, offsets in the transaction by
    member epoch); once both have their partitions one is killed -9, more input arrives and a
    third member joins (the first must revoke while it works): every input once in the output."""
    b = fast_broker
    src, dst, group = f"jin-{uuid.uuid4().hex[:6]}", f"jout-{uuid.uuid4().hex[:6]}", f"jeos-{uuid.uuid4().hex[:6]}"
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic(src, 8) == 0
        assert c.create_topic(dst, 4) == 0
    n = 400
    produce(b.bootstrap, src, 0, n // 2, 8)
    procs = []

    def member(i):
        p = subprocess.Popen(java(java_client, "eos-member", "--bootstrap", b.bootstrap, "--topics", src,
                                  "--group", group, "--out", dst, "--transactional-id", f"tx-{group}-{i}",
                                  "--duration-ms", "60000"),
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        procs.append(p)
        return p

    try:
        m1, m2 = member(1), member(2)

        def settled():
            g = describe(b.bootstrap, group)
            return g.group_state == "Stable" and len(g.members) == 2
        wait_until(settled, 60, message=lambda: describe(b.bootstrap, group))
        m2.kill()  # its partitions move after the session timeout, from its last committed offsets
        produce(b.bootstrap, src, n // 2, n // 2, 8)
        member(3)
        wait_until(lambda: len(read_values(b.bootstrap, dst, 4)) >= n, 90,
                   message=lambda: len(read_values(b.bootstrap, dst, 4)))
        values = read_values(b.bootstrap, dst, 4)
        assert sorted(values) == sorted(b"out:%d" % i for i in range(n))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(10)


def test_regex_subscription_picks_up_new_topics(fast_broker):
    """subscribe(["^prefix.*"]) with group.protocol=consumer: the regex goes to the broker
    (SubscribedTopicRegex); a topic created later is assigned at a following heartbeat."""
    from confluent_kafka import Consumer
    b = fast_broker
    prefix = f"rx{uuid.uuid4().hex[:6]}"
    group = f"g-{prefix}"
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic(f"{prefix}-a", 2) == 0
        assert c.create_topic(f"other-{prefix}", 1) == 0
    consumer = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group, "group.protocol": "consumer"})
    try:
        consumer.subscribe([f"^{prefix}-.*"])

        def assigned():
            consumer.poll(0.1)
            return sorted((tp.topic, tp.partition) for tp in consumer.assignment())
        wait_until(lambda: assigned() == [(f"{prefix}-a", 0), (f"{prefix}-a", 1)], 30, message=assigned)
        with RawClient.to(b.bootstrap) as c:
            assert c.create_topic(f"{prefix}-b", 1) == 0
        wait_until(lambda: (f"{prefix}-b", 0) in assigned(), 30, message=assigned)
        g = describe(b.bootstrap, group)
        assert f"^{prefix}-.*" in g.members[0].subscribed_topic_regex  # librdkafka sends "(^...)"
    finally:
        consumer.close()


HEARTBEAT_JOIN = {"group_id": "g", "member_id": "mmmmmmmmmmmmmmmmmmmmmm", "member_epoch": 0, "instance_id": None,
                  "rack_id": None, "rebalance_timeout_ms": 30000, "subscribed_topic_names": ["t"],
                  "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": []}


@pytest.mark.parametrize("off", [{"overrides": {"group.coordinator.rebalance.protocols": "classic"}},
                                 {"features": {"group.version": 0}}], ids=["classic-only", "group.version=0"])
def test_consumer_protocol_off(broker_factory, off):
    """Without `consumer` in group.coordinator.rebalance.protocols, or with group.version 0, KIP-848's
    APIs are still advertised (as Kafka 4.1 advertises them) and answered UNSUPPORTED_VERSION, the
    connection kept; classic groups are unaffected."""
    b = broker_factory(**off)
    with RawClient.to(b.bootstrap) as c:
        keys = {k.api_key for k in c.request(18, 3, {"client_software_name": "t", "client_software_version": "1"}).api_keys}
        assert {11, 68, 69} <= keys
        assert c.request(68, 1, HEARTBEAT_JOIN).error_code == 35
        d = c.request(69, 1, {"group_ids": ["g", "h"], "include_authorized_operations": False})
        assert [(g.group_id, g.error_code) for g in d.groups] == [("g", 35), ("h", 35)]
        assert c.request(10, 4, {"key_type": 0, "coordinator_keys": ["g"]}).coordinators[0].error_code == 0


def test_group_version_upgrade_turns_consumer_groups_on(broker_factory):
    """UpdateFeatures group.version 0 -> 1 (kafka-features.sh upgrade) serves KIP-848 groups at once;
    the level is kept across a restart."""
    b = broker_factory(features={"group.version": 0})
    upgrade = {"timeout_ms": 30000, "validate_only": False,
               "feature_updates": [{"feature": "group.version", "max_version_level": 1, "upgrade_type": 1}]}
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic("t", 1) == 0
        assert c.request(68, 1, HEARTBEAT_JOIN).error_code == 35
        assert c.request(57, 1, upgrade).error_code == 0
        wait_until(lambda: c.request(68, 1, HEARTBEAT_JOIN).error_code == 0, 10, message="no join after the upgrade")
    b.restart()
    with RawClient.to(b.bootstrap) as c:
        versions = c.request(18, 3, {"client_software_name": "t", "client_software_version": "1"})
        assert {f.name: f.max_version_level for f in versions.finalized_features}.get("group.version") == 1


def test_confluent_admin_lists_and_describes_consumer_groups(fast_broker):
    """confluent-kafka's admin on a consumer-protocol group: ListGroups by type, the group
    described through ConsumerGroupDescribe, and KIP-430 operations for group, topic, cluster."""
    from confluent_kafka import Consumer, ConsumerGroupState, ConsumerGroupType, TopicCollection
    from confluent_kafka.admin import AclOperation as Op, AdminClient
    b = fast_broker
    topic, group = f"adm-{uuid.uuid4().hex[:6]}", f"gadm-{uuid.uuid4().hex[:6]}"
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic(topic, 4) == 0
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    consumer = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group, "group.protocol": "consumer"})
    try:
        consumer.subscribe([topic])
        wait_until(lambda: consumer.poll(0.1) is None and len(consumer.assignment()) == 4, 30)
        listed = admin.list_consumer_groups(types={ConsumerGroupType.CONSUMER}).result(30).valid
        assert [(g.group_id, g.type, g.state) for g in listed] == \
            [(group, ConsumerGroupType.CONSUMER, ConsumerGroupState.STABLE)]
        assert admin.list_consumer_groups(types={ConsumerGroupType.CLASSIC}).result(30).valid == []
        d = admin.describe_consumer_groups([group], include_authorized_operations=True)[group].result(30)
        assert (d.type, d.state, d.partition_assignor) == (ConsumerGroupType.CONSUMER, ConsumerGroupState.STABLE,
                                                           "uniform")
        assert [sorted(p.partition for p in m.assignment.topic_partitions) for m in d.members] == [[0, 1, 2, 3]]
        assert set(d.authorized_operations) == {Op.READ, Op.DELETE, Op.DESCRIBE, Op.DESCRIBE_CONFIGS,
                                                Op.ALTER_CONFIGS}
        t = admin.describe_topics(TopicCollection([topic]), include_authorized_operations=True)[topic].result(30)
        assert set(t.authorized_operations) == {Op.READ, Op.WRITE, Op.CREATE, Op.DELETE, Op.ALTER, Op.DESCRIBE,
                                                Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS}
        cl = admin.describe_cluster(include_authorized_operations=True).result(30)
        assert set(cl.authorized_operations) == {Op.CREATE, Op.ALTER, Op.DESCRIBE, Op.CLUSTER_ACTION,
                                                 Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS, Op.IDEMPOTENT_WRITE}
    finally:
        consumer.close()


def test_classic_and_consumer_members_share_a_group(fast_broker):
    """A fleet rolling from group.protocol=classic to consumer: two classic members share the
    partitions; a consumer-protocol member joins and the group is upgraded online (Kafka 4.1's
    default group.consumer.migration.policy); the partitions are spread over all three, each
    owned by one member; when the classic members leave, the consumer member gets them all."""
    b = fast_broker
    topic, group = f"mig-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic(topic, 4) == 0
    classic = [Member(b.bootstrap, group, topic, "--protocol", "classic") for _ in range(2)]
    members = list(classic)
    try:
        wait_until(lambda: balanced(classic, 4), 30, message=lambda: [m.assigned for m in classic])
        new = Member(b.bootstrap, group, topic, "--protocol", "consumer")
        members.append(new)
        wait_until(lambda: balanced(members, 4) and all(m.assigned for m in members), 30,
                   message=lambda: [m.assigned for m in members])
        d = describe(b.bootstrap, group)
        assert d.error_code == 0 and len(d.members) == 3
        for m in classic:
            m.leave()
        wait_until(lambda: sorted(new.assigned) == [0, 1, 2, 3], 30, message=lambda: new.assigned)
    finally:
        for m in members:
            m.close()
