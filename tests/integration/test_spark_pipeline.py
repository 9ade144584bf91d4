"""Issue 7, acceptance 1 and 2: the Spark revenue job reads read_committed, exactly once.

The job runs as a subprocess in local mode over an
``invoices`` topic written in transactions:

1. nine transactions of invoices, every third aborted, plus one transaction
   left open (partition 0 only): the job's Parquet output equals the
   committed-only aggregate;
2. another committed transaction (partition 1) shows up while the open one
   still does not (exact totals);
3. the open transaction commits, one more committed and one more aborted
   transaction follow, the job is SIGKILLed (in the middle of the micro-batch
   when we catch it) and restarted from its checkpoint: the totals are exactly
   the committed aggregate, nothing lost and nothing counted twice.

``python``: the minikafka Python data source (always runs: CI), launched by
``spark-submit --master ... pipeline/__main__.py`` as on a cluster.  ``kafka``
(``python -m minikafka.pipeline --jars``): Spark's built-in Kafka source with
``kafka.isolation.level=read_committed``, which needs the connector jars: ``MINIKAFKA_SPARK_KAFKA_JARS`` (comma-separated
paths), or ``$MINIKAFKA_EXT/spark-jars/`` + ``$MINIKAFKA_EXT/kafka-clients-3.9.0/``
when both are there; skipped with the reason otherwise.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

from harness import REPO_ROOT, ext_dir, spark_env, tail, wait_until

pytest.importorskip("pyspark", reason="pyspark not installed (pip install -e '.[spark]')")

from minikafka.pipeline.results import complete_snapshots, read_revenue  # noqa: E402

pytestmark = pytest.mark.slow

SPARK_VERSION = "4.0.0"
JARS_ENV = "MINIKAFKA_SPARK_KAFKA_JARS"
CONNECTOR_JARS = (f"spark-sql-kafka-0-10_2.13-{SPARK_VERSION}.jar",
                  f"spark-token-provider-kafka-0-10_2.13-{SPARK_VERSION}.jar",
                  "commons-pool2-2.12.0.jar")
KAFKA_CLIENTS = "kafka-clients-3.9.0"  # what spark-sql-kafka 4.0.0 is built against
PRODUCTS = ["espresso", "grinder", "kettle", "mug"]


def kafka_connector_jars() -> str | None:
    """Comma-separated connector jars, or None (see the module docstring)."""
    env = os.environ.get(JARS_ENV, "").strip()
    if env:
        missing = [j for j in env.split(",") if not Path(j).is_file()]
        if missing:
            pytest.fail(f"{JARS_ENV} names missing files: {missing}")
        return env
    ext = ext_dir()
    jars = [ext / "spark-jars" / j for j in CONNECTOR_JARS]
    jars.append(ext / KAFKA_CLIENTS / f"{KAFKA_CLIENTS}.jar")
    if all(j.is_file() for j in jars):
        return ",".join(str(j) for j in jars)
    return None


def java_missing() -> str | None:
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "no JDK (java not on PATH, JAVA_HOME unset): PySpark needs Java 17+"
    return None


# --------------------------------------------------------------------------
# invoices and their expected aggregate
# --------------------------------------------------------------------------

class Invoices:
    """Writes invoice transactions and keeps the committed-only aggregate."""

    def __init__(self, bootstrap: str, topic: str):
        from kafka import KafkaProducer
        self.topic = topic
        self.n = 0
        self.expected: dict[str, dict] = defaultdict(lambda: {"orders": 0, "quantity": 0,
                                                             "revenue_cents": 0})
        self.producers = {}
        for name in ("a", "b"):
            # "b" keeps a transaction open while the job starts and catches up twice (up
            # to 150 + 60 s of waiting): with the client's default 60 s transaction timeout
            # a loaded machine's slow Spark start let the broker abort it (ProducerFenced
            # at its commit). 10 minutes is under the broker's transaction.max.timeout.ms.
            p = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"{topic}-{name}",
                              linger_ms=2, transaction_timeout_ms=600_000)
            p.init_transactions()
            self.producers[name] = p

    def _invoice(self) -> tuple[bytes, dict]:
        self.n += 1
        n = self.n
        product = PRODUCTS[n % len(PRODUCTS)]
        qty = 1 + n % 3
        price = 250 + 100 * PRODUCTS.index(product)
        inv = {"invoice_id": f"inv-{n}", "purchase_id": f"p-{n}", "user_id": f"u-{n % 7}",
               "product_id": product, "quantity": qty, "unit_price_cents": price,
               "amount_cents": qty * price, "currency": "EUR", "purchased_at": n}
        return f"p-{n}".encode(), inv

    def begin(self, producer: str = "a", count: int = 8, partition: int | None = None) -> list:
        p = self.producers[producer]
        p.begin_transaction()
        sent = []
        for _ in range(count):
            key, inv = self._invoice()
            p.send(self.topic, key=key, value=json.dumps(inv).encode(), partition=partition)
            sent.append(inv)
        p.flush()
        return sent

    def end(self, sent: list, commit: bool, producer: str = "a") -> None:
        p = self.producers[producer]
        if commit:
            p.commit_transaction()
            for inv in sent:
                e = self.expected[inv["product_id"]]
                e["orders"] += 1
                e["quantity"] += inv["quantity"]
                e["revenue_cents"] += inv["amount_cents"]
        else:
            p.abort_transaction()

    def txn(self, commit: bool, **kw) -> None:
        producer = kw.get("producer", "a")
        self.end(self.begin(**kw), commit, producer=producer)

    def snapshot(self) -> dict:
        return {k: dict(v) for k, v in self.expected.items()}

    def close(self) -> None:
        for p in self.producers.values():
            p.close()


# --------------------------------------------------------------------------
# the job as a subprocess
# --------------------------------------------------------------------------

# spark-submit's master, set apart from the job's own default (local[2]): the job must not override it
SUBMIT_MASTER = "local[3]"


class Job:
    """``python -m minikafka.pipeline`` or, with ``submit``, docs/operations.md's ``spark-submit ... pipeline/__main__.py``."""

    def __init__(self, tmp: Path, bootstrap: str, topic: str, source: str, jars: str | None,
                 submit: bool = False):
        self.out, self.ckpt = tmp / "revenue", tmp / "checkpoint"
        self.log_path = tmp / f"job-{source}.log"
        self.spark_env = spark_env(tmp)
        args = ["--source", source, "--bootstrap", bootstrap, "--topic", topic,
                "--output", str(self.out), "--checkpoint", str(self.ckpt), "--trigger", "1 second"]
        if submit:
            spark_submit = Path(sys.executable).parent / "spark-submit"
            self.cmd = [str(spark_submit) if spark_submit.exists() else "spark-submit",
                        "--master", SUBMIT_MASTER, "--driver-memory", "512m",
                        *(["--jars", jars] if jars else []),
                        str(REPO_ROOT / "pipeline" / "__main__.py"), *args]
        else:
            self.cmd = [sys.executable, "-m", "minikafka.pipeline", *args,
                        "--master", "local[2]", "--conf", "spark.driver.memory=512m"]
            if jars:
                self.cmd += ["--jars", jars]
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    def start(self) -> None:
        self.starts += 1
        with open(self.log_path, "ab") as f:
            f.write(f"\n=== test: start #{self.starts} at {time.strftime('%H:%M:%S')} ===\n".encode())
            # cwd: Spark leaves artifacts/spark-* behind when killed; not in the checkout
            self.proc = subprocess.Popen(self.cmd, cwd=self.out.parent, stdin=subprocess.DEVNULL,
                                         stdout=f, stderr=subprocess.STDOUT,
                                         env=dict(os.environ, **self.spark_env, PYTHONUNBUFFERED="1",
                                                  PYSPARK_PYTHON=sys.executable,
                                                  # this checkout's minikafka (and its pipeline/), also when
                                                  # spark-submit runs pipeline/__main__.py as a script
                                                  PYTHONPATH=str(REPO_ROOT)),
                                         start_new_session=True)

    def kill(self) -> None:
        """SIGKILL the job's whole process group (driver JVM, Python workers)."""
        with open(self.log_path, "ab") as f:
            f.write(f"\n=== test: SIGKILL at {time.strftime('%H:%M:%S')} ===\n".encode())
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(30)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def describe(self, lines: int = 50) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        text = "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("at "))
        return f"\n--- spark job log {self.log_path} (last {lines} lines) ---\n{tail(text, lines)}"

    def batches(self, kind: str) -> list[int]:
        d = self.ckpt / kind
        return sorted(int(p.name) for p in d.iterdir() if p.name.isdigit()) if d.is_dir() else []

    def wait_for_totals(self, expected: dict, timeout: float, what: str) -> None:
        seen = {}

        def ok() -> bool:
            if not self.alive():
                raise AssertionError(f"spark job exited ({self.proc.returncode}) while waiting"
                                     f" for {what}" + self.describe())
            seen["got"] = read_revenue(self.out)
            return seen["got"] == expected

        wait_until(ok, timeout=timeout, interval=0.2,
                   message=lambda: f"{what}: output {seen.get('got')} != expected {expected}"
                                   + self.describe())

    def close(self) -> None:
        if self.alive():
            self.kill()


