"""The compose files, for real.

1. As users get them (``docker compose config``): the broker keeps its own
   container network; every listener has an advertised listener of the same
   name and port, the host-facing one is published on the host's loopback at
   the same port and advertised as localhost, the container-facing one is
   advertised under the broker's name and is what the clients bootstrap from.
   Merged with the tests' overrides (tests/docker/compose*.host.yml): host
   networking, every address 127.0.0.1, nothing published.
2. docker-compose.broker.yml up to healthy; both listeners serve clients.
3. The shop stack (broker, topics, the kafka-python transactional shop
   service and purchase generator, the PySpark read_committed pipeline, the
   checker) to the checker's verdict and the pipeline's exact totals; then
   more purchases, the broker container SIGKILLed and started again mid-run,
   and the same checks again.
"""
from __future__ import annotations

import json
import time
from collections import defaultdict
from pathlib import Path

import pytest

import sandbox
from dockerkit import Compose, docker, fact
from harness import REPO_ROOT, ext_dir, free_port, unique_name, wait_until

HERE = Path(__file__).resolve().parent
SHOP = [REPO_ROOT / "docker/docker-compose.yml", HERE / "compose.host.yml"]
BROKER = [REPO_ROOT / "docker/docker-compose.broker.yml", HERE / "compose.broker.host.yml"]

# Spark's Kafka connector, mounted into the pipeline container (no Maven here):
# $MINIKAFKA_EXT/spark-jars (spark-sql-kafka, token provider, commons-pool2) and
# $MINIKAFKA_EXT/kafka-clients-3.9.0 (tests/java/setup_jars.py). Without them the
# pipeline runs on the project's own Python source (also read_committed).
SPARK_JARS = ext_dir() / "spark-jars"
KAFKA_CLIENTS = ext_dir() / "kafka-clients-3.9.0"
CONNECTOR = ["spark-sql-kafka-0-10_2.13-4.0.0.jar", "spark-token-provider-kafka-0-10_2.13-4.0.0.jar",
             "commons-pool2-2.12.0.jar"]
HAVE_JARS = all((SPARK_JARS / j).is_file() for j in CONNECTOR) and \
    (KAFKA_CLIENTS / "kafka-clients-3.9.0.jar").is_file()
SOURCE = "kafka" if HAVE_JARS else "python"


@pytest.fixture(scope="session")
def compose_cmd() -> list[str]:
    cmd = sandbox.compose_command()
    if cmd is None:
        pytest.skip(f"no Docker Compose >= {'.'.join(map(str, sandbox.COMPOSE_MIN))}"
                    " (python3 tests/docker/sandbox.py up)")
    return cmd


def listeners(text: str) -> dict[str, tuple[str, int]]:
    out = {}
    for item in text.split(","):
        name, rest = item.split("://")
        host, port = rest.rsplit(":", 1)
        out[name] = (host, int(port))
    return out


def broker_service(cfg: dict) -> tuple[str, dict]:
    return next((n, s) for n, s in cfg["services"].items() if s["image"] == "minikafka:latest")


# --------------------------------------------------------------------------
# 1. configuration
# --------------------------------------------------------------------------

