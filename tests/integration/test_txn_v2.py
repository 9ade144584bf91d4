"""Transactions V2 (KIP-890 part 2) with raw requests, as a Java 4.x client sends them:
InitProducerId v5, Produce v12 without AddPartitionsToTxn (the broker adds the partition),
EndTxn v5 (the epoch bumped on every commit and abort, markers carrying the new epoch).

- The three failure modes V2 closes, each a late request refused with Kafka 4.1's error
  (recorded in tests/conformance/golden/txn_v2/late/) and nothing extra visible to
  read_committed.
- Crash recovery at every MINIKAFKA_FAULT point of a V2 commit, as test_transactions does
  for V1: the bumped epoch, the markers' epoch and the retry detection survive."""
from __future__ import annotations

import pytest

from minikafka.testing import FAULT_POINTS
from harness import wait_transaction_done, wait_until
from rawclient import RawClient, make_batch

from test_transactions import ABORT, COMMIT, create_topics, describe_txn, raw_partition

INVALID_PRODUCER_EPOCH, PRODUCER_FENCED = 47, 90


class V2Producer:
    """One transactional id driven the V2 way over one connection."""

    def __init__(self, c: RawClient, tid: str, topic: str):
        self.c, self.tid, self.topic = c, tid, topic
        wait_until(lambda: c.request(10, 3, {"key": tid, "key_type": 1}).error_code == 0, 15)
        r = c.request(22, 5, {"transactional_id": tid, "transaction_timeout_ms": 60000, "producer_id": -1,
                              "producer_epoch": -1})
        assert r.error_code == 0, r
        self.pid, self.epoch = r.producer_id, r.producer_epoch

    def produce(self, value: bytes, seq: int, partition: int = 0, epoch: int | None = None) -> int:
        """Produce v12 of one transactional batch; the partition's error code."""
        batch = make_batch([value], producer_id=self.pid, producer_epoch=self.epoch if epoch is None else epoch,
                           base_sequence=seq, transactional=True)
        return self.c.produce(self.topic, partition, batch, version=12, transactional_id=self.tid).error_code

    def end(self, commit: bool, epoch: int | None = None):
        """EndTxn v5; on success the producer goes on with the epoch it answers."""
        r = self.c.request(26, 5, {"transactional_id": self.tid, "producer_id": self.pid,
                                   "producer_epoch": self.epoch if epoch is None else epoch, "committed": commit})
        if r.error_code == 0 and epoch is None:
            assert (r.producer_id, r.producer_epoch) == (self.pid, self.epoch + 1), r   # the bump
            self.epoch = r.producer_epoch
        return r


def values(bootstrap: str, topic: str, partition: int = 0, isolation: int = 1) -> list[bytes]:
    with RawClient.to(bootstrap) as c:
        return [value for _, value, _ in c.read_partition(topic, partition, isolation=isolation).records]


def markers(bootstrap: str, topic: str, partition: int = 0) -> list[tuple[int, int]]:
    """(control type, producer epoch) of every marker of a partition, in log order."""
    from minikafka.protocol import records as rec
    return [(rec.parse_control_record(records[0])[0], h.producer_epoch)
            for h, records in raw_partition(bootstrap, topic, partition) if h.is_control]


def last_stable_offset(bootstrap: str, topic: str) -> tuple[int, int]:
    with RawClient.to(bootstrap) as c:
        p = c.fetch(topic, 0, 0, isolation=1)
    return p.last_stable_offset, p.high_watermark


# ---------------------------------------------------------------- the three failure modes

def test_late_produce_after_abort_is_refused(broker, unique_topic):
    """Failure mode 1: a produce of a transaction that was aborted, delayed until after the
    abort, must not land in the log as a new open transaction (under V1 it would: the
    partition accepts the old epoch and the LSO stays behind it until the timeout)."""
    topic = unique_topic("late1")
    create_topics(broker.bootstrap, [topic], 1)
    with RawClient.to(broker.bootstrap) as c:
        p = V2Producer(c, unique_topic("late1-tx"), topic)
        old = p.epoch
        assert p.produce(b"in", 0) == 0
        assert p.end(commit=False).error_code == 0
        wait_transaction_done(broker.bootstrap, p.tid, states=("CompleteAbort",))
        assert p.produce(b"late", 1, epoch=old) == INVALID_PRODUCER_EPOCH
        assert describe_txn(broker.bootstrap, p.tid).transaction_state == "CompleteAbort"  # nothing opened
    assert values(broker.bootstrap, topic) == []
    assert values(broker.bootstrap, topic, isolation=0) == [b"in"]
    assert last_stable_offset(broker.bootstrap, topic) == (2, 2)   # the record and its ABORT marker
    assert markers(broker.bootstrap, topic) == [(ABORT, old + 1)]


