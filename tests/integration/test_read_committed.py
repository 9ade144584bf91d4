"""read_committed consumers (issue 6): interleaved committed, aborted and open
transactions from four different clients on one partition; every client as the
consumer sees exactly the committed records, in offset order, and the open
transaction only once it commits. The LSO is held by an open transaction."""
from __future__ import annotations

import asyncio
import json
import subprocess
import threading
import time
import uuid

import pytest

from harness import wait_until
from protocol import records as rec
from rawclient import RawClient, make_batch

TXNS, PER_TXN = 6, 15


def aborted(t: int) -> bool:
    return t % 3 == 2


def java_cmd(java_client, *args):
    return ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", java_client.classpath,
            "TxnTool", *args]


# ----------------------------------------------------------------- producers

def kp_producer(bootstrap, topic, tag):
    from kafka import KafkaProducer
    p = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"{tag}-{uuid.uuid4().hex[:6]}")
    p.init_transactions()
    for t in range(TXNS):
        p.begin_transaction()
        for i in range(PER_TXN):
            p.send(topic, value=f"{tag}:{t}:{i}".encode(), partition=0)
            if i % 5 == 4:
                p.flush()  # spread each transaction over several batches, interleaved with the others
        p.flush()
        p.abort_transaction() if aborted(t) else p.commit_transaction()
    p.close()


def ck_producer(bootstrap, topic, tag):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{tag}-{uuid.uuid4().hex[:6]}", "linger.ms": 1})
    p.init_transactions(30)
    for t in range(TXNS):
        p.begin_transaction()
        for i in range(PER_TXN):
            p.produce(topic, value=f"{tag}:{t}:{i}", partition=0)
            if i % 5 == 4:
                p.flush(30)
        p.flush(30)
        p.abort_transaction(30) if aborted(t) else p.commit_transaction(30)


def aio_producer(bootstrap, topic, tag):
    from aiokafka import AIOKafkaProducer

    async def run():
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"{tag}-{uuid.uuid4().hex[:6]}")
        await p.start()
        try:
            for t in range(TXNS):
                await p.begin_transaction()
                for i in range(PER_TXN):
                    await p.send_and_wait(topic, f"{tag}:{t}:{i}".encode(), partition=0) if i % 5 == 4 else \
                        await p.send(topic, f"{tag}:{t}:{i}".encode(), partition=0)
                await p.flush()
                await (p.abort_transaction() if aborted(t) else p.commit_transaction())
        finally:
            await p.stop()

    asyncio.run(run())


def java_producer(java_client, bootstrap, topic, tag):
    r = subprocess.run(java_cmd(java_client, "produce", "--bootstrap", bootstrap, "--transactional-id",
                                f"{tag}-{uuid.uuid4().hex[:6]}", "--topics", topic, "--partitions", "1",
                                "--txns", str(TXNS), "--per-txn", str(PER_TXN), "--abort-every", "3", "--tag", tag),
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr[-3000:]


# ----------------------------------------------------------------- consumers

def kp_consume(bootstrap, topic, expected, isolation, **config):
    from kafka import KafkaConsumer, TopicPartition
    c = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation, enable_auto_commit=False,
                      consumer_timeout_ms=1500, **config)
    c.assign([TopicPartition(topic, 0)])
    c.seek_to_beginning()
    out = []
    deadline = time.monotonic() + 30
    while len(out) < expected and time.monotonic() < deadline:
        out += [(m.offset, m.value.decode()) for m in c]
    out += [(m.offset, m.value.decode()) for m in c]  # nothing more may arrive
    c.close()
    return out


def ck_consume(bootstrap, topic, expected, isolation):
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"rc-{uuid.uuid4().hex[:6]}", "isolation.level": isolation,
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    out = []
    deadline = time.monotonic() + 30
    linger_until = None
    while time.monotonic() < deadline:
        for m in c.consume(500, 0.2):
            if m.error() is None:
                out.append((m.offset(), m.value().decode()))
        if len(out) >= expected:
            linger_until = linger_until or time.monotonic() + 1.0
            if time.monotonic() > linger_until:
                break
    c.close()
    return out


def aio_consume(bootstrap, topic, expected, isolation):
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def run():
        c = AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation, enable_auto_commit=False)
        await c.start()
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        await c.seek_to_beginning(tp)
        out = []
        deadline = time.monotonic() + 30
        linger_until = None
        while time.monotonic() < deadline:
            for msgs in (await c.getmany(timeout_ms=200)).values():
                out += [(m.offset, m.value.decode()) for m in msgs]
            if len(out) >= expected:
                linger_until = linger_until or time.monotonic() + 1.0
                if time.monotonic() > linger_until:
                    break
        await c.stop()
        return out

    return asyncio.run(run())