@pytest.mark.parametrize("files", [SHOP, BROKER], ids=["shop", "broker"])
def test_listener_mapping(compose_cmd, files):
    variables = {"MK_PORT": "40001", "MK_PORT_INTERNAL": "40002", "MK_PORT_SECURED": "40003", "MK_PURCHASES": "1",
                 "MK_RATE": "1", "MK_SPARK_DATA": "/tmp", "MK_PIPELINE_SOURCE": "kafka",
                 "MK_SPARK_JARS_DIR": "/tmp", "MK_KAFKA_CLIENTS_DIR": "/tmp"}
    # as users get it
    cfg = Compose(compose_cmd, files[:1], "mk-config", variables).config()
    name, broker = broker_service(cfg)
    env = broker["environment"]
    lst, adv = listeners(env["KAFKA_LISTENERS"]), listeners(env["KAFKA_ADVERTISED_LISTENERS"])
    protocols = dict(kv.split(":") for kv in env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].split(","))
    assert set(lst) == set(adv) and set(lst) <= set(protocols), (lst, adv, protocols)
    assert "network_mode" not in broker and "default" in broker["networks"]
    published = {int(p["target"]): p for p in broker["ports"]}
    internal = set()
    for lname, (host, port) in lst.items():
        ahost, aport = adv[lname]
        assert host == "0.0.0.0" and aport == port, (lname, lst[lname], adv[lname])
        if port in published:  # for clients on the host
            assert published[port]["host_ip"] == "127.0.0.1"
            assert published[port]["published"] == str(port)
            assert ahost == "localhost"
        else:                  # for containers on the compose network
            assert ahost in (name, broker.get("hostname")), (lname, ahost)
            internal.add(f"{ahost}:{aport}")
    # the host's clients get EXTERNAL, and the SASL example listener where the file has one
    assert 1 <= len(published) <= 2 and internal, (published, internal)
    for sname, svc in cfg["services"].items():
        bootstrap = (svc.get("environment") or {}).get("KAFKA_BOOTSTRAP_SERVERS")
        if bootstrap:
            assert bootstrap in internal, f"{sname} bootstraps from {bootstrap}, not {internal}"

    # with the tests' override: the host's network, loopback only, nothing published
    cfg = Compose(compose_cmd, files, "mk-config", variables).config()
    for sname, svc in cfg["services"].items():
        assert svc.get("network_mode") == "host" and not svc.get("ports"), sname
        assert "hostname" not in svc and "networks" not in svc, sname
        bootstrap = (svc.get("environment") or {}).get("KAFKA_BOOTSTRAP_SERVERS")
        if bootstrap:
            assert bootstrap == "127.0.0.1:40002", (sname, bootstrap)
    env = broker_service(cfg)[1]["environment"]
    assert env["KAFKA_LISTENERS"] == env["KAFKA_ADVERTISED_LISTENERS"]
    assert {h for h, _ in listeners(env["KAFKA_LISTENERS"]).values()} == {"127.0.0.1"}
    if "spark-pipeline" in cfg["services"]:
        assert cfg["services"]["spark-pipeline"]["environment"]["SPARK_LOCAL_IP"] == "127.0.0.1"


# --------------------------------------------------------------------------
# 2. the broker alone
# --------------------------------------------------------------------------

def test_broker_compose_up_healthy_and_serving(images, compose_cmd):
    from kafka import KafkaConsumer, KafkaProducer
    external, internal, secured = free_port(), free_port(), free_port()
    c = Compose(compose_cmd, BROKER, unique_name("mk-broker"),
                {"MK_PORT": str(external), "MK_PORT_INTERNAL": str(internal), "MK_PORT_SECURED": str(secured)})
    try:
        t0 = time.monotonic()
        c("up", "-d", "--wait", "--no-build", timeout=180)
        fact(f"docker-compose.broker.yml: up -> healthy in {time.monotonic() - t0:.1f} s"
             " (health interval 2 s)")
        assert c.state("kafka")["Health"]["Status"] == "healthy"
        p = KafkaProducer(bootstrap_servers=f"127.0.0.1:{external}", acks="all")
        p.send("compose-roundtrip", b"via EXTERNAL").get(timeout=30)
        p.close()
        consumer = KafkaConsumer("compose-roundtrip", bootstrap_servers=f"127.0.0.1:{internal}",
                                 auto_offset_reset="earliest", consumer_timeout_ms=10_000)
        assert [m.value for m in consumer] == [b"via EXTERNAL"]
        consumer.close()
        # the SASL example listener: user demo from the compose file's JAAS line
        sasl = dict(security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                    sasl_plain_username="demo", sasl_plain_password="demo-secret")
        p = KafkaProducer(bootstrap_servers=f"127.0.0.1:{secured}", acks="all", **sasl)
        p.send("compose-roundtrip", b"via SECURED").get(timeout=30)
        p.close()
    finally:
        c.down()


# --------------------------------------------------------------------------
# 3. the shop stack
# --------------------------------------------------------------------------

def expected_revenue(n: int) -> dict[str, dict]:
    """The pipeline's table after purchases 0..n-1, from the generator's own model."""
    from examples.shop.model import Purchase
    out: dict[str, dict] = defaultdict(lambda: {"orders": 0, "quantity": 0, "revenue_cents": 0})
    for i in range(n):
        p = Purchase.generate(i)
        row = out[p.product_id]
        row["orders"] += 1
        row["quantity"] += p.quantity
        row["revenue_cents"] += p.quantity * p.unit_price_cents
    return dict(out)


