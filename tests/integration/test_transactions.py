"""Transactions (issue 4): real transactional producers, markers on every partition,
the coordinator's state log, zombie fencing, crash recovery at exact points, timeouts."""
from __future__ import annotations

import asyncio
import json
import subprocess
import time
import uuid

import pytest

from minikafka.coordinator.hashing import partition_for
from minikafka.coordinator.transaction.state import decode_key, decode_value
from harness import wait_transaction_done, wait_until
from minikafka.protocol import records as rec
from rawclient import RawClient, make_batch

TOPICS = 3
PARTITIONS = 4
COMMIT, ABORT = 1, 0


def create_topics(bootstrap: str, names: list[str], partitions: int = PARTITIONS) -> None:
    with RawClient.to(bootstrap) as c:
        for n in names:
            assert c.create_topic(n, partitions) == 0


def placement(i: int, topics: list[str]) -> tuple[str, int]:
    return topics[i % len(topics)], (i // len(topics)) % PARTITIONS


def aborts(t: int, every: int) -> bool:
    return every > 0 and t % every == every - 1


# ------------------------------------------------------------------ producers

def produce_kafka_python(bootstrap, tid, topics, txns, per, every, tag):
    from kafka import KafkaProducer
    p = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid, linger_ms=2)
    p.init_transactions()
    for t in range(txns):
        p.begin_transaction()
        for i in range(per):
            topic, part = placement(i, topics)
            p.send(topic, key=f"{t}-{i}".encode(), value=f"{tag}:{t}:{i}".encode(), partition=part)
        p.flush()
        p.abort_transaction() if aborts(t, every) else p.commit_transaction()
    p.close()


def produce_confluent(bootstrap, tid, topics, txns, per, every, tag):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "linger.ms": 2})
    p.init_transactions(30)
    for t in range(txns):
        p.begin_transaction()
        for i in range(per):
            topic, part = placement(i, topics)
            p.produce(topic, key=f"{t}-{i}", value=f"{tag}:{t}:{i}", partition=part)
        p.flush(30)  # librdkafka purges unsent messages on abort; we want them in the log
        p.abort_transaction(30) if aborts(t, every) else p.commit_transaction(30)


def produce_aiokafka(bootstrap, tid, topics, txns, per, every, tag):
    from aiokafka import AIOKafkaProducer

    async def run():
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid, linger_ms=2)
        await p.start()
        try:
            for t in range(txns):
                await p.begin_transaction()
                futs = []
                for i in range(per):
                    topic, part = placement(i, topics)
                    futs.append(await p.send(topic, key=f"{t}-{i}".encode(), value=f"{tag}:{t}:{i}".encode(),
                                             partition=part))
                await asyncio.gather(*futs)
                await (p.abort_transaction() if aborts(t, every) else p.commit_transaction())
        finally:
            await p.stop()

    asyncio.run(run())


def produce_java(java_client, bootstrap, tid, topics, txns, per, every, tag):
    r = subprocess.run(["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp",
                        java_client.classpath, "TxnTool", "produce", "--bootstrap", bootstrap,
                        "--transactional-id", tid, "--topics", ",".join(topics), "--partitions", str(PARTITIONS),
                        "--txns", str(txns), "--per-txn", str(per), "--abort-every", str(every), "--tag", tag],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]


# ------------------------------------------------------------------- readers

def raw_partition(bootstrap, topic, partition):
    """Every batch of a partition: [(header, records)]."""
    with RawClient.to(bootstrap) as c:
        _, batches = c.fetch_all(topic, partition)
    return batches


def state_log(bootstrap, tid, num_partitions=50):
    """The coordinator's records for one transactional id, as TransactionMetadata, in log order."""
    out = []
    for h, records in raw_partition(bootstrap, "__transaction_state", partition_for(tid, num_partitions)):
        for r in records:
            if r.key is not None and decode_key(r.key) == tid:
                out.append(decode_value(tid, r.value))
    return out