def java_consume(java_client, bootstrap, topic, expected, isolation):
    r = subprocess.run(java_cmd(java_client, "consume", "--bootstrap", bootstrap, "--topics", topic, "--partitions",
                                "1", "--isolation", isolation, "--expected", str(expected), "--timeout-ms", "30000",
                                "--linger-ms", "1000"), capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    return [(d["offset"], d["value"]) for d in map(json.loads, r.stdout.splitlines()) if d["type"] == "record"]


CONSUMERS = ["kafka-python", "confluent-kafka", "aiokafka", "java"]


@pytest.fixture(scope="module")
def interleaved(broker, java_client_optional):
    """One partition with transactions from four clients (interleaved), plus one
    transaction left open by a fifth producer; returns what a consumer must see."""
    topic = f"interleaved-{uuid.uuid4().hex[:6]}"
    with RawClient.to(broker.bootstrap) as c:
        assert c.create_topic(topic, 1) == 0
    producers = {"kp": lambda: kp_producer(broker.bootstrap, topic, "kp"),
                 "ck": lambda: ck_producer(broker.bootstrap, topic, "ck"),
                 "aio": lambda: aio_producer(broker.bootstrap, topic, "aio")}
    if java_client_optional is not None:
        producers["java"] = lambda: java_producer(java_client_optional, broker.bootstrap, topic, "java")
    errors = []

    def run(fn):
        try:
            fn()
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(fn,)) for fn in producers.values()]
    for th in threads:
        th.start()
    for th in threads:
        th.join(240)
    assert not errors, errors
    committed = {f"{tag}:{t}:{i}" for tag in producers for t in range(TXNS) if not aborted(t) for i in range(PER_TXN)}
    all_sent = {f"{tag}:{t}:{i}" for tag in producers for t in range(TXNS) for i in range(PER_TXN)}

    # a transaction left open by another producer holds the LSO from here on
    from kafka import KafkaProducer
    opener = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id=f"opener-{uuid.uuid4().hex[:6]}")
    opener.init_transactions()
    opener.begin_transaction()
    for i in range(10):
        opener.send(topic, value=f"open:0:{i}".encode(), partition=0)
    opener.flush()
    yield dict(topic=topic, committed=committed, all=all_sent, opener=opener,
               open_values={f"open:0:{i}" for i in range(10)})
    opener.close(timeout=2)


@pytest.fixture(scope="module")
def java_client_optional(request):
    try:
        return request.getfixturevalue("java_client")
    except pytest.skip.Exception:
        return None


def consume(client, broker, topic, expected, isolation, request):
    if client == "java":
        return java_consume(request.getfixturevalue("java_client"), broker.bootstrap, topic, expected, isolation)
    return {"kafka-python": kp_consume, "confluent-kafka": ck_consume, "aiokafka": aio_consume}[client](
        broker.bootstrap, topic, expected, isolation)


@pytest.mark.parametrize("client", CONSUMERS)
def test_read_committed_sees_exactly_the_committed_records(broker, interleaved, client, request):
    got = consume(client, broker, interleaved["topic"], len(interleaved["committed"]), "read_committed", request)
    offsets = [o for o, _ in got]
    values = [v for _, v in got]
    assert offsets == sorted(offsets), "records out of offset order"
    assert len(values) == len(set(values)), "a record was delivered twice"
    assert not set(values) & (interleaved["all"] - interleaved["committed"]), "an aborted record was delivered"
    assert not set(values) & interleaved["open_values"], "a record of the open transaction was delivered"
    assert set(values) == interleaved["committed"]


@pytest.mark.parametrize("client", CONSUMERS)
def test_read_uncommitted_sees_everything_but_control_records(broker, interleaved, client, request):
    everything = interleaved["all"] | interleaved["open_values"]
    got = consume(client, broker, interleaved["topic"], len(everything), "read_uncommitted", request)
    values = [v for _, v in got]
    assert set(values) == everything and len(values) == len(everything)


def test_open_transaction_becomes_visible_when_it_commits(broker, interleaved, request):
    # runs after the parametrized tests above (file order): now commit the open transaction
    interleaved["opener"].commit_transaction()
    want = interleaved["committed"] | interleaved["open_values"]
    for client in CONSUMERS:
        if client == "java" and request.getfixturevalue("java_client_optional") is None:
            continue
        got = consume(client, broker, interleaved["topic"], len(want), "read_committed", request)
        assert {v for _, v in got} == want, client


def test_open_transaction_holds_the_lso(broker):
    topic = f"lso-{uuid.uuid4().hex[:6]}"
    with RawClient.to(broker.bootstrap) as c:
        assert c.create_topic(topic, 1) == 0
        c.request(10, 3, {"key": "lso-holder", "key_type": 1})
        init = c.init_producer_id("lso-holder")
        pid, epoch = init.producer_id, init.producer_epoch
        assert c.produce(topic, 0, make_batch([b"before"] * 3)).error_code == 0  # offsets 0-2
        c.request(24, 3, {"v3_and_below_transactional_id": "lso-holder", "v3_and_below_producer_id": pid,
                          "v3_and_below_producer_epoch": epoch,
                          "v3_and_below_topics": [{"name": topic, "partitions": [0]}]})
        r = c.produce(topic, 0, make_batch([b"txn"] * 2, pid, epoch, 0, True), transactional_id="lso-holder")
        assert r.base_offset == 3
        for k in range(4):  # the high watermark moves on with non-transactional writes
            assert c.produce(topic, 0, make_batch([b"after-%d" % k])).error_code == 0
        assert c.list_offset(topic, 0, -1, isolation=0) == 9
        assert c.list_offset(topic, 0, -1, isolation=1) == 3  # LSO = first offset of the open txn
        p = c.fetch(topic, 0, 0, isolation=1)
        assert p.last_stable_offset == 3 and p.high_watermark == 9
        r = c.request(26, 3, {"transactional_id": "lso-holder", "producer_id": pid, "producer_epoch": epoch,
                              "committed": True})
        assert r.error_code == 0
        wait_until(lambda: c.list_offset(topic, 0, -1, isolation=1) == 10, 5)  # past the COMMIT marker
        assert c.list_offset(topic, 0, -1, isolation=0) == 10


