"""Issue 12: the transaction coordinator answers as Kafka 4.1 (TV1) does.

Every expected code here was recorded from Apache Kafka 4.1.0 with the same frames:
zombie fencing of KIP-360's recovering InitProducerId, a transaction whose markers
cannot be written yet (it stays PrepareCommit/PrepareAbort: MINIKAFKA_FAULT_HOLD_MARKERS
here, a partition without a leader on Kafka), a storage failure while writing a marker
(the broker halts, as Kafka does when its only log dir fails), and the verification of
transactional appends (produce, TxnOffsetCommit, AddPartitionsToTxn verify-only).
"""
from __future__ import annotations

import uuid

import pytest

from harness import transaction_state, wait_transaction_done, wait_until
from minikafka.protocol import records as rec
from rawclient import RawClient, make_batch

FENCED, INVALID_EPOCH, INVALID_TXN_STATE, CONCURRENT = 90, 47, 48, 51
INVALID_MAPPING, INVALID_REQUEST, ABORTABLE, NOT_ENOUGH_REPLICAS = 49, 42, 120, 19
OUT_OF_ORDER, TID_AUTHORIZATION, NOT_ATTEMPTED, UNKNOWN_PARTITION = 45, 53, 55, 3


def uid(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


class Txn:
    """Raw transactional requests for one transactional id."""

    def __init__(self, c: RawClient, tid: str):
        self.c, self.tid = c, tid
        c.request(10, 3, {"key": tid, "key_type": 1})
        self.pid = self.epoch = -1

    def init(self, pid: int = -1, epoch: int = -1, version: int = 4):
        r = self.c.request(22, version, {"transactional_id": self.tid, "transaction_timeout_ms": 60000,
                                         "producer_id": pid, "producer_epoch": epoch})
        if r.error_code == 0:
            self.pid, self.epoch = r.producer_id, r.producer_epoch
        return r

    def add(self, tps, epoch: int | None = None) -> set[int]:
        by: dict[str, list[int]] = {}
        for t, p in tps:
            by.setdefault(t, []).append(p)
        r = self.c.request(24, 3, {"v3_and_below_transactional_id": self.tid, "v3_and_below_producer_id": self.pid,
                                   "v3_and_below_producer_epoch": self.epoch if epoch is None else epoch,
                                   "v3_and_below_topics": [{"name": t, "partitions": ps} for t, ps in by.items()]})
        return {p.partition_error_code for t in r.results_by_topic_v3_and_below for p in t.results_by_partition}

    def verify(self, tps, epoch: int | None = None, tid: str | None = None) -> dict:
        by: dict[str, list[int]] = {}
        for t, p in tps:
            by.setdefault(t, []).append(p)
        r = self.c.request(24, 4, {"transactions": [{
            "transactional_id": self.tid if tid is None else tid, "producer_id": self.pid,
            "producer_epoch": self.epoch if epoch is None else epoch, "verify_only": True,
            "topics": [{"name": t, "partitions": ps} for t, ps in by.items()]}]})
        return {(t.name, p.partition_index): p.partition_error_code
                for tr in r.results_by_transaction for t in tr.topic_results for p in t.results_by_partition}

    def produce(self, topic, part, seq, epoch: int | None = None, version: int = 9, tid: str | None = "same",
                value: bytes = b"v"):
        batch = make_batch([value], self.pid, self.epoch if epoch is None else epoch, seq, True)
        return self.c.produce(topic, part, batch, version=version, transactional_id=self.tid if tid == "same" else tid)

    def end(self, commit: bool, epoch: int | None = None) -> int:
        return self.c.request(26, 3, {"transactional_id": self.tid, "producer_id": self.pid,
                                      "producer_epoch": self.epoch if epoch is None else epoch,
                                      "committed": commit}).error_code

    def describe(self):
        return self.c.request(65, 0, {"transactional_ids": [self.tid]}).transaction_states[0]


def describe_partitions(state) -> set[tuple[str, int]]:
    return {(t.topic, p) for t in state.topics for p in t.partitions}


def stable(c: RawClient, topic: str, part: int) -> bool:
    return c.list_offset(topic, part, isolation=1) == c.list_offset(topic, part)


def markers(c: RawClient, topic: str, part: int) -> list[int]:
    _, batches = c.fetch_all(topic, part)
    return [rec.parse_control_record(records[0])[0] for h, records in batches if h.is_control]


def open_txn_start(c: RawClient, topic: str, part: int, pid: int) -> int:
    r = c.request(61, 0, {"topics": [{"name": topic, "partition_indexes": [part]}]})
    return next(p.current_txn_start_offset for p in r.topics[0].partitions[0].active_producers if p.producer_id == pid)


# --------------------------------------------------------------- defect 1: InitProducerId

def test_recovering_zombie_is_fenced(broker):
    """KIP-360's InitProducerId(pid, epoch) from an instance a newer one fenced."""
    topic = uid("zombie")
    with RawClient.to(broker.bootstrap) as c:
        assert c.create_topic(topic, 1) == 0
        a = Txn(c, uid("tid"))
        assert a.init().error_code == 0
        b = Txn(c, a.tid)
        assert b.init().error_code == 0 and (b.pid, b.epoch) == (a.pid, a.epoch + 1)
        r = a.init(a.pid, a.epoch)
        assert (r.error_code, r.producer_id, r.producer_epoch) == (FENCED, -1, -1)
        assert a.init(a.pid, a.epoch, version=3).error_code == INVALID_EPOCH  # PRODUCER_FENCED is v4+
        assert a.init(a.pid, -1).error_code == INVALID_REQUEST  # both or neither
        assert a.init(-1, a.epoch).error_code == INVALID_REQUEST
        assert a.init(a.pid + 1000, b.epoch).error_code == FENCED  # someone else's producer id
        assert b.describe().producer_epoch == b.epoch, "the zombie must not move the epoch"

        # after the new instance's transaction completes the zombie is still fenced
        assert b.add([(topic, 0)]) == {0}
        assert b.produce(topic, 0, 0).error_code == 0
        assert b.end(True) == 0
        wait_transaction_done(broker.bootstrap, b.tid)
        assert a.init(a.pid, a.epoch).error_code == FENCED
        assert b.describe().producer_epoch == b.epoch

        # the current instance recovers with its own epoch, and may retry that call
        first = b.epoch
        r = b.init(b.pid, first)
        assert r.error_code == 0 and r.producer_epoch == first + 1
        r = b.init(b.pid, first)
        assert r.error_code == 0 and r.producer_epoch == first + 1, "a retry gets the same epoch"
        # a plain InitProducerId fences every earlier instance, even the one just recovered
        recovered = b.epoch
        assert b.init().error_code == 0 and b.epoch == recovered + 1
        assert b.init(b.pid, recovered).error_code == FENCED


@pytest.mark.parametrize("transaction_version", [1, 2])
def test_stale_recovery_aborts_the_open_transaction(broker_factory, transaction_version):
    """Kafka checks a recovering producer's epoch only once no transaction is open: a stale
    InitProducerId(pid, epoch) while the newer instance's transaction is Ongoing fences
    and aborts that transaction (CONCURRENT_TRANSACTIONS), and the retry is fenced. The
    fence follows the finalized transaction.version, whatever protocol the transaction
    began with: at 1 the fenced epoch is nobody's; at 2 the abort is V2's, which keeps the
    epoch before it as the last one, so the newer instance's recovery with it is taken for
    a retry (Kafka 4.1, recorded in tests/conformance/golden/txn_v2/fence/v1_transaction)."""
    broker = broker_factory(features={"transaction.version": transaction_version})
    topic = uid("stale")
    with RawClient.to(broker.bootstrap) as c:
        assert c.create_topic(topic, 1) == 0
        a = Txn(c, uid("tid"))
        a.init()
        b = Txn(c, a.tid)
        b.init()
        assert b.add([(topic, 0)]) == {0} and b.produce(topic, 0, 0).error_code == 0
        assert a.init(a.pid, a.epoch).error_code == CONCURRENT
        wait_transaction_done(broker.bootstrap, a.tid, states=("CompleteAbort",))
        assert b.describe().producer_epoch == b.epoch + 1
        assert markers(c, topic, 0) == [0]  # ABORT
        assert a.init(a.pid, a.epoch).error_code == FENCED
        fenced = b.epoch
        if transaction_version == 1:
            assert b.init(b.pid, b.epoch).error_code == FENCED, "the fence leaves no last epoch to recover with"
        else:
            r = b.init(b.pid, b.epoch)
            assert (r.error_code, r.producer_epoch) == (0, fenced + 1), "a retry of a recovery: the current epoch"
        assert b.end(True, epoch=fenced) == FENCED


def test_stale_recovery_kafka_python(broker):
    """The same with kafka-python, which answers INVALID_PRODUCER_EPOCH on a produce with
    InitProducerId(pid, epoch) (KIP-360): both instances end fenced, as on Kafka 4.1."""
    from kafka import KafkaProducer
    import kafka.errors as Errors
    topic, tid = uid("kp-stale"), uid("kp-tid")
    with RawClient.to(broker.bootstrap) as c:
        assert c.create_topic(topic, 2) == 0
    a = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id=tid)
    b = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id=tid)
    try:
        a.init_transactions()
        a.begin_transaction()
        a.send(topic, b"a0", partition=0).get(10)
        b.init_transactions()  # fences and aborts a's transaction
        b.begin_transaction()
        b.send(topic, b"b0", partition=1).get(10)
        with pytest.raises(Errors.InvalidProducerEpochError):
            a.send(topic, b"a1", partition=0).get(10)
        # a's recovery InitProducerId aborted b's open transaction and was then fenced
        wait_until(lambda: transaction_state(broker.bootstrap, tid) == "CompleteAbort", 15)
        with pytest.raises(Errors.KafkaError):
            a.commit_transaction()
        with pytest.raises(Errors.KafkaError):
            b.send(topic, b"b1", partition=1).get(10)
            b.commit_transaction()
    finally:
        a.close(timeout=1)
        b.close(timeout=1)
    with RawClient.to(broker.bootstrap) as c:
        wait_until(lambda: stable(c, topic, 1), 10)
        assert markers(c, topic, 1) == [0], "b's transaction was aborted"


