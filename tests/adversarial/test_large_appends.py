"""Large appends (issue 32: no request holds the event loop): a client's append of at least
LARGE_APPEND_BYTES writes its bytes to the segment in a worker thread, under the partition's
append lock. While it is being written, nothing of it shows, other clients are served, appends
to the partition wait their turn in order, and whatever else changes the log (a marker, the
topic's deletion, a move to another log dir) lets it end first; a kill -9 between the write and
the offsets' advance loses nothing acknowledged.

A gated disk makes "while it is being written" last as long as a test needs: the broker's
interpreter loads a sitecustomize whose writes of a large append to a segment of the test's topic
wait until the test opens the gate (a file), and note that they started (another file)."""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

import minikafka
from harness import unique_name
from minikafka.broker.replica_manager import LARGE_APPEND_BYTES
from minikafka.protocol import records as rec
from minikafka.testing import wait_until
from rawclient import RawClient, make_batch

RECORDS = 16
VALUE = LARGE_APPEND_BYTES // RECORDS + 1024  # a batch just over the threshold
TOPIC_CONFIGS = {"max.message.bytes": str(8 << 20)}

GATED_WRITES = """
import os, threading, time
_GATE_DIR = os.environ["GATED_WRITE_DIR"]
_MARK = os.environ["GATED_WRITE_MARK"]
_LARGE = int(os.environ["GATED_WRITE_BYTES"])
_lock = threading.Lock()
_count = [0, 0]  # writes started, writes in progress

def _gated(size, fd):
    if size < _LARGE:
        return None
    try:
        path = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
    if _MARK not in path or not path.endswith(".log"):
        return None
    with _lock:
        _count[0] += 1
        _count[1] += 1
        n = _count[0]
        if _count[1] > 1:
            open(os.path.join(_GATE_DIR, "overlap"), "w").close()
    open(os.path.join(_GATE_DIR, f"started-{n}"), "w").close()
    while not (os.path.exists(os.path.join(_GATE_DIR, f"open-{n}"))
               or os.path.exists(os.path.join(_GATE_DIR, "open-all"))):
        time.sleep(0.005)
    return n

def _done(n):
    if n is not None:
        with _lock:
            _count[1] -= 1

_writev, _write = os.writev, os.write

def writev(fd, buffers):
    buffers = list(buffers)
    n = _gated(sum(len(memoryview(b).cast("B")) for b in buffers), fd)
    try:
        return _writev(fd, buffers)
    finally:
        _done(n)

def write(fd, data):
    n = _gated(len(memoryview(data).cast("B")), fd)
    try:
        return _write(fd, data)
    finally:
        _done(n)

os.writev, os.write = writev, write
"""


class Gate:
    """The gated disk of one broker: ``started(n)`` once the n-th large write to the topic's
    segments began (and waits), ``open(n)`` lets it go on."""

    def __init__(self, path: Path):
        self.path = path

    def started(self, n: int) -> bool:
        return (self.path / f"started-{n}").exists()

    def wait_started(self, n: int) -> None:
        wait_until(lambda: self.started(n), 30, message=f"large write {n} never started")

    def open(self, n: int) -> None:
        (self.path / f"open-{n}").touch()

    def open_all(self) -> None:
        """No write waits from now on."""
        (self.path / "open-all").touch()

    @property
    def overlapped(self) -> bool:
        return (self.path / "overlap").exists()


@pytest.fixture
def gated(broker_factory, tmp_path):
    """``gated(**overrides)`` -> (broker, topic, Gate): a broker whose large writes to ``topic``'s
    segments wait at the gate; the topic exists (one partition)."""
    if not os.path.exists("/proc/self/fd"):
        pytest.skip("needs /proc/self/fd to tell a segment's write from others")

    def make(overrides: dict | None = None, topic_configs: dict | None = None):
        hook = tmp_path / "gated_writes"
        hook.mkdir()
        (hook / "sitecustomize.py").write_text(GATED_WRITES)
        gate_dir = tmp_path / "gate"
        gate_dir.mkdir()
        topic = unique_name("large")
        pythonpath = os.pathsep.join(p for p in (str(hook), minikafka.CHECKOUT, os.environ.get("PYTHONPATH")) if p)
        b = broker_factory(overrides=overrides, name="gated",
                           env={"PYTHONPATH": pythonpath, "GATED_WRITE_DIR": str(gate_dir),
                                "GATED_WRITE_MARK": topic, "GATED_WRITE_BYTES": str(LARGE_APPEND_BYTES)})
        with RawClient.to(b.bootstrap) as c:
            assert c.create_topic(topic, 1, dict(TOPIC_CONFIGS, **(topic_configs or {}))) == 0
        return b, topic, Gate(gate_dir)
    return make


