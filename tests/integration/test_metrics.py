"""Issue 8, acceptance 4: the Prometheus endpoint (``metrics.listener``) is scraped
and its values match the broker's state as clients see it over the wire."""
from __future__ import annotations

import time
import urllib.error
import urllib.request

import pytest

from harness import metrics_broker, wait_transaction_done, wait_until
from rawclient import RawClient

KEY_REQUESTS = ("FindCoordinator", "InitProducerId", "AddPartitionsToTxn", "Produce", "EndTxn", "Fetch",
                "WriteTxnMarkers")


class Scrape:
    def __init__(self, port: int):
        from prometheus_client.parser import text_string_to_metric_families
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            assert r.status == 200
            assert r.headers["Content-Type"].startswith("text/plain")
            text = r.read().decode()
        self.samples: dict[tuple[str, tuple], float] = {}
        self.types: dict[str, str] = {}
        for fam in text_string_to_metric_families(text):  # also validates the exposition format
            self.types[fam.name] = fam.type
            for s in fam.samples:
                self.samples[(s.name, tuple(sorted(s.labels.items())))] = s.value

    def get(self, name: str, **labels) -> float:
        return self.samples[(name, tuple(sorted((k, str(v)) for k, v in labels.items())))]

    def requests(self, request: str, versions=None) -> float:
        """kafka_network_requestmetrics_requests_total of one API, summed over its versions
        (or over ``versions`` only)."""
        return sum(v for (n, labels), v in self.samples.items()
                   if n == "kafka_network_requestmetrics_requests_total" and dict(labels)["request"] == request
                   and (versions is None or int(dict(labels)["version"]) in versions))

    def request_versions(self, request: str) -> set[int]:
        return {int(dict(labels)["version"]) for (n, labels) in self.samples
                if n == "kafka_network_requestmetrics_requests_total" and dict(labels)["request"] == request}

    def part(self, name: str, topic: str, partition: int) -> float:
        return self.get(f"kafka_log_log_{name}", topic=topic, partition=partition)


@pytest.fixture(scope="module")
def mbroker(tmp_path_factory):
    with metrics_broker(tmp_path_factory.mktemp("metrics") / "data", "metrics-broker") as b:
        yield b


def test_partition_and_transaction_metrics_match_broker_state(mbroker, unique_topic):
    b = mbroker
    topic = unique_topic("met")
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic(topic, 2) == 0
    from kafka import KafkaProducer
    plain = KafkaProducer(bootstrap_servers=b.bootstrap, linger_ms=2)
    for i in range(7):
        plain.send(topic, value=f"p{i}".encode(), partition=0)
        plain.send(topic, value=f"q{i}".encode(), partition=1)
    plain.flush()
    plain.close()
    tid = f"{topic}-tid"
    txn = KafkaProducer(bootstrap_servers=b.bootstrap, transactional_id=tid, linger_ms=2)
    txn.init_transactions()
    txn.begin_transaction()
    for i in range(4):
        txn.send(topic, value=f"t{i}".encode(), partition=0)
    txn.flush()
    opened = int(time.time() * 1000)
    try:
        with RawClient.to(b.bootstrap) as c:
            leo = {p: c.list_offset(topic, p) for p in (0, 1)}
            lso = {p: c.list_offset(topic, p, isolation=1) for p in (0, 1)}
        assert leo == {0: 11, 1: 7} and lso == {0: 7, 1: 7}
        m = Scrape(b.metrics_port)
        for p in (0, 1):
            assert m.part("logendoffset", topic, p) == leo[p]
            assert m.part("laststableoffsetlag", topic, p) == leo[p] - lso[p]
            assert m.part("logstartoffset", topic, p) == 0
            assert m.part("numlogsegments", topic, p) == len(list(b.partition_dir(topic, p).glob("*.log")))
            assert m.part("size", topic, p) == sum(f.stat().st_size for f in b.partition_dir(topic, p).glob("*.log"))
        age = m.part("maxactivetransactionduration", topic, 0)
        assert 0 <= age <= int(time.time() * 1000) - opened + 1000
        assert m.part("maxactivetransactionduration", topic, 1) == 0
        assert m.get("kafka_server_replicamanager_partitionswithlatetransactionscount") == 0

        from kafka.admin import KafkaAdminClient
        admin = KafkaAdminClient(bootstrap_servers=b.bootstrap)
        try:
            listed = admin.list_transactions()[1]
            by_state: dict[str, int] = {}
            for t in listed:
                by_state[t.state.value] = by_state.get(t.state.value, 0) + 1
            for state, n in by_state.items():
                assert m.get("kafka_coordinator_transaction_transactionalids", state=state) == n, state
            assert m.get("kafka_coordinator_transaction_transactionalids", state="Ongoing") >= 1
            topics = admin.describe_topics()
            npart = sum(len(t["partitions"]) for t in topics)
        finally:
            admin.close()
        assert m.get("kafka_server_replicamanager_partitioncount") == npart
        assert m.types["kafka_log_log_laststableoffsetlag"] == "gauge"

        # the age grows while the transaction stays open (no sleeping: wait for the clock)
        wait_until(lambda: Scrape(b.metrics_port).part("maxactivetransactionduration", topic, 0) > age + 100, 10)
        txn.commit_transaction()
        wait_transaction_done(b.bootstrap, tid)  # the markers follow the EndTxn answer
        m = Scrape(b.metrics_port)
        assert m.part("laststableoffsetlag", topic, 0) == 0
        assert m.part("logendoffset", topic, 0) == leo[0] + 1  # the COMMIT marker
        assert m.part("maxactivetransactionduration", topic, 0) == 0
        assert m.get("kafka_coordinator_transaction_transactionalids", state="CompleteCommit") >= 1
    finally:
        txn.close()