# ------------------------------------------------- defect 3: markers that cannot be written

def test_held_markers_keep_the_transaction_prepared(broker_factory):
    held, free = uid("held"), uid("free")
    b = broker_factory(env={"MINIKAFKA_FAULT_HOLD_MARKERS": "held"})
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic(held, 1) == 0 and c.create_topic(free, 1) == 0
        t = Txn(c, uid("tid"))
        t.init()
        assert t.add([(held, 0), (free, 0)]) == {0}
        assert t.produce(held, 0, 0).error_code == 0 and t.produce(free, 0, 0).error_code == 0
        assert t.end(True) == 0  # the decision is durable: EndTxn answers
        wait_until(lambda: stable(c, free, 0), 10)  # the marker that can be written is
        st = t.describe()
        assert st.transaction_state == "PrepareCommit"
        assert describe_partitions(st) == {(held, 0)}, "only partitions still waiting for a marker"
        assert c.list_offset(held, 0, isolation=1) == 0, "no COMMIT marker, no Complete"

        # what Kafka answers while the markers are being written
        assert t.init().error_code == CONCURRENT
        assert t.init(t.pid, t.epoch).error_code == CONCURRENT
        assert t.add([(free, 0)]) == {CONCURRENT}
        assert t.end(True) == CONCURRENT and t.end(False) == CONCURRENT
        assert t.verify([(held, 0), (free, 0)]) == {(held, 0): CONCURRENT, (free, 0): CONCURRENT}
        p = t.produce(free, 0, 1)  # free-0 has its marker: verified, the coordinator is busy
        assert p.error_code == NOT_ENOUGH_REPLICAS and p.error_message.endswith("CONCURRENT_TRANSACTIONS")
        assert t.produce(free, 0, 1, version=11).error_code == NOT_ENOUGH_REPLICAS
        assert t.produce(free, 0, 1, version=12).error_code == CONCURRENT  # v12 adds: retried, then answered
        assert stable(c, free, 0)

    b.restart(kill=True)  # Prepare* is durable; still held, so still prepared
    with RawClient.to(b.bootstrap) as c:
        t.c = c
        st = t.describe()
        assert st.transaction_state == "PrepareCommit"
        assert t.init().error_code == CONCURRENT
    b.extra_env.pop("MINIKAFKA_FAULT_HOLD_MARKERS")
    b.restart()
    wait_transaction_done(b.bootstrap, t.tid, states=("CompleteCommit",))
    with RawClient.to(b.bootstrap) as c:
        assert stable(c, held, 0) and set(markers(c, held, 0)) == {1}
        assert set(markers(c, free, 0)) == {1}  # re-driven after each load: maybe repeated, as Kafka
        t.c = c
        assert t.init().error_code == 0


