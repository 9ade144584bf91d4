"""Partitions moved between log dirs (AlterReplicaLogDirs) while clients produce and consume.

A broker with two ``log.dirs``; an idempotent confluent-kafka producer sends records without
pause and a consumer reads them as they come while the partition moves. The move is slowed by
the alter-log-dirs throttle where a test needs to see it under way: DescribeLogDirs then lists
the future replica (``is_future_key``, its lag; at 50 kB/s, Kafka's rate over 10 s windows lets
one 1 MiB chunk through and then waits). After the move, and after a kill -9 at any step
of it (while copying, and at each step of the swap, by MINIKAFKA_FAULT), exactly one copy of the
partition is on disk, in the dir the move ended in, and every acknowledged record is read back
exactly once, in order. The partition holds a few MB in 256 kB segments: the 1 GB campaign is
tools/log_dir_move_campaign.py."""
from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from harness import consume, now_ms, wait_until
from minikafka.protocol.errors import ErrorCode
from rawclient import RawClient, make_batch

THROTTLE = "replica.alter.log.dirs.io.max.bytes.per.second"
SEGMENT = 256 * 1024


# ------------------------------------------------------------------ helpers
def two_dir_broker(broker_factory, tmp_path: Path, env: dict | None = None, name: str = "mover"):
    dirs = [tmp_path / name / "dir-a", tmp_path / name / "dir-b"]
    b = broker_factory(overrides={"log.dirs": ",".join(map(str, dirs)), "log.segment.bytes": SEGMENT,
                                  "num.partitions": 1}, env=env, name=name)
    return b, [str(d) for d in dirs]


def describe(c: RawClient, topic: str) -> dict[str, list[tuple[int, int, int, bool]]]:
    """{log dir: [(partition, size, offset lag, is future)]} of ``topic``'s partitions."""
    r = c.request(35, 4, {"topics": [{"topic": topic, "partitions": [0]}]})
    return {d.log_dir: [(p.partition_index, p.partition_size, p.offset_lag, p.is_future_key)
                        for t in d.topics for p in t.partitions] for d in r.results}


def alter_dir(c: RawClient, topic: str, path: str) -> int:
    r = c.request(34, 2, {"dirs": [{"path": path, "topics": [{"name": topic, "partitions": [0]}]}]})
    return r.results[0].partitions[0].error_code


def set_throttle(c: RawClient, rate: int | None) -> None:
    op = {"name": THROTTLE, "config_operation": 0 if rate is not None else 1,
          "value": None if rate is None else str(rate)}
    r = c.request(44, 1, {"resources": [{"resource_type": 4, "resource_name": "1", "configs": [op]}],
                          "validate_only": False})
    assert r.responses[0].error_code == 0, r


def copies_on_disk(dirs: list[str], topic: str) -> dict[str, list[str]]:
    """Each log dir's entries that belong to the partition (its dir, a future copy, a -delete)."""
    return {d: sorted(p.name for p in Path(d).iterdir() if p.name.startswith(f"{topic}-0")) for d in dirs}


def where(c: RawClient, topic: str) -> str:
    (d,) = [d for d, parts in describe(c, topic).items() if parts and not parts[0][3]]
    return d


def moved_to(c: RawClient, topic: str, target: str) -> bool:
    """The partition is in ``target``, with no future replica anywhere."""
    placed = describe(c, topic)
    return placed[target] and not placed[target][0][3] and all(not v for d, v in placed.items() if d != target)


class Load:
    """An idempotent confluent-kafka producer sending records 0, 1, ... of ``tag`` (``record``)
    to partition 0 until stopped, and a consumer reading them as they come."""

    def __init__(self, bootstrap: str, topic: str, tag: str):
        from confluent_kafka import Consumer, Producer
        self.topic, self.tag, self.ts = topic, tag, now_ms()
        self.acked: dict[int, tuple[int, int]] = {}
        self.errors: list[str] = []
        self.consumed: list[tuple] = []
        self.sent = 0
        self._stop = threading.Event()
        self.producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                                  "linger.ms": 5, "batch.size": 65536, "message.timeout.ms": 120000,
                                  "retry.backoff.ms": 50})
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader",
                                  "enable.auto.commit": False, "fetch.wait.max.ms": 50})
        self.threads = [threading.Thread(target=self._produce, daemon=True),
                        threading.Thread(target=self._consume, daemon=True)]
        for t in self.threads:
            t.start()

    def _produce(self) -> None:
        def on_delivery(err, msg):
            if err is not None:
                self.errors.append(str(err))
            else:
                self.acked[value_index(msg.value())] = (msg.partition(), msg.offset())
        while not self._stop.is_set():
            for _ in range(50):
                while True:
                    try:
                        self.producer.produce(self.topic, value=record(self.tag, self.sent), key=b"k%d" % self.sent,
                                              on_delivery=on_delivery)
                        break
                    except BufferError:
                        self.producer.poll(0.05)
                self.sent += 1
            self.producer.poll(0.005)
        self.producer.flush(120)

    def _consume(self) -> None:
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition
        self.consumer.assign([TopicPartition(self.topic, 0, OFFSET_BEGINNING)])
        while not self._stop.is_set():
            for m in self.consumer.consume(500, 0.1):
                if m.error() is None:
                    self.consumed.append((m.partition(), m.offset(), m.key(), m.value(), m.headers() or [], 0))
        self.consumer.close()

    def acked_bytes(self) -> int:
        return len(self.acked) * RECORD_BYTES

    def stop(self) -> None:
        self._stop.set()
        for t in self.threads:
            t.join(150)