def test_request_counts_and_latency_histograms(mbroker, unique_topic):
    b = mbroker
    topic = unique_topic("req")
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic(topic, 1) == 0
    before = Scrape(b.metrics_port)
    for name in KEY_REQUESTS:  # always present, even before the first such request
        assert before.request_versions(name), name  # one sample per version it serves
        before.get("kafka_network_requestmetrics_totaltime_seconds_count", request=name)
    assert before.types["kafka_network_requestmetrics_totaltime_seconds"] == "histogram"
    assert before.types["kafka_network_requestmetrics_requests"] == "counter"
    n = 7
    with RawClient.to(b.bootstrap) as c:
        for _ in range(n):
            r = c.request(61, 0, {"topics": [{"name": topic, "partition_indexes": [0]}]})  # DescribeProducers
            assert r.topics[0].partitions[0].error_code == 0
        conns = Scrape(b.metrics_port).get("kafka_server_socketservermetrics_connection_count")
        assert conns >= 1
    after = Scrape(b.metrics_port)
    req = "DescribeProducers"

    def delta(name, **labels):
        return after.get(name, **labels) - before.get(name, **labels)
    assert after.requests(req) - before.requests(req) == n
    assert after.requests(req, {0}) - before.requests(req, {0}) == n  # the version sent
    assert delta("kafka_network_requestmetrics_totaltime_seconds_count", request=req) == n
    assert delta("kafka_network_requestmetrics_totaltime_seconds_bucket", request=req, le="+Inf") == n
    assert delta("kafka_network_requestmetrics_totaltime_seconds_sum", request=req) > 0
    buckets = sorted((float(dict(k[1])["le"]), v) for k, v in after.samples.items()
                     if k[0] == "kafka_network_requestmetrics_totaltime_seconds_bucket"
                     and dict(k[1])["request"] == req)
    assert [v for _, v in buckets] == sorted(v for _, v in buckets)  # cumulative


def test_metrics_endpoint_http(mbroker):
    base = f"http://127.0.0.1:{mbroker.metrics_port}"
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(f"{base}/nope", timeout=10)
    assert e.value.code == 404
    req = urllib.request.Request(f"{base}/metrics", method="HEAD")
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status == 200 and r.read() == b""