def test_held_markers_kafka_python(broker_factory):
    """A kafka-python commit returns once the decision is durable; read_committed readers
    see the records only once the marker is written (here: after a restart)."""
    from kafka import KafkaProducer
    topic, tid = uid("held-kp"), uid("kp-tid")
    b = broker_factory(env={"MINIKAFKA_FAULT_HOLD_MARKERS": "held"})
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic(topic, 1) == 0
    p = KafkaProducer(bootstrap_servers=b.bootstrap, transactional_id=tid)
    try:
        p.init_transactions()
        p.begin_transaction()
        for i in range(3):
            p.send(topic, b"r%d" % i, partition=0)
        p.commit_transaction()
    finally:
        p.close(timeout=1)
    assert transaction_state(b.bootstrap, tid) == "PrepareCommit"
    with RawClient.to(b.bootstrap) as c:
        assert c.list_offset(topic, 0, isolation=1) == 0
    b.extra_env.pop("MINIKAFKA_FAULT_HOLD_MARKERS")
    b.restart()
    wait_transaction_done(b.bootstrap, tid, states=("CompleteCommit",))
    with RawClient.to(b.bootstrap) as c:
        p0, batches = c.fetch_all(topic, 0, isolation=1)
        assert [r.value for h, rs in batches if not h.is_control for r in rs] == [b"r0", b"r1", b"r2"]