def check_markers(bootstrap, topics, tag, txns, every):
    """Each transaction's records on a partition are followed by the right marker, and
    every record of every transaction is in the log."""
    seen = set()
    for topic in topics:
        for part in range(PARTITIONS):
            open_txn: dict[int, set[int]] = {}  # producer id -> transaction numbers since its last marker
            for h, records in raw_partition(bootstrap, topic, part):
                if h.is_control:
                    kind, _ = rec.parse_control_record(records[0])
                    txn_numbers = open_txn.pop(h.producer_id, set())
                    assert len(txn_numbers) <= 1, f"{topic}-{part}: one marker closes several txns {txn_numbers}"
                    for t in txn_numbers:
                        expected = ABORT if aborts(t, every) else COMMIT
                        assert kind == expected, f"{topic}-{part}: txn {t} ended by {kind}, expected {expected}"
                    continue
                assert h.is_transactional
                for r in records:
                    rtag, t, i = r.value.decode().split(":")
                    if rtag != tag:
                        continue
                    assert placement(int(i), topics) == (topic, part)
                    open_txn.setdefault(h.producer_id, set()).add(int(t))
                    seen.add((int(t), int(i)))
            assert not any(open_txn.values()), f"{topic}-{part}: transactions without a marker: {open_txn}"
    return seen


CLIENTS = ["kafka-python", "confluent-kafka", "aiokafka", "java"]


@pytest.mark.slow
@pytest.mark.parametrize("client", CLIENTS)
def test_transactions_commit_and_abort_with_markers(broker, client, request):
    txns, per, every = 200, 50, 3
    suffix = uuid.uuid4().hex[:6]
    topics = [f"txn-{client}-{k}-{suffix}" for k in range(TOPICS)]
    tid = f"tid-{client}-{suffix}"
    tag = client
    if client == "java":
        java = request.getfixturevalue("java_client")
    create_topics(broker.bootstrap, topics)
    {
        "kafka-python": lambda: produce_kafka_python(broker.bootstrap, tid, topics, txns, per, every, tag),
        "confluent-kafka": lambda: produce_confluent(broker.bootstrap, tid, topics, txns, per, every, tag),
        "aiokafka": lambda: produce_aiokafka(broker.bootstrap, tid, topics, txns, per, every, tag),
        "java": lambda: produce_java(java, broker.bootstrap, tid, topics, txns, per, every, tag),
    }[client]()
    wait_transaction_done(broker.bootstrap, tid)  # the last markers follow the EndTxn answer

    seen = check_markers(broker.bootstrap, topics, tag, txns, every)
    assert seen == {(t, i) for t in range(txns) for i in range(per)}, "records missing from the log"

    # __transaction_state: Empty, then per txn Ongoing -> Prepare* -> Complete*
    states = [md.state.display for md in state_log(broker.bootstrap, tid)]
    assert states[0] == "Empty"
    body = [s for s in states[1:]]
    expected = []
    for t in range(txns):
        end = "Abort" if aborts(t, every) else "Commit"
        expected += ["Ongoing", f"Prepare{end}", f"Complete{end}"]
    # AddPartitions may append more than one Ongoing record per transaction
    collapsed = [s for k, s in enumerate(body) if not (s == "Ongoing" and k > 0 and body[k - 1] == "Ongoing")]
    assert collapsed == expected, states[:20]


# ------------------------------------------------------------------ fencing

