"""Issue 8, acceptance 1: a hanging transaction is detected, found, aborted (KIP-664).

The coordinator's fault hook (MINIKAFKA_FAULT_SKIP_MARKER=topic:1) drops the
COMMIT marker of partition 1: the coordinator completes the transaction, the
partition keeps it open forever and its LSO stops. The late-transactions
metric turns positive after transaction.max.timeout.ms, ``minikafka
transactions find-hanging`` lists it, ``abort`` ends it, the LSO moves to the
log end and a read_committed consumer that was stuck receives the records
behind it (and none of the hanging transaction's)."""
from __future__ import annotations

import subprocess
import sys
import urllib.request

import json

from harness import REPO_ROOT, free_port, wait_transaction_done, wait_until
from minikafka.protocol import records as rec
from rawclient import RawClient, make_batch

MAX_TIMEOUT_MS = 4000


def scrape(port: int) -> dict[str, float]:
    """Prometheus text -> {'name{labels}': value} (labels as printed)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            out[key] = float(value)
    return out


def partition_metric(name: str, topic: str, partition: int) -> str:
    return f'{name}{{partition="{partition}",topic="{topic}"}}'


def cli(bootstrap: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "minikafka", "transactions", "--bootstrap-server", bootstrap, *args],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)


def table(stdout: str) -> list[dict[str, str]]:
    """kafka-transactions.sh tables: header row, then rows; cells padded and tab-terminated."""
    lines = [ln for ln in stdout.splitlines() if ln.strip()]
    headers = [h.strip() for h in lines[0].split("\t") if h.strip()]
    return [dict(zip(headers, [c.strip() for c in ln.split("\t")])) for ln in lines[1:]]


def test_hanging_transaction_detect_find_abort(broker_factory, unique_topic):
    topic = unique_topic("hang")
    mport = free_port()
    b = broker_factory(overrides={"transaction.max.timeout.ms": MAX_TIMEOUT_MS, "metrics.listener": f"127.0.0.1:{mport}"},
                       env={"MINIKAFKA_FAULT_SKIP_MARKER": f"{topic}:1"})
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic(topic, 2) == 0

    from confluent_kafka import Producer
    tid = f"{topic}-txn"
    p = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": tid, "linger.ms": 2,
                  "transaction.timeout.ms": MAX_TIMEOUT_MS})
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(5):
        p.produce(topic, value=f"txn-{i}".encode(), partition=0)
        p.produce(topic, value=f"hang-{i}".encode(), partition=1)
    p.flush(30)
    p.commit_transaction(30)  # the coordinator says committed; partition 1 never gets its marker
    wait_transaction_done(b.bootstrap, tid)

    # records written after the hanging transaction's start: a plain idempotent producer
    q = Producer({"bootstrap.servers": b.bootstrap, "enable.idempotence": True, "linger.ms": 2})
    for i in range(3):
        q.produce(topic, value=f"after-{i}".encode(), partition=1)
    assert q.flush(30) == 0

    with RawClient.to(b.bootstrap) as c:
        leo1 = c.list_offset(topic, 1)
        assert leo1 == 8  # 5 hanging records + 3 after them
        assert c.list_offset(topic, 1, isolation=1) == 0, "the hanging transaction must pin the LSO at its start"
        assert c.list_offset(topic, 0, isolation=1) == c.list_offset(topic, 0) == 6  # 5 records + marker

    # a read_committed consumer gets partition 0 and is stuck on partition 1
    from kafka import KafkaConsumer, TopicPartition
    consumer = KafkaConsumer(bootstrap_servers=b.bootstrap, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="earliest", isolation_level="read_committed",
                             fetch_max_wait_ms=100)
    got: dict[int, list[bytes]] = {0: [], 1: []}

    def poll_into() -> None:
        for tp, recs in consumer.poll(timeout_ms=200).items():
            got[tp.partition].extend(r.value for r in recs)
    try:
        tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        wait_until(lambda: poll_into() or len(got[0]) == 5, 30, message=lambda: f"read_committed got {got}")
        assert got[0] == [f"txn-{i}".encode() for i in range(5)]
        assert got[1] == []

        # detection: the metric is 0 while the transaction is young, positive once it is late
        m = scrape(mport)
        lag = partition_metric("kafka_log_log_laststableoffsetlag", topic, 1)
        dur = partition_metric("kafka_log_log_maxactivetransactionduration", topic, 1)
        assert m[lag] == leo1
        assert m[partition_metric("kafka_log_log_laststableoffsetlag", topic, 0)] == 0
        assert 0 <= m[dur] <= MAX_TIMEOUT_MS
        assert m["kafka_server_replicamanager_partitionswithlatetransactionscount"] == 0
        m = wait_until(lambda: (lambda s: s if s["kafka_server_replicamanager_partitionswithlatetransactionscount"] >= 1
                                else None)(scrape(mport)), 30)
        assert m["kafka_server_replicamanager_partitionswithlatetransactionscount"] == 1
        assert m[dur] > MAX_TIMEOUT_MS
        assert m[partition_metric("kafka_log_log_maxactivetransactionduration", topic, 0)] == 0
        poll_into()
        assert got[1] == [], "still stuck"

        # analysis: find-hanging lists exactly that partition's transaction
        minutes = str(MAX_TIMEOUT_MS / 60000)
        def hanging_rows():
            r = cli(b.bootstrap, "find-hanging", "--broker-id", "1", "--max-transaction-timeout", minutes)
            assert r.returncode == 0, r.stderr
            rows = [row for row in table(r.stdout) if row["Topic"] == topic]
            return rows or None
        rows = wait_until(hanging_rows, 30)
        assert len(rows) == 1, rows
        row = rows[0]
        assert row["Partition"] == "1" and row["StartOffset"] == "0"
        assert table(cli(b.bootstrap, "find-hanging", "--topic", topic, "--max-transaction-timeout", minutes).stdout)
        # the coordinator has moved on: the transactional id is complete and lists no partitions
        d = cli(b.bootstrap, "describe", "--transactional-id", tid)
        assert d.returncode == 0, d.stderr
        desc = table(d.stdout)[0]
        assert desc["TransactionState"] == "CompleteCommit" and desc["ProducerId"] == row["ProducerId"]
        prod = table(cli(b.bootstrap, "describe-producers", "--topic", topic, "--partition", "1").stdout)
        mine = [x for x in prod if x["ProducerId"] == row["ProducerId"]]
        assert mine and mine[0]["CurrentTransactionStartOffset"] == "0"

        # recovery: a wrong start offset is refused, the right one aborts
        bad = cli(b.bootstrap, "abort", "--topic", topic, "--partition", "1", "--start-offset", "3")
        assert bad.returncode == 1 and "Could not find any open transactions starting at offset 3" in bad.stderr
        ok = cli(b.bootstrap, "abort", "--topic", topic, "--partition", "1", "--start-offset", "0")
        assert ok.returncode == 0, ok.stderr + ok.stdout

        with RawClient.to(b.bootstrap) as c:
            assert c.list_offset(topic, 1) == leo1 + 1  # the ABORT marker
            assert c.list_offset(topic, 1, isolation=1) == leo1 + 1, "the LSO must reach the log end"
            # the partition never saw a coordinator epoch (-1): the tool sends 0, as Kafka's
            assert marker_at(c, topic, 1, leo1) == (False, 0)
        # the stuck consumer now receives the records behind the hanging transaction, not its records
        wait_until(lambda: poll_into() or len(got[1]) >= 3, 30, message=lambda: f"got {got}")
        poll_into()
        assert got[1] == [f"after-{i}".encode() for i in range(3)]
    finally:
        consumer.close()

    m = scrape(mport)
    assert m["kafka_server_replicamanager_partitionswithlatetransactionscount"] == 0
    assert m[partition_metric("kafka_log_log_laststableoffsetlag", topic, 1)] == 0
    assert m[partition_metric("kafka_log_log_maxactivetransactionduration", topic, 1)] == 0
    assert not [r for r in table(cli(b.bootstrap, "find-hanging", "--topic", topic, "--max-transaction-timeout",
                                     "0").stdout)]
    assert sum(v for k, v in m.items()
               if k.startswith('kafka_network_requestmetrics_requests_total{request="WriteTxnMarkers"')) >= 1


def marker_at(c: RawClient, topic: str, partition: int, offset: int) -> tuple[bool, int]:
    """(is_commit, coordinator_epoch) of the marker at ``offset``."""
    _, batches = c.fetch_all(topic, partition, start=offset)
    header, (record,) = batches[0]
    assert header.is_control and header.base_offset == offset, header
    ctype, coordinator_epoch = rec.parse_control_record(record)
    return ctype == rec.ControlRecordType.COMMIT, coordinator_epoch


def hang_after_commit(bootstrap: str, topic: str, strays: int = 1):
    """The classic hang, on a broker with transaction.partition.verification.enable=false (as
    before KIP-890): a transaction commits on ``topic``-0 (its marker carries coordinator epoch
    0), then the producer writes there outside any transaction its coordinator knows. Returns
    (send_stray, producer_id): ``send_stray(seq)`` writes one such batch, which hangs."""
    tid = f"{topic}-tid"
    with RawClient.to(bootstrap) as c:
        assert c.create_topic(topic, 1) == 0
        c.request(10, 3, {"key": tid, "key_type": 1})
        init = c.init_producer_id(tid)
        assert init.error_code == 0
        pid, epoch = init.producer_id, init.producer_epoch
        add = c.request(24, 3, {"v3_and_below_transactional_id": tid, "v3_and_below_producer_id": pid,
                                "v3_and_below_producer_epoch": epoch,
                                "v3_and_below_topics": [{"name": topic, "partitions": [0]}]})
        assert add.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0
        assert c.produce(topic, 0, make_batch([b"ok"], pid, epoch, 0, True), transactional_id=tid).error_code == 0
        assert c.request(26, 3, {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch,
                                 "committed": True}).error_code == 0
        wait_until(lambda: c.list_offset(topic, 0, isolation=1) == 2, 10)  # record + COMMIT

    def send_stray(seq: int) -> int:
        with RawClient.to(bootstrap) as c:
            r = c.produce(topic, 0, make_batch([b"stray"], pid, epoch, seq, True), transactional_id=tid)
            assert r.error_code == 0, r
            assert c.list_offset(topic, 0, isolation=1) == r.base_offset, "the stray write must pin the LSO"
            return r.base_offset
    return send_stray, pid


def test_cli_abort_after_earlier_coordinator_markers(broker_factory, unique_topic):
    """The partition saw coordinator epoch 0 from the producer's committed transaction: a marker
    with coordinator epoch -1 is fenced (TRANSACTION_COORDINATOR_FENCED, as Kafka), so `abort`
    must send the epoch DescribeProducers reports, as kafka-transactions.sh does."""
    topic = unique_topic("hang-late")
    b = broker_factory(overrides={"transaction.partition.verification.enable": False})
    send_stray, pid = hang_after_commit(b.bootstrap, topic)
    start = send_stray(1)
    prod = table(cli(b.bootstrap, "describe-producers", "--topic", topic, "--partition", "0").stdout)
    assert [(x["ProducerId"], x["LatestCoordinatorEpoch"], x["CurrentTransactionStartOffset"]) for x in prod] == \
        [(str(pid), "0", str(start))]
    ok = cli(b.bootstrap, "abort", "--topic", topic, "--partition", "0", "--start-offset", str(start))
    assert ok.returncode == 0, ok.stderr + ok.stdout
    with RawClient.to(b.bootstrap) as c:
        assert c.list_offset(topic, 0, isolation=1) == c.list_offset(topic, 0) == start + 2
        assert marker_at(c, topic, 0, start + 1) == (False, 0)
        aborted = c.fetch(topic, 0, 0, isolation=1).aborted_transactions
        assert [(a.producer_id, a.first_offset) for a in aborted] == [(pid, start)]
    # the legacy form with the coordinator epoch given: -1 is sent as 0, as Kafka's tool does
    start = send_stray(2)
    ok = cli(b.bootstrap, "abort", "--topic", topic, "--partition", "0", "--producer-id", str(pid),
             "--producer-epoch", "0", "--coordinator-epoch", "-1")
    assert ok.returncode == 0, ok.stderr + ok.stdout
    with RawClient.to(b.bootstrap) as c:
        assert c.list_offset(topic, 0, isolation=1) == c.list_offset(topic, 0) == start + 2


def test_java_admin_abort_transaction(java_client, broker_factory, unique_topic):
    """Java AdminClient 4.1: describeProducers + abortTransaction as kafka-transactions.sh abort
    builds it; a spec with coordinator epoch -1 after a coordinator's marker is fenced and writes
    nothing."""
    topic = unique_topic("hang-java")
    b = broker_factory(overrides={"transaction.partition.verification.enable": False})
    send_stray, pid = hang_after_commit(b.bootstrap, topic)
    start = send_stray(1)

    def admin_abort(*extra: str) -> dict:
        cmd = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", java_client.classpath,
               "AdminTool", "abort", "--bootstrap", b.bootstrap, "--topic", topic, "--partition", "0",
               "--start-offset", str(start), *extra]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        lines = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
        assert r.returncode == 0 and lines and lines[-1] == {"type": "summary", "ok": True}, r.stdout + r.stderr
        return lines[0]

    fenced = admin_abort("--coordinator-epoch", "-1")
    assert fenced["error"] == "TransactionCoordinatorFencedException", fenced
    with RawClient.to(b.bootstrap) as c:
        assert c.list_offset(topic, 0) == start + 1, "a fenced abort must write nothing"
    assert admin_abort() == {"type": "aborted", "producer_id": pid, "producer_epoch": 0, "coordinator_epoch": 0}
    with RawClient.to(b.bootstrap) as c:
        assert c.list_offset(topic, 0, isolation=1) == c.list_offset(topic, 0) == start + 2
        assert marker_at(c, topic, 0, start + 1) == (False, 0)
