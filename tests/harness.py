"""Integration-test harness: run the broker as a subprocess and drive it.

Everything here waits on *conditions* with deadlines (``wait_until``); nothing
sleeps as a way of synchronising with the broker.

    with BrokerProcess(tmp_path / "data") as b:      # started, ready
        produce(b.bootstrap, ...)
        b.kill()                                      # SIGKILL, like a crash
        b.start()                                     # same port, same data

BrokerProcess is the pytest plugin's (``minikafka.testing``, which also gives tests
the ``minikafka_broker`` fixture) plus the data-file helpers. The broker prints
exactly one line ``listening on PLAINTEXT://127.0.0.1:<port>`` to stdout once it
accepts connections; stdout and stderr both go to a log file next to the data dir
(``<data_dir>.broker.log``), which failing tests quote.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Iterable

# the broker subprocess, free ports, waiting on conditions: the pytest plugin's own (one copy)
from minikafka import testing
from minikafka.testing import BrokerError, free_port, tail, wait_until  # noqa: F401 (re-exported)

REPO_ROOT = Path(__file__).resolve().parents[1]

# Java client support ---------------------------------------------------------
JAVA_SRC_DIR = Path(__file__).resolve().parent / "java"
KAFKA_CLIENTS_VERSION = "4.1.0"


# --------------------------------------------------------------------------
# small utilities
# --------------------------------------------------------------------------

def transaction_state(bootstrap: str, transactional_id: str) -> str:
    """The coordinator's state of a transactional id (DescribeTransactions), "" if unknown."""
    from minikafka.admin.wire import WireClient
    with WireClient.to(bootstrap) as c:
        return c.request(65, 0, {"transactional_ids": [transactional_id]}).transaction_states[0].transaction_state


def wait_transaction_done(bootstrap: str, transactional_id: str, timeout: float = 15,
                          states: tuple[str, ...] = ("CompleteCommit", "CompleteAbort")) -> str:
    """Wait until the id's last transaction has all its markers written. EndTxn answers
    once the decision (Prepare*) is durable and the markers follow, as in Kafka, so a
    test that reads the log or the LSO right after a commit waits here, as a Kafka
    client would wait for the data."""
    return wait_until(lambda: (lambda st: st if st in states else None)(transaction_state(bootstrap, transactional_id)),
                      timeout, message=lambda: f"{transactional_id} is {transaction_state(bootstrap, transactional_id)}")


def unique_name(prefix: str = "t") -> str:
    """A topic name that is unique and legal in Kafka ([a-zA-Z0-9._-], <= 249)."""
    clean = re.sub(r"[^a-zA-Z0-9._-]+", "-", prefix).strip("-")[:180] or "t"
    return f"{clean}-{uuid.uuid4().hex[:8]}"


# --------------------------------------------------------------------------
# broker process
# --------------------------------------------------------------------------

class BrokerProcess(testing.BrokerProcess):
    """minikafka.testing's broker subprocess, plus what the project's tests look at: its data
    files. ``kill()`` is ``kill9()``."""

    kill = testing.BrokerProcess.kill9

    # -- data files ----------------------------------------------------------
    def partition_dir(self, topic: str, partition: int) -> Path:
        return self.data_dir / f"{topic}-{partition}"

    def active_segment(self, topic: str, partition: int) -> Path:
        """The ``.log`` file with the highest base offset for a partition."""
        logs = sorted(self.partition_dir(topic, partition).glob("*.log"))
        if not logs:
            raise BrokerError(f"no .log segments in {self.partition_dir(topic, partition)}"
                              f" (dir has: {sorted(p.name for p in self.data_dir.iterdir())})")
        return logs[-1]


@contextlib.contextmanager
def metrics_broker(data_dir: Path, name: str):
    """A started broker whose Prometheus metrics listener is on a free port
    (``metrics_port``), closed on exit."""
    port = free_port()
    b = BrokerProcess(data_dir, name=name, overrides={"metrics.listener": f"127.0.0.1:{port}"})
    b.metrics_port = port
    try:
        b.start()
        yield b
    finally:
        b.close()