def test_zombie_is_fenced_kafka_python(broker, unique_topic):
    from kafka import KafkaProducer
    from kafka.errors import KafkaError
    topic = unique_topic("zombie")
    create_topics(broker.bootstrap, [topic], 1)
    tid = f"zombie-{uuid.uuid4().hex[:6]}"
    a = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id=tid)
    a.init_transactions()
    a.begin_transaction()
    a.send(topic, b"zombie-0", partition=0).get(10)
    b = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id=tid)
    b.init_transactions()  # bumps the epoch and aborts A's open transaction
    with pytest.raises(KafkaError) as send_err:
        a.send(topic, b"zombie-1", partition=0).get(10)
        a.commit_transaction()
    assert "Fenced" in type(send_err.value).__name__ or "Epoch" in type(send_err.value).__name__, send_err.value
    # The zombie is stopped before B's transaction: kafka-python takes the epoch error as
    # recoverable and its sender thread then sends InitProducerId with A's producer id and old
    # epoch (KIP-360). Should that arrive once B's transaction is open, the coordinator fences
    # and aborts it, as Kafka's does (the producer id matches; Ongoing is fenced before any epoch
    # check), and B's commit fails: under load the thread lost that race (seen with 4 xdist workers).
    a.close(timeout=10)
    b.begin_transaction()
    b.send(topic, b"fresh-0", partition=0).get(10)
    b.commit_transaction()
    b.close()
    wait_transaction_done(broker.bootstrap, tid)
    assert_zombie_outcome(broker, topic, b"zombie-0", b"fresh-0")


def test_zombie_is_fenced_confluent(broker, unique_topic):
    from confluent_kafka import KafkaException, Producer
    topic = unique_topic("zombie")
    create_topics(broker.bootstrap, [topic], 1)
    tid = f"zombie-{uuid.uuid4().hex[:6]}"
    a = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": tid})
    a.init_transactions(10)
    a.begin_transaction()
    a.produce(topic, value=b"zombie-0", partition=0)
    assert a.flush(10) == 0
    b = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": tid})
    b.init_transactions(10)
    with pytest.raises(KafkaException) as err:
        a.produce(topic, value=b"zombie-1", partition=0)
        a.flush(10)
        a.commit_transaction(10)
    kerr = err.value.args[0]
    assert kerr.fatal() or "fenced" in kerr.str().lower(), kerr
    b.begin_transaction()
    b.produce(topic, value=b"fresh-0", partition=0)
    b.commit_transaction(10)
    wait_transaction_done(broker.bootstrap, tid)
    assert_zombie_outcome(broker, topic, b"zombie-0", b"fresh-0")