RECORD_BYTES = 1000


def record(tag: str, i: int) -> bytes:
    head = f"{tag}:{i}:".encode()
    return head + b"x" * (RECORD_BYTES - len(head))


def value_index(value: bytes) -> int:
    return int(value.split(b":", 2)[1])


def check_every_ack(b, topic: str, load: Load) -> None:
    """Every acknowledged record is read back exactly once, in the order sent, byte for byte, at
    its acknowledged offset."""
    records = consume("confluent-kafka", b.bootstrap, topic, 1, load.sent, timeout=60)
    seen = [value_index(r[3]) for r in records]
    assert len(seen) == len(set(seen)), "a record read twice" + b.describe()
    assert seen == sorted(seen), "records out of order" + b.describe()
    missing = sorted(set(load.acked) - set(seen))
    assert not missing, f"{len(missing)} acknowledged records lost, first {missing[:5]}" + b.describe()
    wrong = [i for r in records for i in [value_index(r[3])]
             if i in load.acked and (load.acked[i] != (r[0], r[1]) or r[2] != b"k%d" % i
                                     or r[3] != record(load.tag, i))]
    assert not wrong, f"records not as acknowledged: {wrong[:5]}" + b.describe()


# ------------------------------------------------------------------ tests
def test_move_under_load_shows_the_future_replica_and_keeps_every_record(broker_factory, tmp_path):
    b, dirs = two_dir_broker(broker_factory, tmp_path)
    topic = "moving"
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic(topic, 1) == 0
        source = where(c, topic)
        target = next(d for d in dirs if d != source)
        load = Load(b.bootstrap, topic, "m")
        try:
            wait_until(lambda: load.acked_bytes() >= 3 << 20, 60, message="3 MB acknowledged")
            set_throttle(c, 50 << 10)
            assert alter_dir(c, topic, target) == 0
            # the copy under way, throttled: the future replica in the target dir, behind
            wait_until(lambda: any(p[3] and p[1] > 0 for p in describe(c, topic)[target]), 30,
                       message=lambda: f"a future replica in {target}: {describe(c, topic)}")
            future = describe(c, topic)[target][0]
            assert future[0] == 0 and future[2] > 0, describe(c, topic)
            assert describe(c, topic)[source][0][3] is False  # the current replica still serves
            assert alter_dir(c, topic, target) == 0           # the same move again: nothing changes
            set_throttle(c, None)
            wait_until(lambda: moved_to(c, topic, target), 60,
                       message=lambda: f"moved to {target}: {describe(c, topic)}")
            at_swap = len(load.acked)
            wait_until(lambda: len(load.acked) >= at_swap + 2000, 60, message="records after the move")
            # the consumer reads on through the move
            wait_until(lambda: len(load.consumed) >= at_swap + 2000, 60,
                       message=lambda: f"{len(load.consumed)} records consumed, {at_swap + 2000} wanted")
        finally:
            load.stop()
        assert copies_on_disk(dirs, topic) == {source: [], target: [f"{topic}-0"]}
        consumed = [value_index(r[3]) for r in load.consumed]
        assert consumed == list(range(len(consumed))), "the live consumer skipped or repeated records"
    check_every_ack(b, topic, load)
    b.restart()
    with RawClient.to(b.bootstrap) as c:
        assert where(c, topic) == target
        assert c.list_offset(topic, 0) == max(o for _, o in load.acked.values()) + 1
    check_every_ack(b, topic, load)