# --------------------------------------------------------------------------

# The python variant (the one CI always runs) is launched as docs/operations.md's "Outgrowing one
# machine" launches it on a cluster: spark-submit with the master, pipeline/__main__.py.
@pytest.mark.parametrize("source", ["python", "kafka"])
def test_revenue_job_read_committed_exactly_once(broker, unique_topic, tmp_path, source):
    reason = java_missing()
    if reason:
        pytest.skip(reason)
    jars = None
    if source == "kafka":
        jars = kafka_connector_jars()
        if jars is None:
            pytest.skip(f"Spark's Kafka connector jars not supplied: set {JARS_ENV} to the"
                        f" comma-separated paths of {', '.join(CONNECTOR_JARS)} and"
                        f" {KAFKA_CLIENTS}.jar (pyspark {SPARK_VERSION}), or put them in"
                        f" {ext_dir()}/spark-jars and {ext_dir()}/{KAFKA_CLIENTS}")
    from kafka.admin import KafkaAdminClient, NewTopic
    topic = unique_topic(f"invoices-{source}")
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic(topic, 2, 1)])
    admin.close()

    inv = Invoices(broker.bootstrap, topic)
    job = Job(tmp_path, broker.bootstrap, topic, source, jars, submit=source == "python")
    try:
        # (1) committed and aborted transactions, then one left open on partition 0
        for t in range(9):
            inv.txn(commit=(t % 3 != 2))
        open_txn = inv.begin(producer="b", count=6, partition=0)
        committed_only = inv.snapshot()
        job.start()
        job.wait_for_totals(committed_only, timeout=150, what="committed-only aggregate")
        if source == "python":
            assert f"master={SUBMIT_MASTER}," in job.log_path.read_text(), \
                "the job overrode spark-submit's --master" + job.describe()

        # (2) the job moves on (partition 1) while the open transaction stays invisible
        inv.txn(commit=True, partition=1, count=5)
        job.wait_for_totals(inv.snapshot(), timeout=60,
                            what="new committed data while a transaction is open")

        # (3) commit the open one, add more, kill the job mid-batch, restart it
        inv.end(open_txn, commit=True, producer="b")
        inv.txn(commit=True)
        inv.txn(commit=False)
        planned = max(job.batches("offsets"))
        wait_until(lambda: not job.alive() or max(job.batches("offsets")) > planned,
                   timeout=60, interval=0.02,
                   message=lambda: "the job planned no batch for the new data" + job.describe())
        assert job.alive(), "the spark job died on its own" + job.describe()
        in_flight = max(job.batches("offsets")) not in job.batches("commits")
        job.kill()
        job.start()
        final = inv.snapshot()
        job.wait_for_totals(final, timeout=150, what="totals after restart from checkpoint")
        # Totals only grow, so a double-counted re-run would overshoot `final`
        # and never match; the newest snapshot is exactly it.
        assert complete_snapshots(job.out), "no snapshots"
        assert read_revenue(job.out) == final
        print(f"[{source}] ok: {sum(v['orders'] for v in final.values())} committed invoices,"
              f" {inv.n} written; killed with batch {max(job.batches('offsets'))} "
              f"{'in flight' if in_flight else 'already committed'}")
    finally:
        job.close()
        inv.close()
