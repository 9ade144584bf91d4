"""Flush settings, as Kafka's (UnifiedLog/LogManager): what they fsync and when.

* A roll fsyncs the finished segment in the background and advances the recovery
  point to the new segment; recovery after kill -9 then rescans only the segment
  holding the recovery point (the broker logs each "Recovering unflushed segment").
* ``flush.messages=N``: the produce that brings N messages past the recovery point
  is answered only after its fsync (LogFlushStats counts it before the ack).
* ``flush.ms`` with ``log.flush.scheduler.interval.ms``: the log flusher fsyncs a
  log that long after its last fsync.
* ``log.flush.offset.checkpoint.interval.ms`` writes recovery-point-offset-checkpoint.
* DescribeConfigs reports the keys as the reference Kafka 4.1 does.
"""
from __future__ import annotations

import os
import re
import time
import urllib.request

import minikafka
from harness import free_port, wait_until
from rawclient import RawClient, make_batch

FAST_CHECKPOINTS = {"log.flush.offset.checkpoint.interval.ms": 50, "log.initial.task.delay.ms": 0}


def recovery_point(b, topic: str, partition: int = 0) -> int | None:
    try:
        lines = (b.data_dir / "recovery-point-offset-checkpoint").read_text().splitlines()
    except FileNotFoundError:
        return None
    for line in lines[2:]:
        t, p, off = line.rsplit(" ", 2)
        if (t, int(p)) == (topic, partition):
            return int(off)
    return None