def large_batch(tag: bytes, producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
                transactional: bool = False) -> bytes:
    values = [tag + b"-%02d-" % i + bytes(VALUE) for i in range(RECORDS)]
    return make_batch(values, producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=base_sequence,
                      transactional=transactional)


class Call(threading.Thread):
    """A request on a connection of its own, in a thread: ``result`` once ``done``."""

    def __init__(self, bootstrap: str, fn):
        super().__init__(daemon=True)
        self.bootstrap, self.fn = bootstrap, fn
        self.result = self.error = None
        self.start()

    def run(self):
        try:
            with RawClient.to(self.bootstrap, timeout=60) as c:
                self.result = self.fn(c)
        except BaseException as e:  # (the test reads it)
            self.error = e

    @property
    def done(self) -> bool:
        return not self.is_alive()

    def get(self, timeout: float = 30):
        self.join(timeout)
        assert not self.is_alive(), "no answer"
        if self.error is not None:
            raise self.error
        return self.result


def produce(topic: str, batch: bytes, **kw):
    return lambda c: c.produce(topic, 0, batch, **kw)


def values_at(c: RawClient, topic: str) -> list[tuple[int, bytes]]:
    _, batches = c.fetch_all(topic, 0)
    return [(r.offset, r.value[:8]) for _, records in batches for r in records]


def test_a_large_append_shows_nothing_until_written_and_others_are_served(gated):
    """While a large append's bytes are being written: fetches and ListOffsets see the log
    without it, a produce to another topic is answered at once (the event loop is free), a small
    produce to the same partition waits its turn; afterwards the offsets are contiguous, in the
    order the appends arrived."""
    b, topic, gate = gated()
    other = unique_name("bystander")
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic(other, 1) == 0
        assert c.produce(topic, 0, make_batch([b"first"])).base_offset == 0
        big = Call(b.bootstrap, produce(topic, large_batch(b"big")))
        gate.wait_started(1)
        small = Call(b.bootstrap, produce(topic, make_batch([b"after"])))
        for _ in range(5):
            t0 = time.monotonic()
            assert c.produce(other, 0, make_batch([b"x"])).error_code == 0
            assert time.monotonic() - t0 < 5, "the event loop is held by the write"
            p = c.fetch(topic, 0, 0)
            assert p.error_code == 0 and p.high_watermark == 1, p
            assert [h.last_offset for _, h in rec.iter_batch_headers(p.records)] == [0]
            assert c.fetch(topic, 0, 1).records in (None, b""), "a fetch past the end sees the write"
            assert c.list_offset(topic, 0) == 1
        assert not big.done and not small.done, "answered before the write ended"
        gate.open(1)
        r_big, r_small = big.get(), small.get()
        assert (r_big.error_code, r_big.base_offset) == (0, 1), r_big
        assert (r_small.error_code, r_small.base_offset) == (0, 1 + RECORDS), r_small
        got = values_at(c, topic)
    assert [o for o, _ in got] == list(range(RECORDS + 2))
    assert [v for _, v in got] == [b"first", *[b"big-%02d-\0" % i for i in range(RECORDS)], b"after"]
    assert b.running, b.describe()


def test_two_large_appends_to_one_partition_are_written_one_after_the_other(gated):
    b, topic, gate = gated()
    first = Call(b.bootstrap, produce(topic, large_batch(b"one")))
    gate.wait_started(1)
    second = Call(b.bootstrap, produce(topic, large_batch(b"two")))
    with RawClient.to(b.bootstrap) as c:
        # the second waits for the first: a small produce behind it is queued too, and meanwhile
        # the second's write has not begun
        probe = Call(b.bootstrap, produce(topic, make_batch([b"probe"])))
        for _ in range(3):
            assert c.list_offset(topic, 0) == 0
        assert not gate.started(2) and not second.done and not probe.done
        gate.open(1)
        gate.wait_started(2)
        gate.open(2)
        r1, r2, r3 = first.get(), second.get(), probe.get()
        got = values_at(c, topic)
    assert not gate.overlapped, "two large writes to one segment at once"
    assert [o for o, _ in got] == list(range(2 * RECORDS + 1)), "offsets not contiguous"
    assert [r.error_code for r in (r1, r2, r3)] == [0, 0, 0]
    # each answered with where it is; the first before both (the other two queued behind it, in
    # whichever order they arrived)
    assert r1.base_offset == 0 and [v[:3] for _, v in got[:RECORDS]] == [b"one"] * RECORDS
    assert [v[:3] for _, v in got[r2.base_offset:r2.base_offset + RECORDS]] == [b"two"] * RECORDS
    assert got[r3.base_offset][1][:3] == b"pro"