def _txn_and_plain_log(c: RawClient, topic: str, tid: str) -> None:
    """p0 | x ABORT | p1 | y ABORT | p2 | z COMMIT | p3 | w ABORT on partition 0: offsets 0-11,
    aborted transactions starting at 1, 4 and 10."""
    c.request(10, 3, {"key": tid, "key_type": 1})
    init = c.init_producer_id(tid)
    pid, epoch = init.producer_id, init.producer_epoch
    seq = 0

    def txn(value: bytes, commit: bool) -> None:
        nonlocal seq
        c.request(24, 3, {"v3_and_below_transactional_id": tid, "v3_and_below_producer_id": pid,
                          "v3_and_below_producer_epoch": epoch,
                          "v3_and_below_topics": [{"name": topic, "partitions": [0]}]})
        assert c.produce(topic, 0, make_batch([value * 50], pid, epoch, seq, True), transactional_id=tid).error_code == 0
        seq += 1
        end = c.list_offset(topic, 0) + 1
        assert c.request(26, 3, {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch,
                                 "committed": commit}).error_code == 0
        wait_until(lambda: c.list_offset(topic, 0, isolation=1) == end, 10)

    for k, (value, commit) in enumerate(((b"x", False), (b"y", False), (b"z", True), (b"w", False))):
        assert c.produce(topic, 0, make_batch([b"p%d" % k * 30])).error_code == 0
        txn(value, commit)


def _aborted_lists(c: RawClient, topic: str, max_bytes: int) -> list:
    out = []
    for offset in range(12):
        p = c.fetch(topic, 0, offset, isolation=1, max_bytes=max_bytes)
        assert p.error_code == 0, p
        out.append([a.first_offset for a in p.aborted_transactions])
    return out


# Kafka 4.1's answers for this log (index.interval.bytes=1: every batch but the first is indexed),
# fetching offsets 0..11 with max_bytes 1 and 250: the list runs to the index entry at or after
# the end of the slice, not just the batches returned (and Kafka's search skips an exact match of
# the first entry, hence [1] at offset 0)
KAFKA_INTERVAL_1 = {
    1: [[1], [1], [1], [], [4], [4], [], [], [], [], [10], [10]],
    250: [[1], [1], [1, 4], [4], [4], [4], [], [], [10], [10], [10], [10]],
}


def test_aborted_list_is_bounded_by_the_offset_index_across_kill9(broker_factory):
    """read_committed Fetch lists aborted transactions up to Kafka's bound from the offset index
    (LocalLog.addAbortedTransactions), with the default interval up to the log end; the rebuilt
    index after kill -9 gives the same answers; a read_committed consumer fetching one batch at a
    time gets exactly the committed records."""
    b = broker_factory()
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic("dense", 1, {"index.interval.bytes": "1"}) == 0
        assert c.create_topic("sparse", 1) == 0
        _txn_and_plain_log(c, "dense", "dense-tx")
        _txn_and_plain_log(c, "sparse", "sparse-tx")
        for max_bytes, want in KAFKA_INTERVAL_1.items():
            assert _aborted_lists(c, "dense", max_bytes) == want, max_bytes
        assert _aborted_lists(c, "sparse", 1) == [[1, 4, 10]] * 3 + [[4, 10]] * 3 + [[10]] * 6
        # one fetch may return several segments here (Kafka's returns one): the list then covers
        # them all, whatever the first segment's bound
        assert c.create_topic("rolled", 1, {"segment.bytes": "300"}) == 0
        _txn_and_plain_log(c, "rolled", "rolled-tx")
        p = c.fetch("rolled", 0, 0, isolation=1)
        assert [h.last_offset for _, h in rec.iter_batch_headers(p.records)][-1] == 11
        assert [a.first_offset for a in p.aborted_transactions] == [1, 4, 10]
    b.restart(kill=True)  # the active segments' indexes are rebuilt from the log
    with RawClient.to(b.bootstrap) as c:
        for max_bytes, want in KAFKA_INTERVAL_1.items():
            assert _aborted_lists(c, "dense", max_bytes) == want, max_bytes
    got = kp_consume(b.bootstrap, "dense", 5, "read_committed", max_partition_fetch_bytes=1)
    assert [v for _, v in got] == ["p0" * 30, "p1" * 30, "p2" * 30, "z" * 50, "p3" * 30]