# --------------------------------------------------------------------------
# deterministic records shared by Python and Java (ClientTool.java mirrors it)
# --------------------------------------------------------------------------
# Record i of a run tagged ``tag``:
#   key       = "k<i % KEY_SPACE>"                    (keys repeat: order per key matters)
#   value     = "<tag>:<i>:" + "abcdefghijklmnopqrstuvwxyz0123456789"[..] repeated to
#               length VALUE_BASE + i % VALUE_SPREAD
#   headers   = [("idx", "<i>"), ("tag", "<tag>"), ("bin", bytes([i % 256, (i*7) % 256, 0, 255]))]
#   timestamp = ts_base + i
KEY_SPACE = 997
VALUE_BASE = 40
VALUE_SPREAD = 80
_ALPHABET = b"abcdefghijklmnopqrstuvwxyz0123456789"


def record_key(i: int) -> bytes:
    return b"k%d" % (i % KEY_SPACE)


def record_value(tag: str, i: int) -> bytes:
    head = f"{tag}:{i}:".encode()
    n = VALUE_BASE + i % VALUE_SPREAD
    body = (_ALPHABET * (n // len(_ALPHABET) + 1))[: max(0, n - len(head))]
    return head + body


def record_headers(tag: str, i: int) -> list[tuple[str, bytes]]:
    return [("idx", str(i).encode()), ("tag", tag.encode()),
            ("bin", bytes([i % 256, (i * 7) % 256, 0, 255]))]


def make_record(tag: str, i: int, ts_base: int) -> tuple[bytes, bytes, list[tuple[str, bytes]], int]:
    return record_key(i), record_value(tag, i), record_headers(tag, i), ts_base + i


def record_index(value: bytes, tag: str) -> int:
    """Recover i from a value produced by ``record_value``."""
    t, i, _ = value.split(b":", 2)
    if t.decode() != tag:
        raise ValueError(f"record from run {t!r}, expected {tag!r}")
    return int(i)


def now_ms() -> int:
    return int(time.time() * 1000)


def confluent_on_delivery(tag: str, acked: dict, errors: list):
    """A confluent-kafka delivery callback: record i's (partition, offset) into `acked`,
    failures into `errors`."""
    def on_delivery(err, msg):
        try:
            i = record_index(msg.value(), tag)
        except Exception:
            i = None
        if err is not None:
            errors.append(f"record {i}: {err}")
        else:
            acked[i] = (msg.partition(), msg.offset())
    return on_delivery


def confluent_send(prod, topic: str, tag: str, i: int, ts_base: int, on_delivery) -> None:
    """Produce record i of `tag` (make_record), waiting for queue room instead of failing."""
    k, v, h, ts = make_record(tag, i, ts_base)
    while True:
        try:
            prod.produce(topic, value=v, key=k, headers=h, timestamp=ts, on_delivery=on_delivery)
            return
        except BufferError:
            prod.poll(0.05)


def verify_records(consumed: Iterable[tuple], tag: str, count: int, ts_base: int,
                   partitions: int | None = None, context: str = "") -> dict[int, list[int]]:
    """Check consumed records against the deterministic set ``0..count-1``.

    ``consumed`` yields ``(partition, offset, key, value, headers, timestamp)``
    with headers as a list of ``(str, bytes)``.  Checks: every record exactly
    once, byte-exact key/value/headers/timestamp, offsets strictly increasing
    and per-partition order equal to send order, and each key in one
    partition.  Returns ``{partition: [i, ...]}``.  ``context`` (e.g. a broker
    log tail) is appended to failure messages.
    """
    per_part: dict[int, list[int]] = {}
    last_offset: dict[int, int] = {}
    key_part: dict[bytes, int] = {}
    seen: set[int] = set()
    problems: list[str] = []

    def bad(msg: str) -> None:
        if len(problems) < 20:
            problems.append(msg)

    n = 0
    for rec in consumed:
        p, off, key, value, headers, ts = rec[:6]
        n += 1
        if len(rec) > 6 and rec[6] != "CreateTime":
            bad(f"p{p}@{off}: timestamp type {rec[6]!r}, expected CreateTime")
        try:
            i = record_index(value, tag)
        except Exception as exc:
            bad(f"p{p}@{off}: unparseable value {value[:60]!r}: {exc}")
            continue
        if i in seen:
            bad(f"p{p}@{off}: duplicate record {i}")
            continue
        if not 0 <= i < count:
            bad(f"p{p}@{off}: record index {i} out of range")
            continue
        seen.add(i)
        ek, ev, eh, ets = make_record(tag, i, ts_base)
        if key != ek:
            bad(f"p{p}@{off} record {i}: key {key!r} != {ek!r}")
        if value != ev:
            bad(f"p{p}@{off} record {i}: value {value!r} != {ev!r}")
        headers = [(hk, bytes(hv) if hv is not None else None) for hk, hv in (headers or [])]
        if headers != eh:
            bad(f"p{p}@{off} record {i}: headers {headers!r} != {eh!r}")
        if ts != ets:
            bad(f"p{p}@{off} record {i}: timestamp {ts} != {ets}")
        if off <= last_offset.get(p, -1):
            bad(f"p{p}: offset {off} after {last_offset[p]} (not increasing)")
        last_offset[p] = off
        lst = per_part.setdefault(p, [])
        if lst and i <= lst[-1]:
            bad(f"p{p}@{off}: record {i} after record {lst[-1]} (per-partition order broken)")
        lst.append(i)
        if key_part.setdefault(key, p) != p:
            bad(f"key {key!r} in partitions {key_part[key]} and {p}")
    missing = count - len(seen)
    if missing:
        miss = sorted(set(range(count)) - seen)
        bad(f"{missing} of {count} records missing (first: {miss[:10]})")
    if partitions is not None:
        bad_parts = [p for p in per_part if not 0 <= p < partitions]
        if bad_parts:
            bad(f"records from unexpected partitions {bad_parts}")
    if problems:
        raise AssertionError(f"{len(problems)}+ problems in {n} consumed records:\n  "
                             + "\n  ".join(problems) + context)
    return per_part


# --------------------------------------------------------------------------
# Java ClientTool
# --------------------------------------------------------------------------

def spark_env(tmp: Path) -> dict[str, str]:
    """Environment for a Spark application the tests launch: its scratch (spark-*, blockmgr-*, and the
    JVM's extracted lz4/snappy libraries) under ``tmp``, not /tmp. A job the tests SIGKILL never runs the
    shutdown hooks that delete them: each run left ~500 MB in /tmp."""
    scratch = tmp / "spark-scratch"
    scratch.mkdir(parents=True, exist_ok=True)
    return {"SPARK_LOCAL_DIRS": str(scratch), "JAVA_TOOL_OPTIONS": f"-Djava.io.tmpdir={scratch}"}


def ext_dir() -> Path:
    return Path(os.environ.get("MINIKAFKA_EXT") or (REPO_ROOT.parent / "ext")).resolve()


def java_classpath_jars(version: str = KAFKA_CLIENTS_VERSION) -> list[Path] | str:
    """The jars for kafka-clients ``version``, or a reason string if unusable."""
    d = ext_dir() / f"kafka-clients-{version}"
    if not (d / f"kafka-clients-{version}.jar").is_file():
        return (f"kafka-clients {version} jars not found in {d} (set MINIKAFKA_EXT or run"
                f" `python tests/java/setup_jars.py --ext {ext_dir()}`)")
    for tool in ("javac", "java"):
        if shutil.which(tool) is None:
            return f"`{tool}` not on PATH (need a JDK 17+)"
    return sorted(d.glob("*.jar"))


class JavaClient:
    """Compiled ClientTool plus the classpath to run it."""

    def __init__(self, classes_dir: Path, jars: list[Path]):
        self.classes_dir = classes_dir
        self.jars = jars
        self.classpath = os.pathsep.join([str(classes_dir)] + [str(j) for j in jars])

    @classmethod
    def build(cls, out_dir: Path, version: str = KAFKA_CLIENTS_VERSION) -> "JavaClient | str":
        jars = java_classpath_jars(version)
        if isinstance(jars, str):
            return jars
        out_dir.mkdir(parents=True, exist_ok=True)
        srcs = sorted(str(p) for p in JAVA_SRC_DIR.glob("*.java"))
        proc = subprocess.run(
            ["javac", "-nowarn", "-encoding", "UTF-8", "-d", str(out_dir), "-cp",
             os.pathsep.join(str(j) for j in jars)] + srcs,
            capture_output=True, text=True, timeout=180)
        if proc.returncode != 0:
            raise RuntimeError(f"javac failed:\n{proc.stdout}\n{proc.stderr}")
        return cls(out_dir, jars)

    def command(self, mode: str, *args: str) -> list[str]:
        # Small heap and a quick-start JIT: we start several JVMs per test run.
        return ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-Xshare:auto", "-cp", self.classpath, "ClientTool", mode, *args]

    def run(self, mode: str, *args: str, timeout: float = 120,
            broker: BrokerProcess | None = None, check: bool = True) -> "JavaResult":
        cmd = self.command(mode, *[str(a) for a in args])
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise AssertionError(
                f"ClientTool {mode} timed out after {timeout}s\nstdout tail:\n"
                f"{tail(_s(exc.stdout), 20)}\nstderr tail:\n{tail(_s(exc.stderr), 40)}"
                + (broker.describe() if broker else "")) from None
        res = JavaResult(cmd, proc.returncode, proc.stdout, proc.stderr)
        if check and proc.returncode != 0:
            raise AssertionError(f"ClientTool {mode} exited {proc.returncode}\n{res.explain()}"
                                 + (broker.describe() if broker else ""))
        return res


def _s(b: bytes | str | None) -> str:
    if b is None:
        return ""
    return b.decode("utf-8", "replace") if isinstance(b, bytes) else b


class JavaResult:
    def __init__(self, cmd: list[str], returncode: int, stdout: str, stderr: str):
        self.cmd, self.returncode, self.stdout, self.stderr = cmd, returncode, stdout, stderr

    def json_lines(self) -> list[dict]:
        import json
        out = []
        for line in self.stdout.splitlines():
            line = line.strip()
            if line.startswith("{"):
                out.append(json.loads(line))
        return out

    def summary(self) -> dict:
        """The last ``{"type": "summary", ...}`` line."""
        for obj in reversed(self.json_lines()):
            if obj.get("type") == "summary":
                return obj
        raise AssertionError(f"ClientTool printed no summary\n{self.explain()}")

    def explain(self) -> str:
        return (f"command: {' '.join(self.cmd[-12:])}\nstdout tail:\n{tail(self.stdout, 10)}"
                f"\nstderr tail:\n{tail(self.stderr, 40)}")


# --------------------------------------------------------------------------
# Python client drivers (one code path per client, same deterministic data)
# --------------------------------------------------------------------------
# Consumed records are tuples (partition, offset, key, value, headers, timestamp,
# timestamp_type) with headers as [(str, bytes)] and timestamp_type one of
# "CreateTime", "LogAppendTime", or something else for anything unexpected.

PY_CLIENTS = ("kafka-python", "confluent-kafka", "aiokafka")
CLIENTS = PY_CLIENTS + ("java",)
COMPRESSIONS = ("none", "gzip", "snappy", "lz4", "zstd")


def run_concurrently(*calls: Callable[[], Any], timeout: float = 300) -> list[Any]:
    """Run zero-argument callables in daemon threads; return their results in
    order, re-raising the first exception.  Daemon threads (unlike a
    ThreadPoolExecutor's) cannot keep a timed-out test run from exiting."""
    import threading
    results: list[Any] = [None] * len(calls)
    excs: list[BaseException | None] = [None] * len(calls)

    def runner(k: int) -> None:
        try:
            results[k] = calls[k]()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            excs[k] = exc

    threads = [threading.Thread(target=runner, args=(k,), daemon=True) for k in range(len(calls))]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    stuck = [k for k, t in enumerate(threads) if t.is_alive()]
    if stuck:
        raise TimeoutError(f"calls {stuck} still running after {timeout}s")
    for e in excs:
        if e is not None:
            raise e
    return results


class ProduceResult:
    def __init__(self, acks: dict[int, tuple[int, int]], errors: list[str], seconds: float):
        self.acks = acks          # record index -> (partition, offset)
        self.errors = errors
        self.seconds = seconds

    def end_offsets(self) -> dict[int, int]:
        """Per partition: highest acknowledged offset + 1."""
        out: dict[int, int] = {}
        for p, o in self.acks.values():
            out[p] = max(out.get(p, 0), o + 1)
        return out

    def check(self, count: int, context: str = "") -> None:
        if self.errors or len(self.acks) != count:
            raise AssertionError(f"produce: {len(self.acks)}/{count} acknowledged,"
                                 f" {len(self.errors)} errors; first errors: {self.errors[:5]}"
                                 + context)


def _kp_bootstrap(bootstrap: str) -> dict:
    return {"bootstrap_servers": bootstrap, "request_timeout_ms": 30000}


def create_topic(client: str, bootstrap: str, topic: str, partitions: int,
                 java: "JavaClient | None" = None, configs: dict | None = None,
                 broker: BrokerProcess | None = None) -> None:
    """Create ``topic`` through ``client``'s admin API (aiokafka: its own)."""
    configs = {k: str(v) for k, v in (configs or {}).items()}
    if client == "kafka-python":
        from kafka.admin import KafkaAdminClient
        admin = KafkaAdminClient(**_kp_bootstrap(bootstrap))
        try:
            admin.create_topics({topic: {"num_partitions": partitions, "replication_factor": 1,
                                         "configs": configs}})
        finally:
            admin.close()
    elif client == "confluent-kafka":
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient({"bootstrap.servers": bootstrap})
        futs = admin.create_topics([NewTopic(topic, num_partitions=partitions,
                                             replication_factor=1, config=configs)],
                                   operation_timeout=30, request_timeout=30)
        futs[topic].result(timeout=60)
    elif client == "aiokafka":
        import asyncio
        from aiokafka.admin import AIOKafkaAdminClient, NewTopic

        async def run():
            admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
            await admin.start()
            try:
                resp = await admin.create_topics(
                    [NewTopic(topic, num_partitions=partitions, replication_factor=1,
                              topic_configs=configs)])
            finally:
                await admin.close()
            for t in resp.topic_errors:
                if t[1] != 0:
                    raise AssertionError(f"aiokafka CreateTopics {t[0]}: error {t[1:]}")
        asyncio.run(run())
    elif client == "java":
        assert java is not None, "java client needs the java_client fixture"
        args = ["--bootstrap", bootstrap, "--topic", topic, "--partitions", partitions]
        for k, v in configs.items():
            args += ["--topic-config", f"{k}={v}"]
        s = java.run("create-topic", *args, broker=broker).summary()
        assert s["partitions"] == partitions, s
    else:
        raise ValueError(client)


def produce(client: str, bootstrap: str, topic: str, tag: str, count: int, ts_base: int,
            compression: str = "none", acks: str = "all", linger_ms: int = 10,
            start: int = 0, java: "JavaClient | None" = None, extra: dict | None = None,
            timeout: float = 120, broker: BrokerProcess | None = None) -> ProduceResult:
    """Send records ``start..start+count-1`` (see ``make_record``); wait for all acks."""
    extra = dict(extra or {})
    t0 = time.monotonic()
    acked: dict[int, tuple[int, int]] = {}
    errors: list[str] = []
    idx = range(start, start + count)
    if client == "kafka-python":
        from kafka import KafkaProducer
        cfg = dict(_kp_bootstrap(bootstrap), acks=acks if acks == "all" else int(acks),
                   enable_idempotence=acks == "all", linger_ms=linger_ms, batch_size=64 * 1024,
                   compression_type=None if compression == "none" else compression)
        cfg.update(extra)
        prod = KafkaProducer(**cfg)
        try:
            futs = []
            for i in idx:
                k, v, h, ts = make_record(tag, i, ts_base)
                futs.append((i, prod.send(topic, value=v, key=k, headers=h, timestamp_ms=ts)))
            try:
                prod.flush(timeout=timeout)
            except Exception as exc:  # KafkaTimeoutError: some never completed
                errors.append(f"flush({timeout}): {exc!r}")
            # Never block per future: after a flush timeout that would take
            # count seconds.  Undelivered ones are reported as errors.
            undelivered = 0
            for i, f in futs:
                if not f.is_done:
                    undelivered += 1
                elif f.failed():
                    errors.append(f"record {i}: {f.exception!r}")
                else:
                    acked[i] = (f.value.partition, f.value.offset)
            if undelivered:
                errors.append(f"{undelivered} records never completed")
        finally:
            prod.close(timeout=10)
    elif client == "confluent-kafka":
        from confluent_kafka import Producer
        cfg = {"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": linger_ms,
               "compression.type": compression, "enable.idempotence": acks == "all",
               "batch.size": 256 * 1024, "message.timeout.ms": int(timeout * 1000)}
        cfg.update(extra)

        on_delivery = confluent_on_delivery(tag, acked, errors)
        prod = Producer(cfg)
        for n, i in enumerate(idx):
            confluent_send(prod, topic, tag, i, ts_base, on_delivery)
            if n % 500 == 0:
                prod.poll(0)
        left = prod.flush(timeout)
        if left:
            errors.append(f"{left} messages still queued after flush({timeout})")
    elif client == "aiokafka":
        import asyncio
        from aiokafka import AIOKafkaProducer

        async def run():
            cfg = dict(bootstrap_servers=bootstrap, acks=acks if acks == "all" else int(acks),
                       linger_ms=linger_ms, max_batch_size=64 * 1024, request_timeout_ms=30000,
                       compression_type=None if compression == "none" else compression)
            cfg.update(extra)
            prod = AIOKafkaProducer(**cfg)
            await prod.start()
            futs: list = []
            pending: set = set()
            try:
                for i in idx:
                    k, v, h, ts = make_record(tag, i, ts_base)
                    futs.append(await prod.send(topic, value=v, key=k, headers=h,
                                                timestamp_ms=ts))
                if futs:
                    _, pending = await asyncio.wait(futs, timeout=timeout)
            finally:
                try:
                    await asyncio.wait_for(prod.stop(), 30)
                except Exception as exc:
                    errors.append(f"producer stop: {exc!r}")
            if pending:
                errors.append(f"{len(pending)} records never completed within {timeout}s")
            for i, f in zip(idx, futs):
                if not f.done():
                    continue
                r = f.exception() if not f.cancelled() else asyncio.CancelledError()
                r = r or f.result()
                if isinstance(r, BaseException):
                    errors.append(f"record {i}: {r!r}")
                else:
                    acked[i] = (r.partition, r.offset)
        asyncio.run(run())
    elif client == "java":
        assert java is not None, "java client needs the java_client fixture"
        args = ["--bootstrap", bootstrap, "--topic", topic, "--tag", tag, "--count", count,
                "--start", start, "--ts-base", ts_base, "--compression", compression,
                "--acks", acks, "--linger-ms", linger_ms, "--print-acks", "true"]
        for k, v in extra.items():
            args += ["--producer-config", f"{k}={v}"]
        res = java.run("produce", *args, timeout=timeout + 30, broker=broker, check=False)
        for obj in res.json_lines():
            if obj.get("type") == "ack":
                acked[obj["i"]] = (obj["p"], obj["o"])
        s = res.summary() if res.returncode in (0, 2) else None
        if res.returncode != 0:
            errors.append(f"ClientTool produce exit {res.returncode}: "
                          f"{(s or {}).get('first_error')}\n{res.explain()}")
    else:
        raise ValueError(client)
    return ProduceResult(acked, errors, time.monotonic() - t0)


def consume(client: str, bootstrap: str, topic: str, partitions: int, expected: int,
            timeout: float = 60, java: "JavaClient | None" = None,
            isolation_level: str = "read_uncommitted",
            broker: BrokerProcess | None = None) -> list[tuple]:
    """Assign all partitions, seek to beginning, read until ``expected`` records
    or ``timeout`` seconds; returns what was read (may be short: callers check)."""
    out: list[tuple] = []
    deadline = time.monotonic() + timeout
    if client == "kafka-python":
        from kafka import KafkaConsumer, TopicPartition
        c = KafkaConsumer(**_kp_bootstrap(bootstrap), group_id=None, enable_auto_commit=False,
                          auto_offset_reset="earliest", isolation_level=isolation_level,
                          max_poll_records=5000)
        try:
            tps = [TopicPartition(topic, p) for p in range(partitions)]
            c.assign(tps)
            c.seek_to_beginning(*tps)
            while len(out) < expected and time.monotonic() < deadline:
                for tp, recs in c.poll(timeout_ms=500).items():
                    for r in recs:
                        out.append((r.partition, r.offset, r.key, r.value, r.headers,
                                    r.timestamp,
                                    {0: "CreateTime", 1: "LogAppendTime"}.get(r.timestamp_type,
                                                                              r.timestamp_type)))
        finally:
            c.close()
    elif client == "confluent-kafka":
        from confluent_kafka import (OFFSET_BEGINNING, TIMESTAMP_CREATE_TIME,
                                     TIMESTAMP_LOG_APPEND_TIME, Consumer, TopicPartition)
        c = Consumer({"bootstrap.servers": bootstrap,
                      # librdkafka insists on a group.id; with assign() and no
                      # commits it only ever does FindCoordinator with it.
                      "group.id": f"unused-{uuid.uuid4().hex[:8]}",
                      "enable.auto.commit": False, "enable.auto.offset.store": False,
                      "auto.offset.reset": "earliest", "check.crcs": True,
                      "isolation.level": isolation_level})
        tt = {TIMESTAMP_CREATE_TIME: "CreateTime", TIMESTAMP_LOG_APPEND_TIME: "LogAppendTime"}
        try:
            c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
            while len(out) < expected and time.monotonic() < deadline:
                for m in c.consume(num_messages=5000, timeout=0.5):
                    if m.error():
                        raise AssertionError(f"confluent consumer error: {m.error()}")
                    t, ts = m.timestamp()
                    out.append((m.partition(), m.offset(), m.key(), m.value(),
                                m.headers() or [], ts, tt.get(t, t)))
        finally:
            c.close()
    elif client == "aiokafka":
        import asyncio
        from aiokafka import AIOKafkaConsumer, TopicPartition

        async def run():
            c = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                                 enable_auto_commit=False, auto_offset_reset="earliest",
                                 isolation_level=isolation_level, request_timeout_ms=30000)
            await c.start()
            try:
                tps = [TopicPartition(topic, p) for p in range(partitions)]
                c.assign(tps)
                await c.seek_to_beginning(*tps)
                while len(out) < expected and time.monotonic() < deadline:
                    batch = await c.getmany(timeout_ms=500, max_records=5000)
                    for tp, recs in batch.items():
                        for r in recs:
                            out.append((r.partition, r.offset, r.key, r.value, list(r.headers),
                                        r.timestamp,
                                        {0: "CreateTime", 1: "LogAppendTime"}.get(
                                            r.timestamp_type, r.timestamp_type)))
            finally:
                await c.stop()
        asyncio.run(run())
    elif client == "java":
        import base64
        assert java is not None, "java client needs the java_client fixture"
        res = java.run("consume", "--bootstrap", bootstrap, "--topic", topic,
                       "--partitions", partitions, "--expected", expected,
                       "--timeout-ms", int(timeout * 1000), "--isolation-level", isolation_level,
                       timeout=timeout + 60, broker=broker, check=False)
        if res.returncode not in (0, 3):
            raise AssertionError(f"ClientTool consume exit {res.returncode}\n{res.explain()}"
                                 + (broker.describe() if broker else ""))
        b = base64.b64decode
        for o in res.json_lines():
            if o.get("type") == "record":
                out.append((o["p"], o["o"], None if o["k"] is None else b(o["k"]),
                            None if o["v"] is None else b(o["v"]),
                            [(hk, None if hv is None else b(hv)) for hk, hv in o["h"]],
                            o["ts"], o["tt"]))
    else:
        raise ValueError(client)
    return out


def end_offsets(bootstrap: str, topic: str, partitions: int,
                isolation_level: str = "read_uncommitted") -> dict[int, int]:
    """ListOffsets(latest) per partition, via kafka-python."""
    from kafka import KafkaConsumer, TopicPartition
    c = KafkaConsumer(**_kp_bootstrap(bootstrap), group_id=None, enable_auto_commit=False,
                      isolation_level=isolation_level)
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        return {tp.partition: off for tp, off in c.end_offsets(tps).items()}
    finally:
        c.close()


def beginning_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    """ListOffsets(earliest) per partition, via kafka-python."""
    from kafka import KafkaConsumer, TopicPartition
    c = KafkaConsumer(**_kp_bootstrap(bootstrap), group_id=None, enable_auto_commit=False)
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        return {tp.partition: off for tp, off in c.beginning_offsets(tps).items()}
    finally:
        c.close()