def test_an_idempotent_retry_arriving_during_the_write_is_a_duplicate(gated):
    """The retry of a large idempotent batch, sent while the first copy is being written, gets
    the first copy's offsets (Kafka's DUPLICATE answer: the same base offset, no error); the log
    holds one copy."""
    b, topic, gate = gated()
    with RawClient.to(b.bootstrap) as c:
        pid = c.init_producer_id()
        assert pid.error_code == 0
    batch = large_batch(b"idem", pid.producer_id, pid.producer_epoch, 0)
    first = Call(b.bootstrap, produce(topic, batch))
    gate.wait_started(1)
    retry = Call(b.bootstrap, produce(topic, batch))
    gate.open(1)
    r1, r2 = first.get(), retry.get()
    assert (r1.error_code, r1.base_offset) == (0, 0), r1
    assert (r2.error_code, r2.base_offset) == (0, 0), r2
    assert not gate.started(2), "the retry was written again"
    with RawClient.to(b.bootstrap) as c:
        assert [o for o, _ in values_at(c, topic)] == list(range(RECORDS))
        nxt = c.produce(topic, 0, make_batch([b"next"], producer_id=pid.producer_id,
                                             producer_epoch=pid.producer_epoch, base_sequence=RECORDS))
        assert (nxt.error_code, nxt.base_offset) == (0, RECORDS), nxt


def test_a_marker_during_a_large_transactional_write_comes_after_it(gated):
    """Another producer's transaction ends while a large transactional batch is being written to
    the same partition: the marker is written after the batch (the log changes in order), and
    read_committed readers see each transaction as it ended."""
    b, topic, gate = gated()
    with RawClient.to(b.bootstrap) as c:
        small = c.init_producer_id("txn-small")
        large = c.init_producer_id("txn-large")
        for tid, p in (("txn-small", small), ("txn-large", large)):
            assert c.add_partitions_to_txn(tid, p.producer_id, p.producer_epoch, topic, [0]) == {0: 0}
        assert c.produce(topic, 0, make_batch([b"small"], producer_id=small.producer_id,
                                              producer_epoch=small.producer_epoch, base_sequence=0,
                                              transactional=True), transactional_id="txn-small").error_code == 0
        big = Call(b.bootstrap, produce(topic, large_batch(b"txn", large.producer_id, large.producer_epoch, 0,
                                                             transactional=True), transactional_id="txn-large"))
        gate.wait_started(1)
        ended = Call(b.bootstrap, lambda c2: c2.end_txn("txn-small", small.producer_id, small.producer_epoch, True))
        assert ended.get() == 0  # answered before the marker is written, as Kafka
        gate.open(1)
        assert big.get().error_code == 0
        assert c.end_txn("txn-large", large.producer_id, large.producer_epoch, True) == 0
        wait_until(lambda: c.fetch(topic, 0, 0, isolation=1).last_stable_offset == RECORDS + 3, 10)
        read = c.read_partition(topic, 0, isolation=1)
        assert [v[:4] for _, v, _ in read.records] == [b"smal"] + [b"txn-"] * RECORDS
        kinds = [(h.base_offset, bool(h.attributes & rec.CONTROL_FLAG)) for h, _ in read.batches]
        # small (0), the large batch (1..16), the small transaction's marker (17), the large one's (18)
        assert kinds == [(0, False), (1, False), (1 + RECORDS, True), (2 + RECORDS, True)], kinds
    assert b.running, b.describe()


def test_the_topic_deleted_during_a_large_write(gated):
    """DeleteTopics while a large append is being written: the deletion waits for the write's
    end, the append is answered (written before the topic went, or an error), the broker stays up
    and the topic can be made again, empty."""
    b, topic, gate = gated()
    big = Call(b.bootstrap, produce(topic, large_batch(b"gone")))
    gate.wait_started(1)
    deleted = Call(b.bootstrap, lambda c: c.request(20, 4, {"topic_names": [topic], "timeout_ms": 10000}))
    gate.open(1)
    assert deleted.get().responses[0].error_code == 0
    assert big.get().error_code in (0, 3, 6, 56), "no clean answer"
    assert b.running, b.describe()
    with RawClient.to(b.bootstrap) as c:
        wait_until(lambda: c.create_topic(topic, 1, TOPIC_CONFIGS) == 0, 10)
        r = c.produce(topic, 0, make_batch([b"new"]))
        assert (r.error_code, r.base_offset) == (0, 0), r