def test_marker_storage_error_halts_and_the_restart_completes(broker_factory):
    """An I/O error writing an ABORT marker (its aborted-transaction index): Kafka takes the
    log dir offline and, with its only one gone, halts; the restart finishes the abort."""
    topic = uid("ioerr")
    b = broker_factory()
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic(topic, 1) == 0
        t = Txn(c, uid("tid"))
        t.init()
        assert t.add([(topic, 0)]) == {0}
        assert t.produce(topic, 0, 0).error_code == 0
        blocker = b.partition_dir(topic, 0) / "00000000000000000000.txnindex"
        blocker.mkdir()  # the index cannot be opened for writing
        assert t.end(False) == 0
    wait_until(lambda: not b.running, 15, message=lambda: "the broker kept running" + b.describe())
    assert b.proc.returncode == 1
    assert "Shutdown broker because all log dirs in" in b.log_text(current_run_only=True)
    blocker.rmdir()
    b.start()
    wait_transaction_done(b.bootstrap, t.tid, states=("CompleteAbort",))
    with RawClient.to(b.bootstrap) as c:
        assert stable(c, topic, 0)
        assert open_txn_start(c, topic, 0, t.pid) == -1
        p = c.fetch(topic, 0, 0, isolation=1)
        assert [a.producer_id for a in p.aborted_transactions] == [t.pid]


# ------------------------------------------------------ defect 4: verification of appends

def test_verify_only_answers(broker):
    topic = uid("verify")
    with RawClient.to(broker.bootstrap) as c:
        assert c.create_topic(topic, 2) == 0
        t = Txn(c, uid("tid"))
        t.init()
        assert t.verify([(topic, 0)]) == {(topic, 0): ABORTABLE}  # Empty
        assert t.add([(topic, 0)]) == {0}
        assert t.verify([(topic, 0), (topic, 1)]) == {(topic, 0): 0, (topic, 1): ABORTABLE}
        assert t.verify([(topic, 0)], epoch=t.epoch + 1) == {(topic, 0): FENCED}
        assert t.verify([(topic, 0)], tid="nosuch-" + t.tid) == {(topic, 0): INVALID_MAPPING}
        assert t.verify([(topic, 0)], tid="") == {(topic, 0): INVALID_REQUEST}
        assert t.verify([(topic, 0), (topic, 7)]) == {(topic, 0): NOT_ATTEMPTED, (topic, 7): UNKNOWN_PARTITION}


def test_produce_verification_answers_per_version(broker):
    """Kafka converts the coordinator's TRANSACTION_ABORTABLE to INVALID_TXN_STATE before
    Produce v11; from v12 the produce adds its partition to the transaction."""
    topic = uid("pv")
    with RawClient.to(broker.bootstrap) as c:
        assert c.create_topic(topic, 4) == 0
        t = Txn(c, uid("tid"))
        t.init()
        assert t.add([(topic, 0)]) == {0}
        for v in range(3, 11):
            p = t.produce(topic, 1, 0, version=v)
            assert p.error_code == INVALID_TXN_STATE, v
            if v >= 8:
                assert p.error_message == "Partition was not added to the transaction"
        assert t.produce(topic, 1, 0, version=11).error_code == ABORTABLE
        assert c.list_offset(topic, 1) == 0
        assert t.produce(topic, 2, 0, version=12).error_code == 0
        assert describe_partitions(t.describe()) == {(topic, 0), (topic, 2)}
        assert t.produce(topic, 3, 0, tid=None).error_code == TID_AUTHORIZATION  # transactional, no id
        assert t.produce(topic, 2, 1, tid="nosuch-" + t.tid).error_code == 0  # open here: not asked again
        assert t.produce(topic, 3, 0, tid="nosuch-" + t.tid).error_code == INVALID_MAPPING
        assert t.produce(topic, 3, 0, epoch=t.epoch + 1).error_code == INVALID_EPOCH  # fenced


