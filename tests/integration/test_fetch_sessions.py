"""Incremental fetch sessions (KIP-227) with real consumers.

The Java consumer and kafka-python open a session with their first fetch and then send
incremental fetches; librdkafka (confluent-kafka 2.x) and aiokafka always send sessionless full
fetches, so they never appear here (tests/integration/test_leader_epochs.py and the round-trip
tests cover them across restarts). Sessions live in memory: after a restart, the consumer's next
incremental fetch gets FETCH_SESSION_ID_NOT_FOUND, and it must start over with a full fetch and a
new session without losing or repeating a record. The broker's FetchSessionCache gauges show
the sessions; the wire rules themselves are recorded from Kafka
(tests/conformance/scenarios/fetch_sessions.py).
"""
from __future__ import annotations

import json
import re
import subprocess
import threading
import urllib.request
import uuid

import pytest

from harness import create_topic, metrics_broker, wait_until

PARTITIONS = 3
PER_PHASE = 30


@pytest.fixture
def sbroker(tmp_path):
    with metrics_broker(tmp_path / "data", "sessions-broker") as b:
        yield b


def sessions(b) -> tuple[int, int]:
    """(incremental fetch sessions, partitions they hold) in the broker now."""
    with urllib.request.urlopen(f"http://127.0.0.1:{b.metrics_port}/metrics", timeout=10) as r:
        text = r.read().decode()

    def gauge(name):
        m = re.search(rf"^kafka_server_fetchsessioncache_{name} (\S+)$", text, re.M)
        return int(float(m.group(1)))
    return gauge("numincrementalfetchsessions"), gauge("numincrementalfetchpartitionscached")


def produce(b, topic: str, phase: str) -> list[str]:
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 5, "enable.idempotence": True})
    values = [f"{phase}:{i}" for i in range(PER_PHASE)]
    for i, v in enumerate(values):
        p.produce(topic, value=v.encode(), partition=i % PARTITIONS)
    assert p.flush(30) == 0
    return values


def check_exactly_once(got: list[str], expected: list[str]) -> None:
    dup = sorted({v for v in got if got.count(v) > 1})
    assert not dup, f"read twice: {dup[:10]}"
    assert sorted(got) == sorted(expected), (f"missing {sorted(set(expected) - set(got))[:10]}, "
                                             f"unexpected {sorted(set(got) - set(expected))[:10]}")


def across_a_restart(b, topic: str, got, failed) -> None:
    """Records before a restart read through a session; after it, a new session, and every record once."""
    expected = produce(b, topic, "a")
    wait_until(lambda: len(got()) >= len(expected) or failed(), 60,
               message=lambda: f"consumer has {len(got())}/{len(expected)} records before the restart")
    assert not failed(), failed()
    # the consumer, polling on at the end of the log, holds an incremental session of every partition
    wait_until(lambda: sessions(b) == (1, PARTITIONS), 30, message=lambda: f"sessions {sessions(b)}")
    b.restart()
    # (no check of an empty cache here: the consumer may already hold a new session; the
    # sessions live in memory only, so any session after the restart is a new one)
    expected += produce(b, topic, "b")
    wait_until(lambda: len(got()) >= len(expected) or failed(), 90,
               message=lambda: f"consumer has {len(got())}/{len(expected)} records after the restart")
    assert not failed(), failed()
    # its old session id was unknown to the restarted broker: it started over with a new one
    wait_until(lambda: sessions(b) == (1, PARTITIONS), 30, message=lambda: f"sessions {sessions(b)}")
    check_exactly_once(got(), expected)


def test_java_consumer_session_across_a_restart(sbroker, unique_topic, java_client):
    b, topic = sbroker, unique_topic("sessions-java")
    create_topic("confluent-kafka", b.bootstrap, topic, PARTITIONS, broker=b)
    proc = subprocess.Popen(["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp",
                             java_client.classpath, "TxnTool", "follow", "--bootstrap", b.bootstrap, "--topics", topic,
                             "--group", f"g-{uuid.uuid4().hex[:8]}", "--expected", str(2 * PER_PHASE),
                             "--timeout-ms", "150000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[dict] = []

    def pump():
        for line in proc.stdout:
            if line.startswith("{"):
                lines.append(json.loads(line))
    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        across_a_restart(b, topic, lambda: [r["value"] for r in lines if r["type"] == "record"],
                         lambda: proc.poll() is not None and f"TxnTool exited {proc.returncode}: "
                                                             f"{proc.stderr.read()[-3000:]}")
        assert proc.wait(60) == 0, proc.stderr.read()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
        reader.join(10)
    assert lines[-1]["type"] == "summary", lines[-1]


def test_kafka_python_consumer_session_across_a_restart(sbroker, unique_topic):
    from kafka import KafkaConsumer, TopicPartition
    b, topic = sbroker, unique_topic("sessions-kpy")
    create_topic("confluent-kafka", b.bootstrap, topic, PARTITIONS, broker=b)
    got: list[str] = []
    errors: list[BaseException] = []
    stop = threading.Event()
    c = KafkaConsumer(bootstrap_servers=b.bootstrap, enable_auto_commit=False, reconnect_backoff_max_ms=500,
                      isolation_level="read_committed")
    parts = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    c.assign(parts)
    c.seek_to_beginning(*parts)

    def read():
        try:
            while not stop.is_set():
                for records in c.poll(200).values():
                    got.extend(r.value.decode() for r in records)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            errors.append(e)
    t = threading.Thread(target=read, daemon=True)
    t.start()
    try:
        across_a_restart(b, topic, lambda: list(got), lambda: errors and repr(errors[0]))
    finally:
        stop.set()
        t.join(30)
        c.close()