def test_a_log_dir_move_during_a_large_write_keeps_it(gated, tmp_path):
    """AlterReplicaLogDirs while a large append is being written: the swap waits for the write,
    and the moved partition holds every acknowledged record once."""
    dirs = [tmp_path / "dir-a", tmp_path / "dir-b"]
    b, topic, gate = gated({"log.dirs": ",".join(map(str, dirs))})
    with RawClient.to(b.bootstrap) as c:
        assert c.produce(topic, 0, make_batch([b"first"])).base_offset == 0
        src = next(d for d in dirs if (d / f"{topic}-0").exists())
        dst = next(d for d in dirs if d != src)
        big = Call(b.bootstrap, produce(topic, large_batch(b"move")))
        gate.wait_started(1)
        r = c.request(34, 2, {"dirs": [{"path": str(dst), "topics": [{"name": topic, "partitions": [0]}]}]})
        assert r.results[0].partitions[0].error_code == 0
        gate.open_all()  # (the copy's writes to the future replica too)
        assert (big.get().error_code, big.get().base_offset) == (0, 1)
        after = c.produce(topic, 0, make_batch([b"after"]))
        assert (after.error_code, after.base_offset) == (0, 1 + RECORDS)
        wait_until(lambda: (dst / f"{topic}-0").exists() and not (src / f"{topic}-0").exists(), 30,
                   message=lambda: b.describe())
        got = values_at(c, topic)
    assert [o for o, _ in got] == list(range(RECORDS + 2))
    assert got[0][1] == b"first" and got[-1][1] == b"after"
    assert b.running, b.describe()


def test_a_crash_between_the_write_and_the_offsets_loses_nothing_acknowledged(broker_factory):
    """kill -9 (MINIKAFKA_FAULT=append.after_write) after a large idempotent append's bytes are in
    the segment and before its offsets are the log's: every acknowledged record is there after the
    restart, the unanswered batch is there whole or not at all, and its retry is answered with the
    offsets it has (a duplicate) or appended once."""
    b = broker_factory(env={"MINIKAFKA_FAULT": "append.after_write"})
    topic = unique_name("crash")
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic(topic, 1, TOPIC_CONFIGS) == 0
        pid = c.init_producer_id()
        acked = [c.produce(topic, 0, make_batch([b"acked-%d" % i], producer_id=pid.producer_id,
                                                producer_epoch=pid.producer_epoch, base_sequence=i))
                 for i in range(3)]
        assert [(r.error_code, r.base_offset) for r in acked] == [(0, 0), (0, 1), (0, 2)]
    batch = large_batch(b"crash", pid.producer_id, pid.producer_epoch, 3)
    with pytest.raises(Exception):
        with RawClient.to(b.bootstrap, timeout=30) as c:
            c.produce(topic, 0, batch)
    wait_until(lambda: not b.running, 15, message="the broker did not exit at append.after_write")
    b.disarm_fault() if hasattr(b, "disarm_fault") else b.extra_env.pop("MINIKAFKA_FAULT", None)
    b.start()
    with RawClient.to(b.bootstrap) as c:
        got = values_at(c, topic)
        assert got[:3] == [(0, b"acked-0"), (1, b"acked-1"), (2, b"acked-2")]
        assert len(got) in (3, 3 + RECORDS), got
        retry = c.produce(topic, 0, batch)
        assert (retry.error_code, retry.base_offset) == (0, 3), retry
        got = values_at(c, topic)
        assert [o for o, _ in got] == list(range(3 + RECORDS))
        assert all(v.startswith(b"crash-") for _, v in got[3:])


def test_a_large_batch_checked_off_the_event_loop_gets_kafkas_refusals(broker_factory):
    """The CRC of a batch over CHECK_IN_STEP_BYTES is checked in a step of its own: a corrupt
    one is CORRUPT_MESSAGE, one over max.message.bytes MESSAGE_TOO_LARGE, as for a small one."""
    from minikafka.storage.validator import CHECK_IN_STEP_BYTES
    b = broker_factory()
    topic = unique_name("checked")
    values = [bytes([i]) * (CHECK_IN_STEP_BYTES // 8) for i in range(10)]
    good = make_batch(values)
    assert CHECK_IN_STEP_BYTES < len(good) < (8 << 20)
    corrupt = bytearray(good)
    corrupt[-1] ^= 1
    too_large = make_batch(values * 2)
    with RawClient.to(b.bootstrap, timeout=60) as c:
        assert c.create_topic(topic, 1, TOPIC_CONFIGS) == 0
        assert c.produce(topic, 0, bytes(corrupt)).error_code == 2  # CORRUPT_MESSAGE
        assert c.produce(topic, 0, too_large).error_code == 10      # MESSAGE_TOO_LARGE
        r = c.produce(topic, 0, good)
        assert (r.error_code, r.base_offset) == (0, 0), r
        assert [o for o, _ in values_at(c, topic)] == list(range(len(values)))
