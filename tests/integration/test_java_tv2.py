"""Issue 14: the Java client 4.1 runs transactions V2 (KIP-890 part 2) against minikafka, as
against a Kafka 4.1 cluster with transaction.version=2 finalized, side by side with a
kafka-python (transactions V1) producer on the same topics; a downgrade to
transaction.version=1 switches the Java client back to V1 for its next transactions.

Which protocol a client speaks is proven by the broker's request metrics, per API version
(``kafka_network_requestmetrics_requests_total{request,version}``): V2 is EndTxn v5 and no
AddPartitionsToTxn at the client versions (0-3); V1 is EndTxn v0-4 after AddPartitionsToTxn."""
from __future__ import annotations

import json
import subprocess
import sys
import uuid

import pytest

from harness import free_port, wait_transaction_done
from rawclient import RawClient

from test_metrics import Scrape
from test_transactions import aborts, assert_zombie_outcome, create_topics, produce_kafka_python

PARTITIONS = 4
CLIENT_VERSIONS = set(range(0, 4))   # AddPartitionsToTxn v0-3: sent by clients (v4+: broker to broker)


def java(java_client, mode: str, *args: str, timeout: float = 180) -> dict:
    r = subprocess.run(["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp",
                        java_client.classpath, "TxnTool", mode, *args], capture_output=True, text=True,
                       timeout=timeout)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    return r


def java_produce(java_client, bootstrap, tid, topics, txns, per, every, tag) -> None:
    java(java_client, "produce", "--bootstrap", bootstrap, "--transactional-id", tid, "--topics", ",".join(topics),
         "--partitions", str(PARTITIONS), "--txns", str(txns), "--per-txn", str(per), "--abort-every", str(every),
         "--tag", tag)


def expected_values(tag: str, txns: int, per: int, every: int) -> set[str]:
    return {f"{tag}:{t}:{i}" for t in range(txns) if not aborts(t, every) for i in range(per)}


def read_committed(java_client, bootstrap, topics, expected: int) -> list[str]:
    """Every record a Java read_committed consumer reads (it keeps polling a little after
    ``expected`` records, so one too many would be seen)."""
    r = java(java_client, "consume", "--bootstrap", bootstrap, "--topics", ",".join(topics),
             "--partitions", str(PARTITIONS), "--isolation", "read_committed", "--expected", str(expected),
             "--timeout-ms", "60000", "--linger-ms", "1000")
    return [json.loads(line)["value"] for line in r.stdout.splitlines() if line.startswith('{"type":"record"')]


class Requests:
    """Request counts per API version between two scrapes."""

    def __init__(self, port: int):
        self.port = port
        self.before = Scrape(port)

    def delta(self, request: str, versions=None) -> float:
        return Scrape(self.port).requests(request, versions) - self.before.requests(request, versions)


def features(bootstrap: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "minikafka", "features", "--bootstrap-server", bootstrap, *args],
                          capture_output=True, text=True, timeout=60)


def producer_epoch(bootstrap: str, tid: str) -> int:
    with RawClient.to(bootstrap) as c:
        return c.request(65, 0, {"transactional_ids": [tid]}).transaction_states[0].producer_epoch


@pytest.fixture
def mbroker(broker_factory):
    port = free_port()
    b = broker_factory(overrides={"metrics.listener": f"127.0.0.1:{port}"})
    b.metrics_port = port
    return b


def test_java_tv2_beside_kafka_python_tv1_then_downgrade(mbroker, java_client, unique_topic):
    b = mbroker
    topics = [unique_topic("jtv2a"), unique_topic("jtv2b")]
    create_topics(b.bootstrap, topics, PARTITIONS)
    assert "transaction.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 2\tFinalizedVersionLevel: 2" \
        in features(b.bootstrap, "describe").stdout   # what a new data dir finalizes, as Kafka 4.1
    jtid, ptid = f"java-{uuid.uuid4().hex[:6]}", f"kp-{uuid.uuid4().hex[:6]}"
    txns, per, every = 12, 16, 3

    # the Java client under transactions V2: one EndTxn v5 per transaction, no AddPartitionsToTxn
    m = Requests(b.metrics_port)
    java_produce(java_client, b.bootstrap, jtid, topics, txns, per, every, "j1")
    wait_transaction_done(b.bootstrap, jtid)
    assert m.delta("EndTxn", {5}) == txns
    assert m.delta("EndTxn", set(range(5))) == 0
    assert m.delta("AddPartitionsToTxn", CLIENT_VERSIONS) == 0
    assert m.delta("Produce") > 0 and m.delta("Produce", {13}) == m.delta("Produce")   # topic ids, as against Kafka
    assert producer_epoch(b.bootstrap, jtid) == txns   # epoch 0 from InitProducerId, bumped by every EndTxn

    # kafka-python (transactions V1) on the same topics in the same run
    m = Requests(b.metrics_port)
    produce_kafka_python(b.bootstrap, ptid, topics, 6, per, every, "kp")
    wait_transaction_done(b.bootstrap, ptid)
    assert m.delta("AddPartitionsToTxn", CLIENT_VERSIONS) > 0
    assert m.delta("EndTxn", {5}) == 0 and m.delta("EndTxn") == 6
    assert producer_epoch(b.bootstrap, ptid) == 0   # V1: no bump

    want = expected_values("j1", txns, per, every) | expected_values("kp", 6, per, every)
    got = read_committed(java_client, b.bootstrap, topics, len(want))
    assert len(got) == len(want) and set(got) == want

    # downgrade: the Java client's next transactions (a new producer of the same id) are V1
    r = features(b.bootstrap, "downgrade", "--feature", "transaction.version=1")
    assert r.returncode == 0, r.stdout + r.stderr
    m = Requests(b.metrics_port)
    java_produce(java_client, b.bootstrap, jtid, topics, 6, per, every, "j2")
    wait_transaction_done(b.bootstrap, jtid)
    assert m.delta("EndTxn", {5}) == 0 and m.delta("EndTxn") == 6
    assert m.delta("AddPartitionsToTxn", CLIENT_VERSIONS) > 0
    epoch = producer_epoch(b.bootstrap, jtid)
    assert epoch == txns + 1   # InitProducerId bumped it once; V1 transactions do not

    want |= expected_values("j2", 6, per, every)
    got = read_committed(java_client, b.bootstrap, topics, len(want))
    assert len(got) == len(want) and set(got) == want


def test_java_zombie_fenced_under_tv2(mbroker, java_client, unique_topic):
    """A second instance fences the first; under V2 the Java client reports the zombie's
    produce as InvalidProducerEpochException (as against Kafka 4.1), its commit fails."""
    b = mbroker
    topic = unique_topic("jzombie")
    create_topics(b.bootstrap, [topic], 1)
    tid = f"jzombie-{uuid.uuid4().hex[:6]}"
    m = Requests(b.metrics_port)
    r = java(java_client, "zombie", "--bootstrap", b.bootstrap, "--transactional-id", tid, "--topic", topic)
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    assert summary["send_error"] == "InvalidProducerEpochException", summary
    assert summary["commit_error"] != "none", summary
    assert m.delta("AddPartitionsToTxn", CLIENT_VERSIONS) == 0 and m.delta("EndTxn", {5}) >= 1
    wait_transaction_done(b.bootstrap, tid)
    assert_zombie_outcome(b, topic, b"zombie:0", b"fresh:0")
    assert [r.value for r in b.records(topic)] == [b"fresh:0"]