# (each step of the swap, and a clean restart mid-copy, in tests/unit/test_storage_log_dir_moves.py)
@pytest.mark.parametrize("crash", ["copying", "logdir.before_commit", "logdir.after_commit",
                                   "logdir.after_future_rename"])
def test_crash_during_a_move_leaves_exactly_one_copy(broker_factory, tmp_path, crash):
    fault = crash.startswith("logdir.")
    b, dirs = two_dir_broker(broker_factory, tmp_path, env={"MINIKAFKA_FAULT": crash} if fault else None)
    topic = "crash"
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic(topic, 1) == 0
        source = where(c, topic)
    target = next(d for d in dirs if d != source)
    load = Load(b.bootstrap, topic, "c")
    try:
        wait_until(lambda: load.acked_bytes() >= 1 << 20, 60, message="1 MB acknowledged")
        with RawClient.to(b.bootstrap) as c:
            if not fault:
                set_throttle(c, 50 << 10)
            assert alter_dir(c, topic, target) == 0
            if fault:
                assert b.wait_exit(60) == 86, b.describe()
                b.restart()
            else:
                wait_until(lambda: any(p[3] and p[1] > 0 for p in describe(c, topic)[target]), 30,
                           message=lambda: f"a future replica in {target}: {describe(c, topic)}")
                b.restart(kill=True)
        on_disk = copies_on_disk(dirs, topic)
        assert not [n for names in on_disk.values() for n in names if n.endswith("-delete")], on_disk
        complete = [d for d, names in on_disk.items() if f"{topic}-0" in names]
        assert len(complete) == 1, on_disk
        with RawClient.to(b.bootstrap) as c:
            if crash in ("copying", "logdir.before_commit"):
                # not committed: the partition is where it was; its copy goes on
                assert complete == [source], on_disk
                if not fault:
                    set_throttle(c, None)
            else:
                assert complete == [target] and on_disk[source] == [], on_disk
            wait_until(lambda: moved_to(c, topic, target), 60, message=lambda: f"moved: {describe(c, topic)}")
        acked_before = len(load.acked)
        wait_until(lambda: len(load.acked) >= acked_before + 300, 90, message="records after the restart")
    finally:
        load.stop()
    assert copies_on_disk(dirs, topic) == {source: [], target: [f"{topic}-0"]}
    check_every_ack(b, topic, load)


def test_topic_deleted_and_records_deleted_during_a_move(broker_factory, tmp_path):
    b, dirs = two_dir_broker(broker_factory, tmp_path)
    with RawClient.to(b.bootstrap) as c:
        for topic in ("gone", "trimmed"):
            assert c.create_topic(topic, 1) == 0
            for i in range(40):
                assert c.produce(topic, 0, make_batch([b"x" * 20000 for _ in range(5)])).error_code == 0
        set_throttle(c, 50 << 10)
        targets = {}
        for topic in ("gone", "trimmed"):
            targets[topic] = next(d for d in dirs if d != where(c, topic))
            assert alter_dir(c, topic, targets[topic]) == 0
        wait_until(lambda: all(any(p[3] for p in describe(c, t)[targets[t]]) for t in targets), 30,
                   message="both copies under way")
        # a deleted topic takes its copy with it
        r = c.request(20, 6, {"topics": [{"name": "gone", "topic_id": None}], "timeout_ms": 10000})
        assert r.responses[0].error_code == 0
        wait_until(lambda: all(not names for names in copies_on_disk(dirs, "gone").values()), 30,
                   message=lambda: f"no copy of the deleted topic left: {copies_on_disk(dirs, 'gone')}")
        # records deleted from the current replica meanwhile (up to inside a batch): the moved one
        # starts where it did
        assert c.delete_records("trimmed", 0, 152) == (0, 152)
        produce_more = c.produce("trimmed", 0, make_batch([b"after"]))
        assert produce_more.error_code == 0
        set_throttle(c, None)
        wait_until(lambda: moved_to(c, "trimmed", targets["trimmed"]), 60, message="moved")
        assert c.list_offset("trimmed", 0, timestamp=-2) == 152
        assert c.list_offset("trimmed", 0) == 201
        assert c.fetch("trimmed", 0, 151).error_code == ErrorCode.OFFSET_OUT_OF_RANGE
        _, batches = c.fetch_all("trimmed", 0, start=152)
        offsets = [r.offset for _, records in batches for r in records if r.offset >= 152]
        assert offsets == list(range(152, 201)) and batches[-1][1][-1].value == b"after"
    b.restart()
    with RawClient.to(b.bootstrap) as c:
        assert where(c, "trimmed") == targets["trimmed"]
        assert c.list_offset("trimmed", 0, timestamp=-2) == 152