def test_late_produce_does_not_join_the_next_transaction(broker, unique_topic):
    """Failure mode 2: a delayed produce of the previous transaction, arriving while the next
    one is open, must not become part of it (under V1 the same epoch makes it a member)."""
    topic = unique_topic("late2")
    create_topics(broker.bootstrap, [topic], 1)
    with RawClient.to(broker.bootstrap) as c:
        p = V2Producer(c, unique_topic("late2-tx"), topic)
        old = p.epoch
        assert p.produce(b"t1-a", 0) == 0
        assert p.end(commit=True).error_code == 0
        wait_transaction_done(broker.bootstrap, p.tid)
        assert p.produce(b"t2-a", 0) == 0   # the next transaction, at the bumped epoch
        assert p.produce(b"t1-late", 1, epoch=old) == INVALID_PRODUCER_EPOCH
        assert p.end(commit=True).error_code == 0
        wait_transaction_done(broker.bootstrap, p.tid)
    assert values(broker.bootstrap, topic) == [b"t1-a", b"t2-a"]
    assert values(broker.bootstrap, topic, isolation=0) == [b"t1-a", b"t2-a"]
    assert markers(broker.bootstrap, topic) == [(COMMIT, old + 1), (COMMIT, old + 2)]


def test_late_end_txn_does_not_complete_the_next_transaction(broker, unique_topic):
    """Failure mode 3: a delayed EndTxn(commit) of the previous transaction, arriving while
    the next one is open, must not commit it: PRODUCER_FENCED, the transaction stays open,
    and when the producer aborts it nothing of it is visible."""
    topic = unique_topic("late3")
    create_topics(broker.bootstrap, [topic], 1)
    with RawClient.to(broker.bootstrap) as c:
        p = V2Producer(c, unique_topic("late3-tx"), topic)
        old = p.epoch
        assert p.produce(b"t1", 0) == 0
        assert p.end(commit=True).error_code == 0
        wait_transaction_done(broker.bootstrap, p.tid)
        assert p.produce(b"t2", 0) == 0
        late = p.end(commit=True, epoch=old)
        assert (late.error_code, late.producer_id, late.producer_epoch) == (PRODUCER_FENCED, -1, -1)
        st = describe_txn(broker.bootstrap, p.tid)
        assert (st.transaction_state, st.producer_epoch) == ("Ongoing", old + 1)
        assert values(broker.bootstrap, topic) == [b"t1"]   # t2 is still undecided
        assert p.end(commit=False).error_code == 0
        wait_transaction_done(broker.bootstrap, p.tid, states=("CompleteAbort",))
    assert values(broker.bootstrap, topic) == [b"t1"]
    assert markers(broker.bootstrap, topic) == [(COMMIT, old + 1), (ABORT, old + 2)]


# ---------------------------------------------------------------- crash recovery

# the transaction coordinator's points (the logdir.* ones are a log-dir move's, never reached by a commit)
@pytest.mark.parametrize("fault", [p for p in FAULT_POINTS if p.startswith("txn.")])
def test_coordinator_crash_recovery_v2(minikafka_broker, fault):
    """The broker exits (as kill -9) at ``fault`` during a V2 commit over three partitions.
    From txn.after_prepare on the decision is durable: after the restart the commit is
    finished with markers at the bumped epoch, a retry of the EndTxn is recognised, a late
    produce at the old epoch refused, and the producer's next transaction runs at the
    bumped epoch. Before it, the transaction is still open at the old epoch and the producer
    aborts it (bumping the epoch)."""
    b = minikafka_broker
    topic, tid = "crash-v2", f"crash-v2-{fault}"
    create_topics(b.bootstrap, [topic], 3)
    b.fault(fault)
    with RawClient.to(b.bootstrap) as c:
        p = V2Producer(c, tid, topic)
        old = p.epoch
        for part in range(3):
            assert p.produce(b"v%d" % part, 0, partition=part) == 0
        try:
            p.c.request(26, 5, {"transactional_id": tid, "producer_id": p.pid, "producer_epoch": old,
                                "committed": True})
        except (ConnectionError, OSError):
            pass  # the broker died at the fault point
    assert b.wait_exit(15) == 86, "the broker did not stop at the fault point" + b.describe()
    b.restart()
    written = [b"v0", b"v1", b"v2"]
    read = lambda isolation=1: [v for part in range(3) for v in values(b.bootstrap, topic, part, isolation)]  # noqa: E731
    with RawClient.to(b.bootstrap) as c:
        p.c = c
        wait_until(lambda: c.request(10, 3, {"key": tid, "key_type": 1}).error_code == 0, 15)
        if fault == "txn.before_prepare":
            st = describe_txn(b.bootstrap, tid)
            assert (st.transaction_state, st.producer_epoch) == ("Ongoing", old)
            assert read() == [] and read(0) == written
            assert p.end(commit=False).error_code == 0
            wait_transaction_done(b.bootstrap, tid, states=("CompleteAbort",))
            assert all(markers(b.bootstrap, topic, part) == [(ABORT, old + 1)] for part in range(3))
            assert read() == []
            return
        wait_transaction_done(b.bootstrap, tid)
        assert describe_txn(b.bootstrap, tid).producer_epoch == old + 1
        for part in range(3):
            # a re-driven marker may repeat one written before the crash, as in Kafka
            m = markers(b.bootstrap, topic, part)
            assert m and set(m) == {(COMMIT, old + 1)}, (part, m)
        assert read() == written
        retry = p.end(commit=True, epoch=old)   # the producer never saw the answer: it retries
        assert (retry.error_code, retry.producer_id, retry.producer_epoch) == (0, p.pid, old + 1)
        assert p.produce(b"late", 1, epoch=old) == INVALID_PRODUCER_EPOCH
        p.epoch = old + 1
        assert p.produce(b"next", 0) == 0
        assert p.end(commit=True).error_code == 0
        wait_transaction_done(b.bootstrap, tid)
    assert read() == [b"v0", b"next", b"v1", b"v2"]