def test_newer_epoch_cannot_join_a_hanging_transaction(broker_factory):
    """Partition verification asks the coordinator unless the producer has a transaction
    *of that epoch* open on the partition (Kafka's hasOngoingTransaction(pid, epoch))."""
    topic = uid("hang")
    b = broker_factory(env={"MINIKAFKA_FAULT_SKIP_MARKER": f"{topic}:0"})
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic(topic, 1) == 0
        t = Txn(c, uid("tid"))
        t.init()
        assert t.add([(topic, 0)]) == {0} and t.produce(topic, 0, 0).error_code == 0
        assert t.end(True) == 0
        wait_transaction_done(b.bootstrap, t.tid)  # the coordinator believes the marker was written
        old = t.epoch
        assert t.init().error_code == 0 and t.epoch == old + 1
        assert t.produce(topic, 0, 0).error_code == INVALID_TXN_STATE, "not in the new epoch's transaction"
        assert t.produce(topic, 0, 0, version=11).error_code == ABORTABLE
        assert c.list_offset(topic, 0) == 1 and open_txn_start(c, topic, 0, t.pid) == 0


def test_late_produce_never_opens_a_transaction(broker):
    """KIP-890 part 1: a produce that arrives after its transaction ended is refused and
    leaves no open transaction behind (the check and the append are one step)."""
    topic = uid("late")
    with RawClient.to(broker.bootstrap) as c:
        assert c.create_topic(topic, 1) == 0
        t = Txn(c, uid("tid"))
        t.init()
        assert t.add([(topic, 0)]) == {0} and t.produce(topic, 0, 0).error_code == 0
        assert t.end(True) == 0
        wait_transaction_done(broker.bootstrap, t.tid)
        leo = c.list_offset(topic, 0)
        assert t.produce(topic, 0, 1).error_code == INVALID_TXN_STATE
        assert t.produce(topic, 0, 0).error_code == INVALID_TXN_STATE, "even a duplicate of a batch it holds"
        assert c.list_offset(topic, 0) == leo and stable(c, topic, 0)
        assert open_txn_start(c, topic, 0, t.pid) == -1


def test_failed_verification_blocks_higher_sequences(broker):
    """Kafka's VerificationStateEntry: the lowest sequence of a batch that failed verification
    is remembered, and a later batch with a higher one is OUT_OF_ORDER_SEQUENCE_NUMBER."""
    topic = uid("lowseq")
    with RawClient.to(broker.bootstrap) as c:
        assert c.create_topic(topic, 2) == 0
        t = Txn(c, uid("tid"))
        t.init()
        assert t.add([(topic, 0)]) == {0}
        assert t.produce(topic, 1, 5).error_code == INVALID_TXN_STATE
        assert t.produce(topic, 1, 3).error_code == INVALID_TXN_STATE
        assert t.add([(topic, 1)]) == {0}
        assert t.produce(topic, 1, 7).error_code == OUT_OF_ORDER
        assert t.produce(topic, 1, 5).error_code == OUT_OF_ORDER
        assert t.produce(topic, 1, 3).error_code == 0
        assert t.produce(topic, 1, 4).error_code == 0


def test_txn_offset_commit_verification(broker):
    topic, group = uid("toc"), uid("group")
    with RawClient.to(broker.bootstrap) as c:
        assert c.create_topic(topic, 1) == 0
        c.request(10, 3, {"key": group, "key_type": 0})
        t = Txn(c, uid("tid"))
        t.init()

        def commit(version: int, epoch: int | None = None) -> int:
            body = {"transactional_id": t.tid, "group_id": group, "producer_id": t.pid,
                    "producer_epoch": t.epoch if epoch is None else epoch, "generation_id": -1, "member_id": "",
                    "group_instance_id": None,
                    "topics": [{"name": topic, "partitions": [{"partition_index": 0, "committed_offset": 1,
                                                                "committed_leader_epoch": -1,
                                                                "committed_metadata": ""}]}]}
            return c.request(28, version, body).topics[0].partitions[0].error_code
        assert [commit(v) for v in range(5)] == [INVALID_TXN_STATE] * 4 + [ABORTABLE]  # no AddOffsetsToTxn
        assert commit(3, epoch=t.epoch + 3) == INVALID_EPOCH
        assert c.request(25, 3, {"transactional_id": t.tid, "producer_id": t.pid, "producer_epoch": t.epoch,
                                 "group_id": group}).error_code == 0
        assert commit(3) == 0