def committed_end(bootstrap: str, topic: str) -> int:
    """Sum of the topic's last stable offsets."""
    from kafka import KafkaConsumer, TopicPartition
    c = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed",
                      request_timeout_ms=10_000)
    try:
        tps = [TopicPartition(topic, p) for p in sorted(c.partitions_for_topic(topic) or [])]
        return sum(c.end_offsets(tps).values()) if tps else 0
    finally:
        c.close()


def checker(c: Compose, expect: int) -> dict:
    res = c("run", "--rm", "--no-deps", "checker", "examples.shop.checker", "--expect",
            str(expect), "--wait", "240", timeout=400, check=False)
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("{")]
    assert res.returncode == 0 and lines, f"checker exited {res.returncode}:\n{res.stdout[-3000:]}" \
        f"\n{res.stderr[-3000:]}\n{c.logs()}"
    verdict = json.loads(lines[-1])
    assert verdict["ok"] and verdict["purchases"] == verdict["invoices"] == \
        verdict["shipments"] == expect, verdict
    return verdict


def wait_for_revenue(c: Compose, output: Path, n: int) -> None:
    from minikafka.pipeline.results import read_revenue
    want = expected_revenue(n)
    wait_until(lambda: read_revenue(output) == want, timeout=300, interval=1,
               message=lambda: f"pipeline totals {read_revenue(output)} != {want}\n"
                               f"{c.logs(60)}")


@pytest.mark.parametrize("source", [SOURCE])
def test_shop_stack_exactly_once_through_a_broker_restart(images, compose_cmd, tmp_path, source):
    pytest.importorskip("pyarrow", reason="pyarrow reads the pipeline's Parquet output")
    n1, n2 = 600, 1500
    external, internal = free_port(), free_port()
    data = tmp_path / "spark-data"
    data.mkdir()
    data.chmod(0o777)  # the pipeline runs as uid 1000
    empty = tmp_path / "no-jars"
    empty.mkdir()
    env = {"MK_PORT": str(external), "MK_PORT_INTERNAL": str(internal),
           "MK_PURCHASES": str(n1), "MK_RATE": "300", "MK_SPARK_DATA": str(data),
           "MK_PIPELINE_SOURCE": source,
           "MK_SPARK_JARS_DIR": str(SPARK_JARS if HAVE_JARS else empty),
           "MK_KAFKA_CLIENTS_DIR": str(KAFKA_CLIENTS if HAVE_JARS else empty),
           "MK_SPARK_KAFKA_JARS": ("/opt/spark-kafka-jars,/opt/kafka-clients/kafka-clients-3.9.0.jar"
                                   if HAVE_JARS else "")}
    c = Compose(compose_cmd, SHOP, unique_name("mk-shop"), env)
    bootstrap = f"127.0.0.1:{external}"
    try:
        t0 = time.monotonic()
        c("up", "-d", "--wait", "--no-build", timeout=300)
        fact(f"shop stack ({source} source): up -> healthy and running in"
             f" {time.monotonic() - t0:.1f} s")
        checker(c, n1)
        wait_for_revenue(c, data / "revenue", n1)
        fact(f"shop stack: {n1} purchases checked, pipeline totals exact,"
             f" {time.monotonic() - t0:.1f} s after up")
        pipeline = c.state("spark-pipeline")
        assert pipeline["Running"] and pipeline.get("Restarting") is False, pipeline
        restarts = int(docker("inspect", "--format", "{{.RestartCount}}",
                              c.container("spark-pipeline")).stdout)
        assert restarts == 0, f"the pipeline crash-looped:\n{c.logs(80)}"

        # More purchases; the broker is killed and started again while they flow.
        before = committed_end(bootstrap, "purchases")
        c.env.update(MK_PURCHASES=str(n2), MK_RATE="100")
        c("up", "-d", "--no-deps", "--no-build", "purchases")
        assert before >= n1, before
        wait_until(lambda: committed_end(bootstrap, "purchases") >= before + 200, timeout=120,
                   interval=0.2, message=lambda: c.logs())
        assert c.state("purchases")["Running"], "the generator finished before the restart"
        c("kill", "-s", "SIGKILL", "broker")
        c("start", "broker")
        wait_until(lambda: c.state("broker").get("Health", {}).get("Status") == "healthy",
                   timeout=120, interval=0.5, message=lambda: c.logs())
        checker(c, n2)
        wait_for_revenue(c, data / "revenue", n2)
        fact(f"shop stack: {n2} purchases through a broker SIGKILL + start, checked, pipeline"
             f" totals exact, {time.monotonic() - t0:.1f} s after up")
    finally:
        c.down()