def test_zombie_is_fenced_java(broker, unique_topic, java_client):
    topic = unique_topic("zombie")
    create_topics(broker.bootstrap, [topic], 1)
    tid = f"zombie-{uuid.uuid4().hex[:6]}"
    r = subprocess.run(["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp",
                        java_client.classpath, "TxnTool", "zombie", "--bootstrap", broker.bootstrap,
                        "--transactional-id", tid, "--topic", topic], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    assert summary["send_error"] in ("ProducerFencedException", "InvalidProducerEpochException") or \
        summary["commit_error"] == "ProducerFencedException", summary
    assert summary["commit_error"] != "none", summary
    wait_transaction_done(broker.bootstrap, tid)
    assert_zombie_outcome(broker, topic, b"zombie:0", b"fresh:0")


def assert_zombie_outcome(broker, topic, zombie_value, fresh_value):
    """The zombie's open transaction ended with an ABORT marker; the fresh one committed."""
    markers, values = [], []
    for h, records in raw_partition(broker.bootstrap, topic, 0):
        if h.is_control:
            markers.append(rec.parse_control_record(records[0])[0])
        else:
            values += [r.value for r in records]
    assert values[0] == zombie_value and fresh_value in values
    assert markers[0] == ABORT, markers
    assert markers[-1] == COMMIT, markers


# ------------------------------------------------------------ crash recovery

def _txn_to_commit(b, topic, tid):
    """InitProducerId, AddPartitionsToTxn(3 partitions), produce, then EndTxn(commit)
    on a connection the broker may die on. Returns (producer id, epoch)."""
    with RawClient.to(b.bootstrap) as c:
        r = c.request(10, 3, {"key": tid, "key_type": 1})
        assert r.error_code == 0
        init = c.init_producer_id(tid, timeout_ms=60000)
        assert init.error_code == 0, init
        pid, epoch = init.producer_id, init.producer_epoch
        add = c.request(24, 3, {"v3_and_below_transactional_id": tid, "v3_and_below_producer_id": pid,
                                 "v3_and_below_producer_epoch": epoch,
                                 "v3_and_below_topics": [{"name": topic, "partitions": [0, 1, 2]}]})
        assert all(p.partition_error_code == 0 for t in add.results_by_topic_v3_and_below
                   for p in t.results_by_partition), add
        for part in range(3):
            p = c.produce(topic, part, make_batch([b"v%d" % part], producer_id=pid, producer_epoch=epoch,
                                                  base_sequence=0, transactional=True), transactional_id=tid)
            assert p.error_code == 0, p
        try:
            c.request(26, 3, {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "committed": True})
        except (ConnectionError, OSError):
            pass  # the broker died at the fault point
    return pid, epoch


def describe_txn(bootstrap, tid):
    with RawClient.to(bootstrap) as c:
        return c.request(65, 0, {"transactional_ids": [tid]}).transaction_states[0]


def markers_of(bootstrap, topic, partition):
    return [rec.parse_control_record(records[0])[0]
            for h, records in raw_partition(bootstrap, topic, partition) if h.is_control]


@pytest.mark.parametrize("fault,finished", [
    ("txn.after_prepare", True),        # (a) PrepareCommit durable, no marker yet
    ("txn.after_first_marker", True),   # (b) some markers written
    ("txn.before_prepare", False),      # (c) crash before the commit point
    ("txn.after_markers", True),        # (d) every marker written, Complete* not yet
])
def test_coordinator_crash_recovery(minikafka_broker, fault, finished):
    b = minikafka_broker
    topic, tid = "crash", f"crash-{fault}"
    create_topics(b.bootstrap, [topic], 3)
    b.fault(fault)  # armed: the broker exits at that point of the next EndTxn
    pid, epoch = _txn_to_commit(b, topic, tid)
    assert b.wait_exit(15) == 86, "the broker did not stop at the fault point" + b.describe()
    b.restart()
    written = [(part, b"v%d" % part) for part in range(3)]
    if finished:
        wait_until(lambda: describe_txn(b.bootstrap, tid).transaction_state == "CompleteCommit", 15)
        for part in range(3):
            # a re-driven marker may repeat one written before the crash, as in Kafka
            m = markers_of(b.bootstrap, topic, part)
            assert m and set(m) == {COMMIT}, (part, m)
        assert [(r.partition, r.value) for r in b.records(topic)] == written
    else:
        assert describe_txn(b.bootstrap, tid).transaction_state == "Ongoing"
        assert all(markers_of(b.bootstrap, topic, part) == [] for part in range(3))
        assert b.records(topic) == []  # undecided: nothing visible read_committed
        assert [(r.partition, r.value) for r in b.records(topic, "read_uncommitted")] == written
        with RawClient.to(b.bootstrap) as c:  # the producer aborts it after the restart
            r = c.request(26, 3, {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch,
                                  "committed": False})
            assert r.error_code == 0
        wait_transaction_done(b.bootstrap, tid, states=("CompleteAbort",))
        for part in range(3):
            assert markers_of(b.bootstrap, topic, part) == [ABORT]
        assert b.records(topic) == []


def test_timed_out_transaction_is_aborted(broker_factory):
    interval_ms = 300
    b = broker_factory(overrides={"transaction.abort.timed.out.transaction.cleanup.interval.ms": interval_ms})
    topic, tid = "slowpoke", "slowpoke-1"
    create_topics(b.bootstrap, [topic], 2)
    timeout_ms = 1000
    with RawClient.to(b.bootstrap) as c:
        c.request(10, 3, {"key": tid, "key_type": 1})
        init = c.init_producer_id(tid, timeout_ms=timeout_ms)
        pid, epoch = init.producer_id, init.producer_epoch
        c.request(24, 3, {"v3_and_below_transactional_id": tid, "v3_and_below_producer_id": pid,
                          "v3_and_below_producer_epoch": epoch,
                          "v3_and_below_topics": [{"name": topic, "partitions": [0, 1]}]})
        started = time.monotonic()
        for part in (0, 1):
            assert c.produce(topic, part, make_batch([b"late"], producer_id=pid, producer_epoch=epoch, base_sequence=0,
                                                     transactional=True), transactional_id=tid).error_code == 0
    wait_until(lambda: describe_txn(b.bootstrap, tid).transaction_state == "CompleteAbort",
               (timeout_ms + interval_ms) / 1000 + 5)
    assert time.monotonic() - started <= (timeout_ms + interval_ms) / 1000 + 2
    st = describe_txn(b.bootstrap, tid)
    assert st.producer_epoch == epoch + 1  # fenced: the producer's epoch is bumped
    for part in (0, 1):
        assert markers_of(b.bootstrap, topic, part) == [ABORT]
    with RawClient.to(b.bootstrap) as c:  # the fenced producer's commit fails
        r = c.request(26, 3, {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "committed": True})
        assert r.error_code == 90  # PRODUCER_FENCED


def test_invalid_transaction_timeout(broker):
    with RawClient.to(broker.bootstrap) as c:
        c.request(10, 3, {"key": "too-long", "key_type": 1})
        r = c.init_producer_id("too-long", timeout_ms=900001)
        assert r.error_code == 50  # INVALID_TRANSACTION_TIMEOUT


def test_produce_to_partition_not_in_transaction_is_refused(broker):
    create_topics(broker.bootstrap, ["verify"], 2)
    with RawClient.to(broker.bootstrap) as c:
        c.request(10, 3, {"key": "verifier", "key_type": 1})
        init = c.init_producer_id("verifier")
        pid, epoch = init.producer_id, init.producer_epoch
        c.request(24, 3, {"v3_and_below_transactional_id": "verifier", "v3_and_below_producer_id": pid,
                          "v3_and_below_producer_epoch": epoch,
                          "v3_and_below_topics": [{"name": "verify", "partitions": [0]}]})
        ok = c.produce("verify", 0, make_batch([b"in"], pid, epoch, 0, True), transactional_id="verifier")
        assert ok.error_code == 0
        bad = c.produce("verify", 1, make_batch([b"out"], pid, epoch, 0, True), transactional_id="verifier")
        assert bad.error_code == 48  # INVALID_TXN_STATE
        assert c.list_offset("verify", 1) == 0


def test_transactional_batches_of_two_producers_in_one_request(broker, unique_topic):
    """Kafka 4.1 (probed): transactional batches of more than one (producer id, epoch) bound for
    existing partitions fail the whole request with INVALID_PRODUCER_ID_MAPPING and Kafka's
    message, every partition included (an unknown topic's too), before anything is written or
    verified; an idempotent batch of another producer, or a second producer's batch bound for an
    unknown topic, does not count; with acks=0 the connection is closed."""
    t = unique_topic("mixed")
    msg = "Transactional records contained more than one producer ID"
    create_topics(broker.bootstrap, [t], 3)

    def produce(c, tid, items, acks=-1):
        body = {"transactional_id": tid, "acks": acks, "timeout_ms": 10000,
                "topic_data": [{"name": topic, "partition_data": [{"index": p, "records": b}]} for topic, p, b in items]}
        r = c.request(0, 9, body)
        return [(p.index, p.error_code, p.base_offset, p.error_message) for x in r.responses for p in x.partition_responses]

    with RawClient.to(broker.bootstrap) as c:
        ids = []
        for tid in (f"{t}-a", f"{t}-b"):
            c.request(10, 3, {"key": tid, "key_type": 1})
            init = c.init_producer_id(tid)
            ids.append((init.producer_id, init.producer_epoch))
            c.request(24, 3, {"v3_and_below_transactional_id": tid, "v3_and_below_producer_id": init.producer_id,
                              "v3_and_below_producer_epoch": init.producer_epoch,
                              "v3_and_below_topics": [{"name": t, "partitions": [0, 1, 2]}]})
        (pa, ea), (pb, eb) = ids
        ta = f"{t}-a"
        # one producer id with two epochs counts as two
        assert produce(c, ta, [(t, 0, make_batch([b"x"], pa, ea, 0, True)),
                               (t, 1, make_batch([b"y"], pa, ea + 1, 0, True))]) == [(0, 49, -1, msg), (1, 49, -1, msg)]
        assert produce(c, ta, [(t, 0, make_batch([b"x"], pa, ea, 0, True)), (t, 1, make_batch([b"y"], pb, eb, 0, True)),
                               (f"{t}-nope", 0, make_batch([b"z"], pa, ea, 0, True))]) == \
            [(0, 49, -1, msg), (1, 49, -1, msg), (0, 49, -1, msg)]
        assert [c.list_offset(t, p) for p in range(3)] == [0, 0, 0], "nothing written"
        # what does not count: an idempotent batch of b, b's transactional batch for an unknown topic
        assert produce(c, ta, [(t, 0, make_batch([b"x"], pa, ea, 0, True)),
                               (t, 2, make_batch([b"i"], pb, eb, 0, False))]) == [(0, 0, 0, None), (2, 0, 0, None)]
        assert produce(c, ta, [(t, 0, make_batch([b"x"], pa, ea, 1, True)),
                               (f"{t}-nope", 0, make_batch([b"z"], pb, eb, 0, True))]) == [(0, 0, 1, None), (0, 3, -1, None)]
        # the refused request left no verification behind: b starts its transaction at sequence 0
        assert produce(c, f"{t}-b", [(t, 1, make_batch([b"y"], pb, eb, 0, True))]) == [(1, 0, 0, None)]
        with pytest.raises(ConnectionError):
            produce(c, ta, [(t, 0, make_batch([b"x"], pa, ea, 2, True)), (t, 1, make_batch([b"y"], pb, eb, 1, True))],
                    acks=0)
    with RawClient.to(broker.bootstrap) as c:
        assert [c.list_offset(t, p) for p in range(3)] == [2, 1, 1], "acks=0: nothing written either"


def test_wrong_producer_id_is_invalid_mapping(broker):
    with RawClient.to(broker.bootstrap) as c:
        c.request(10, 3, {"key": "mapper", "key_type": 1})
        init = c.init_producer_id("mapper")
        r = c.request(26, 3, {"transactional_id": "mapper", "producer_id": init.producer_id + 1000,
                              "producer_epoch": init.producer_epoch, "committed": True})
        assert r.error_code == 49  # INVALID_PRODUCER_ID_MAPPING
        r = c.request(26, 3, {"transactional_id": "mapper", "producer_id": init.producer_id,
                              "producer_epoch": init.producer_epoch, "committed": True})
        assert r.error_code == 48  # INVALID_TXN_STATE: nothing to commit in state Empty


def test_idle_transactional_id_expires_with_a_tombstone(broker_factory):
    b = broker_factory(overrides={"transactional.id.expiration.ms": 500,
                                  "transaction.remove.expired.transaction.cleanup.interval.ms": 200})
    tid = "short-lived"
    with RawClient.to(b.bootstrap) as c:
        c.request(10, 3, {"key": tid, "key_type": 1})
        assert c.init_producer_id(tid).error_code == 0
    assert describe_txn(b.bootstrap, tid).transaction_state == "Empty"
    wait_until(lambda: describe_txn(b.bootstrap, tid).error_code == 105, 10)  # TRANSACTIONAL_ID_NOT_FOUND
    tombstones = [r for h, records in raw_partition(b.bootstrap, "__transaction_state", partition_for(tid, 50))
                  for r in records if r.key is not None and decode_key(r.key) == tid and r.value is None]
    assert len(tombstones) == 1
    b.restart()  # the tombstone keeps it gone after a reload
    assert describe_txn(b.bootstrap, tid).error_code == 105
