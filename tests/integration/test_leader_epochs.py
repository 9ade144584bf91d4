"""Real consumers across broker restarts (kill -9 and clean).

Every restart moves each partition's leader epoch on by 2, as a one-node KRaft
Kafka does. A KIP-320 consumer (librdkafka, the Java client) then sees a newer
epoch in Metadata (or FENCED_LEADER_EPOCH on a fetch) and validates its position
with OffsetForLeaderEpoch. It must never be told its log was truncated when it
was not: that would reset or rewind it (records lost or read twice). Here a live
group member reads read_committed transactions produced before and after each
restart, committing as it goes, and a new member of the group then resumes from
the committed offsets (with their leader epochs) after one more restart. Each
record is read exactly once, its batch carries the epoch of its phase, and the
broker really was asked OffsetForLeaderEpoch after the restarts.
"""
from __future__ import annotations

import json
import re
import subprocess
import threading
import time
import urllib.request
import uuid

import pytest

from harness import BrokerProcess, create_topic, metrics_broker, wait_until

PARTITIONS = 2
PER_PHASE = 20


def produce_phase(bootstrap: str, topic: str, txn_id: str, phase: str) -> list[str]:
    """Two committed transactions of PER_PHASE / 2 records and an aborted one in between;
    returns the committed values."""
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 5,
                  "transaction.timeout.ms": 60000})
    p.init_transactions(30)
    committed = []
    for txn, abort in ((0, False), (1, True), (2, False)):
        p.begin_transaction()
        for i in range(PER_PHASE // 2):
            value = f"{phase}:{txn}:{i}"
            p.produce(topic, value=value.encode(), partition=i % PARTITIONS)
            if not abort:
                committed.append(value)
        if abort:
            p.abort_transaction(30)
        else:
            p.commit_transaction(30)
    return committed


def ofle_requests(metrics_port: int) -> int:
    """OffsetForLeaderEpoch requests the running broker process has handled."""
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as r:
        text = r.read().decode()
    # one sample per API version
    return int(sum(float(v) for v in re.findall(
        r'kafka_network_requestmetrics_requests_total\{request="OffsetForLeaderEpoch",version="\d+"\} (\S+)', text)))


@pytest.fixture
def ebroker(tmp_path):
    with metrics_broker(tmp_path / "data", "epochs-broker") as b:
        yield b


def check_exactly_once(records: list[dict], expected: list[str]) -> None:
    """Every committed value once, nothing else, offsets increasing per partition."""
    values = [r["value"] for r in records]
    dup = sorted({v for v in values if values.count(v) > 1})
    assert not dup, f"read twice (a reset or rewind after a restart): {dup[:10]}"
    assert sorted(values) == sorted(expected), (f"missing {sorted(set(expected) - set(values))[:10]}, "
                                                f"unexpected {sorted(set(values) - set(expected))[:10]}")
    for p in range(PARTITIONS):
        offsets = [r["offset"] for r in records if r["partition"] == p]
        assert offsets == sorted(offsets), f"partition {p} went backwards: {offsets}"


def check_epochs(records: list[dict], epoch_of_phase: dict[str, int]) -> None:
    got = {(r["value"].split(":")[0], r["leader_epoch"]) for r in records}
    assert got == set(epoch_of_phase.items()), got


def run_restarts(b: BrokerProcess, topic: str, txn_id: str, consumed, consumer_failed) -> list[str]:
    """Phases a (epoch 0), b (after kill -9: 2), c (after a clean restart: 4); waits after
    each until the live consumer has everything committed so far."""
    expected: list[str] = []
    for phase, restart in (("a", None), ("b", "kill"), ("c", "clean")):
        if restart:
            b.restart(kill=restart == "kill")
        expected += produce_phase(b.bootstrap, topic, txn_id, phase)
        wait_until(lambda: len(consumed()) >= len(expected) or consumer_failed(), 90,
                   message=lambda: f"phase {phase}: consumer has {len(consumed())}/{len(expected)}{b.describe(30)}")
        assert not consumer_failed(), consumer_failed()
        check_exactly_once(consumed(), expected)
        if restart:
            assert ofle_requests(b.metrics_port) > 0, "the consumer never validated its position after the restart"
    return expected


def test_confluent_consumer_across_restarts_reads_exactly_once(ebroker, unique_topic):
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

    b, topic, group, txn_id = ebroker, unique_topic("epochs-ck"), f"g-{uuid.uuid4().hex[:8]}", f"tx-{uuid.uuid4().hex[:8]}"
    create_topic("confluent-kafka", b.bootstrap, topic, PARTITIONS, broker=b)
    # auto.offset.reset=error: any reset (a truncation detected, an offset out of range) is an error event
    conf = {"bootstrap.servers": b.bootstrap, "group.id": group, "enable.auto.commit": False,
            "auto.offset.reset": "error", "isolation.level": "read_committed", "reconnect.backoff.max.ms": 500}
    transient = {KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._RESOLVE}
    records: list[dict] = []
    errors: list[str] = []
    stop = threading.Event()

    def read(c):
        while not stop.is_set():
            msgs = c.consume(num_messages=100, timeout=0.2)
            for m in msgs:
                if m.error():
                    if m.error().code() not in transient:
                        errors.append(str(m.error()))
                    continue
                records.append({"value": m.value().decode(), "partition": m.partition(), "offset": m.offset(),
                                "leader_epoch": m.leader_epoch()})
            if msgs:
                try:
                    c.commit(asynchronous=False)
                except KafkaException:
                    pass  # the broker is restarting: the next batch commits again

    live = Consumer(conf)
    live.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    t = threading.Thread(target=read, args=(live,), daemon=True)
    t.start()
    try:
        expected = run_restarts(b, topic, txn_id, lambda: records, lambda: errors)
    finally:
        stop.set()
        t.join(30)
    wait_until(lambda: _try_commit(live), 30, message="final commit")
    live.close()
    check_exactly_once(records, expected)
    check_epochs(records, {"a": 0, "b": 2, "c": 4})

    # a new member of the group resumes from the committed offsets and epochs, after one more restart
    b.restart(kill=True)
    expected_d = produce_phase(b.bootstrap, topic, txn_id, "d")
    records.clear()
    stop.clear()
    fresh = Consumer(conf)
    fresh.subscribe([topic])
    t = threading.Thread(target=read, args=(fresh,), daemon=True)
    t.start()
    try:
        wait_until(lambda: len(records) >= len(expected_d) or errors, 60,
                   message=lambda: f"resumed consumer has {len(records)}/{len(expected_d)}")
    finally:
        stop.set()
        t.join(30)
    fresh.close()
    assert not errors, errors
    check_exactly_once(records, expected_d)
    check_epochs(records, {"d": 6})


def _try_commit(c) -> bool:
    from confluent_kafka import KafkaException
    try:
        c.commit(asynchronous=False)
        return True
    except KafkaException as e:
        return "NO_OFFSET" in str(e)  # nothing new to commit


def test_java_consumer_across_restarts_reads_exactly_once(ebroker, unique_topic, java_client):
    b, topic, group, txn_id = ebroker, unique_topic("epochs-java"), f"g-{uuid.uuid4().hex[:8]}", f"tx-{uuid.uuid4().hex[:8]}"
    create_topic("confluent-kafka", b.bootstrap, topic, PARTITIONS, broker=b)

    def tool(mode: str, expected: int, timeout_ms: int) -> subprocess.Popen:
        return subprocess.Popen(["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp",
                                 java_client.classpath, "TxnTool", mode, "--bootstrap", b.bootstrap, "--topics", topic,
                                 "--group", group, "--expected", str(expected), "--timeout-ms", str(timeout_ms)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def collect(proc, lines: list[dict]) -> threading.Thread:
        def pump():
            for line in proc.stdout:
                if line.startswith("{"):
                    lines.append(json.loads(line))
        th = threading.Thread(target=pump, daemon=True)
        th.start()
        return th

    out: list[dict] = []
    proc = tool("follow", 3 * PER_PHASE, 180_000)
    pump = collect(proc, out)
    records = lambda: [r for r in out if r["type"] == "record"]  # noqa: E731
    try:
        expected = run_restarts(b, topic, txn_id, records,
                                lambda: proc.poll() is not None and len(records()) < 3 * PER_PHASE
                                and f"ClientTool exited {proc.returncode}: {proc.stderr.read()[-3000:]}")
        assert proc.wait(60) == 0, proc.stderr.read()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
        pump.join(10)
    check_exactly_once(records(), expected)
    check_epochs(records(), {"a": 0, "b": 2, "c": 4})
    assert out[-1]["type"] == "summary", out[-1]

    # a new member resumes from the committed offsets and their leader epochs, after one more restart
    b.restart(kill=True)
    expected_d = produce_phase(b.bootstrap, topic, txn_id, "d")
    out = []
    proc = tool("follow", len(expected_d), 60_000)
    pump = collect(proc, out)
    assert proc.wait(120) == 0, proc.stderr.read()[-3000:]
    pump.join(10)
    check_exactly_once(records(), expected_d)
    check_epochs(records(), {"d": 6})
    assert ofle_requests(b.metrics_port) > 0, "the resumed consumer never validated its committed position"