def flushes(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    return int(float(re.search(r"^kafka_log_logflushstats_logflushes_total (\S+)$", text, re.M).group(1)))


def test_roll_flushes_the_finished_segment_and_recovery_starts_there(broker_factory, unique_topic):
    b = broker_factory(overrides=FAST_CHECKPOINTS)
    topic = unique_topic("roll")
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic(topic, 1, {"segment.bytes": "2000"}) == 0
        n = 0
        while len(list(b.partition_dir(topic, 0).glob("*.log"))) < 4:
            assert c.produce(topic, 0, make_batch([b"x" * 500]), acks=1).error_code == 0
            n += 1
    active = int(b.active_segment(topic, 0).name.split(".")[0])
    assert 0 < active < n
    wait_until(lambda: recovery_point(b, topic) == active, 10,
               message=lambda: f"recovery point {recovery_point(b, topic)}, rolled to {active}" + b.describe())

    b.kill()
    b.start()
    recovered = re.findall(rf"Recovering unflushed segment (\d+)\. \d+/\d+ recovered for {re.escape(topic)}-0\.",
                           b.log_text(current_run_only=True))
    assert recovered == [str(active)], b.describe()
    with RawClient.to(b.bootstrap) as c:
        assert c.list_offset(topic, 0) == n
        _, batches = c.fetch_all(topic, 0)
        assert len(batches) == n


def test_flush_messages_fsyncs_before_the_ack(broker_factory, unique_topic):
    port = free_port()
    b = broker_factory(overrides={**FAST_CHECKPOINTS, "metrics.listener": f"127.0.0.1:{port}"})
    topic, plain = unique_topic("every10"), unique_topic("never")
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic(topic, 1, {"flush.messages": "10"}) == 0
        assert c.create_topic(plain, 1) == 0
        base = flushes(port)
        for i in range(25):
            assert c.produce(topic, 0, make_batch([b"m%d" % i]), acks=1).base_offset == i
            # the 10th and 20th message are fsynced before their produce is answered
            assert flushes(port) == base + (i + 1) // 10, f"after message {i}"
        for i in range(25):
            assert c.produce(plain, 0, make_batch([b"m%d" % i]), acks=-1).error_code == 0
        assert flushes(port) == base + 2, "the default (flush.messages = Long.MAX) fsyncs nothing"
    wait_until(lambda: recovery_point(b, topic) == 20 and recovery_point(b, plain) == 0, 10,
               message=lambda: f"recovery points {recovery_point(b, topic)}, {recovery_point(b, plain)}")


# A slow disk: the broker's interpreter loads this (sitecustomize) and makes every fsync of a
# segment file whose path holds SLOW_FSYNC_MARK take SLOW_FSYNC_S.
SLOW_FSYNC = """
import os, time
_fsync = os.fsync
def fsync(fd):
    try:
        path = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        path = ""
    if os.environ["SLOW_FSYNC_MARK"] in path and path.endswith(".log"):
        time.sleep(float(os.environ["SLOW_FSYNC_S"]))
    _fsync(fd)
os.fsync = fsync
"""


def test_flush_messages_ack_waits_for_a_slow_fsync(broker_factory, unique_topic, tmp_path):
    """The produce that reaches flush.messages is answered after its fsync, however long the fsync
    takes: a broker that answers first (and leaves the fsync to its flusher a moment later) loses
    acknowledged records in a power cut. A slow disk makes that moment long enough to see."""
    if not os.path.exists("/proc/self/fd"):
        import pytest
        pytest.skip("needs /proc/self/fd to tell a segment's fsync from others")
    hook = tmp_path / "slow_fsync"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(SLOW_FSYNC)
    topic = unique_topic("slowdisk")
    port = free_port()
    pythonpath = os.pathsep.join(p for p in (str(hook), minikafka.CHECKOUT, os.environ.get("PYTHONPATH")) if p)
    b = broker_factory(overrides={"metrics.listener": f"127.0.0.1:{port}"},
                       env={"PYTHONPATH": pythonpath, "SLOW_FSYNC_MARK": topic, "SLOW_FSYNC_S": "1.5"})
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic(topic, 1, {"flush.messages": "3"}) == 0
        base = flushes(port)
        for i in range(3):
            t0 = time.monotonic()
            assert c.produce(topic, 0, make_batch([b"m%d" % i]), acks=1).base_offset == i
            answered_after = time.monotonic() - t0
            if i < 2:
                assert flushes(port) == base, f"message {i} asked for no fsync"
        # the third message is fsynced (1.5 s on this disk) before its produce is answered
        assert flushes(port) == base + 1, "the produce reaching flush.messages was answered before its fsync"
        assert answered_after >= 1.5, f"answered {answered_after:.2f} s after it was sent, before the fsync ended"


def test_flush_ms_is_applied_by_the_log_flusher(broker_factory, unique_topic):
    # (without log.flush.interval.ms, flush.ms would default to the scheduler interval, as in Kafka)
    b = broker_factory(overrides={**FAST_CHECKPOINTS, "log.flush.scheduler.interval.ms": 50,
                                  "log.flush.interval.ms": 3_600_000})
    timed, plain = unique_topic("flushms"), unique_topic("default")
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic(timed, 1, {"flush.ms": "100"}) == 0
        assert c.create_topic(plain, 1) == 0
        for i in range(5):
            assert c.produce(timed, 0, make_batch([b"t%d" % i]), acks=1).error_code == 0
            assert c.produce(plain, 0, make_batch([b"p%d" % i]), acks=1).error_code == 0
    wait_until(lambda: recovery_point(b, timed) == 5, 10,
               message=lambda: f"recovery point {recovery_point(b, timed)}" + b.describe())
    assert recovery_point(b, plain) == 0


def test_describe_configs_reports_the_flush_keys(broker, unique_topic):
    topic = unique_topic("flushcfg")
    with RawClient.to(broker.bootstrap) as c:
        assert c.create_topic(topic, 1, {"flush.ms": "1000"}) == 0
        body = {"resources": [{"resource_type": 2, "resource_name": topic,
                               "configuration_keys": ["flush.ms", "flush.messages"]}],
                "include_synonyms": True, "include_documentation": False}
        got = {e.name: (e.value, e.config_source, [(s.name, s.value, s.source) for s in e.synonyms])
               for e in c.request(32, 4, body).results[0].configs}
        assert got == {"flush.ms": ("1000", 1, [("flush.ms", "1000", 1)]),
                       "flush.messages": ("9223372036854775807", 5,
                                          [("log.flush.interval.messages", "9223372036854775807", 5)])}
        keys = ["log.flush.interval.messages", "log.flush.interval.ms", "log.flush.scheduler.interval.ms",
                "log.flush.offset.checkpoint.interval.ms", "log.flush.start.offset.checkpoint.interval.ms",
                "log.initial.task.delay.ms"]
        body = {"resources": [{"resource_type": 4, "resource_name": "1", "configuration_keys": keys}],
                "include_synonyms": False, "include_documentation": False}
        got = {e.name: (e.value, e.config_type) for e in c.request(32, 4, body).results[0].configs}
        assert got == {"log.flush.interval.messages": ("9223372036854775807", 5),
                       "log.flush.interval.ms": (None, 5),
                       "log.flush.scheduler.interval.ms": ("9223372036854775807", 5),
                       "log.flush.offset.checkpoint.interval.ms": ("60000", 3),
                       "log.flush.start.offset.checkpoint.interval.ms": ("60000", 3)}


def test_transaction_state_follows_the_flush_settings(broker_factory, unique_topic):
    """As in Kafka, a transaction's records (__transaction_state's included) are not fsynced
    by default; with log.flush.interval.messages=1 the commit point is (before EndTxn's answer:
    tests/unit/test_txn_state_machine.py), as every other append."""
    for every_message, expect_fsyncs in ((None, False), (1, True)):
        port = free_port()
        overrides = {"metrics.listener": f"127.0.0.1:{port}"}
        if every_message:
            overrides["log.flush.interval.messages"] = every_message
        b = broker_factory(overrides=overrides)
        topic = unique_topic("txnflush")
        with RawClient.to(b.bootstrap) as c:
            assert c.create_topic(topic, 1) == 0
            r = c.init_producer_id("flush-tx")
            pid, epoch = r.producer_id, r.producer_epoch
            base = flushes(port)
            assert c.add_partitions_to_txn("flush-tx", pid, epoch, topic, [0]) == {0: 0}
            assert c.produce(topic, 0, make_batch([b"v"], producer_id=pid, producer_epoch=epoch, base_sequence=0,
                                                  transactional=True), transactional_id="flush-tx").error_code == 0
            assert c.end_txn("flush-tx", pid, epoch, True) == 0
            assert (flushes(port) > base) == expect_fsyncs, f"log.flush.interval.messages={every_message}"
        b.close()
