#!/usr/bin/env python3
"""Chaos campaign: exactly-once transactions through broker crashes.

Starts a minikafka broker (127.0.0.1, free port, its own data dir) and runs
against it, as separate processes:

* transactional producers from two client libraries (kafka-python and
  confluent-kafka), each with a stable ``transactional.id``; every transaction
  spreads 1-8 records over 1-3 partitions and is committed (or, one in five,
  aborted); each producer keeps a journal of what it began, what it asked to
  commit and what the client confirmed;
* read_committed consumers (one per library) reading every partition from
  the beginning for the whole campaign.

Meanwhile the broker is crashed over and over: ``kill -9`` at a random moment
after some progress, alternating with a restart that arms ``MINIKAFKA_FAULT``
at each point of the coordinator in turn (txn.before_prepare,
txn.after_prepare, txn.after_first_marker, txn.after_markers), so the broker
exits there during the next EndTxn (or while finishing a PREPARE_* on start).
Producers are killed too and restarted: a new instance's init_transactions
fences its predecessor. A producer whose client gives up or wedges (kafka-python
3.0.x can, see examples/shop/txn.py) exits and is restarted the same way.

At the end the producers stop, every transactional id is fenced once more (so
nothing stays open), and when the LSO reaches the high watermark the checker
reads the topic read_committed and read_uncommitted and compares with the
journals and with what the live consumers delivered:

* lost: records of a transaction whose commit_transaction returned, missing;
* duplicates: a record delivered twice (read_committed, or by a consumer), and
  duplicate appends (the same record twice in the log, even aborted);
* aborted visible: a record of a transaction that was aborted, or never asked
  to commit, delivered to a read_committed reader (the checker's or a live
  consumer's), or a live consumer delivering what is not in the final view;
* torn: a transaction partly visible (some of its records, not all);
* order: per partition, one producer's records out of the order it sent them.

The last line on stdout is a JSON summary with the figures (crashes,
transactions committed/aborted, records checked, each violation count).
Exit status 0 when every violation count is 0 and the crash target was
reached, 1 on a violation, 2 when the campaign could not do what was asked.

    python tools/chaos.py --crashes 100 [--max-seconds 900] [--json out.json]
                          [--seed N] [--workdir DIR] [--keep]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # run as a script: broker/ and examples/ live in the repo root
    sys.path.insert(0, str(REPO_ROOT))

FAULTS = ("txn.before_prepare", "txn.after_prepare", "txn.after_first_marker", "txn.after_markers")
FAULT_EXIT = 86  # the broker's exit code at a fault point
READY_RE = re.compile(r"listening on PLAINTEXT://127\.0\.0\.1:(\d+)")
TOPIC = "chaos"

# producer exit codes
EXIT_STOPPED, EXIT_FENCED, EXIT_REBUILD = 0, 3, 4


def now() -> float:
    return time.monotonic()


def log(msg: str) -> None:
    print(f"[chaos {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ====================================================================== records
# A record's value says where it comes from: "<tid>|<instance>|<txn>|<i>|<n>", record i
# of the n records of transaction <txn> of the <instance>-th process with that id.

def record_value(tid: str, inst: int, txn: int, i: int, n: int) -> bytes:
    return f"{tid}|{inst}|{txn}|{i}|{n}".encode()


def parse_value(value: bytes) -> tuple[str, tuple[int, int], int, int] | None:
    """-> (transaction key "tid|inst|txn", (txn, i) order key within the instance, i, n)."""
    try:
        tid, inst, txn, i, n = value.decode().split("|")
        return f"{tid}|{inst}|{txn}", (int(txn), int(i)), int(i), int(n)
    except (UnicodeDecodeError, ValueError, AttributeError):
        return None


class Journal:
    """A producer's journal: one JSON line per event, appended with a single write() so a
    kill -9 never leaves half a line that matters (a torn last line is ignored)."""

    def __init__(self, path: str):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def write(self, **event) -> None:
        os.write(self.fd, (json.dumps(event, separators=(",", ":")) + "\n").encode())


def read_journal(path: Path) -> list[dict]:
    out = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass  # a line cut by kill -9
    return out


# ==================================================================== producers
class Stop:
    """SIGTERM: finish the current transaction, then stop. A worker whose campaign is gone
    (killed without cleaning up) stops too."""

    def __init__(self):
        self._requested = False
        self.parent = os.getppid()
        signal.signal(signal.SIGTERM, self.set)
        signal.signal(signal.SIGINT, self.set)

    def set(self, *_):
        self._requested = True

    @property
    def requested(self) -> bool:
        return self._requested or os.getppid() != self.parent


def plan_transaction(rng: random.Random, partitions: int, abort_ratio: float) -> tuple[list[int], bool]:
    """(partition of each record, commit?) for the next transaction."""
    k = min(partitions, rng.choices((1, 2, 3), weights=(1, 3, 3))[0])
    parts = rng.sample(range(partitions), k)
    n = rng.randint(max(1, k), 8)
    return [parts[i % k] for i in range(n)], rng.random() >= abort_ratio


def run_producer_kafka_python(a: argparse.Namespace) -> int:
    from kafka import KafkaProducer
    from kafka import errors as kafka_errors
    from kafka.errors import KafkaError

    from examples.shop.txn import StuckClientError, bounded

    fenced = tuple(getattr(kafka_errors, n) for n in ("ProducerFencedError", "InvalidProducerEpochError")
                   if hasattr(kafka_errors, n))
    stop, rng, journal = Stop(), random.Random(a.seed), Journal(a.journal)
    p = KafkaProducer(bootstrap_servers=[a.bootstrap], client_id=f"{a.tid}-{a.instance}",
                      transactional_id=a.tid, enable_idempotence=True, acks="all", linger_ms=2,
                      transaction_timeout_ms=a.transaction_timeout_ms, request_timeout_ms=10_000,
                      delivery_timeout_ms=30_000, max_block_ms=30_000, reconnect_backoff_max_ms=500,
                      retry_backoff_ms=50)
    try:
        p.init_transactions()
        journal.write(e="I")
        txn = 0
        while not stop.requested:
            txn += 1
            key = f"{a.tid}|{a.instance}|{txn}"
            parts, commit = plan_transaction(rng, a.partitions, a.abort_ratio)
            n = len(parts)
            journal.write(e="B", t=key, n=n)
            p.begin_transaction()
            futures = [p.send(a.topic, key=a.tid.encode(), value=record_value(a.tid, a.instance, txn, i, n),
                              partition=part) for i, part in enumerate(parts)]
            try:
                for f in futures:
                    f.get(timeout=a.call_timeout_s)
            except KafkaError as exc:
                if isinstance(exc, fenced):
                    raise
                # a failed send makes the transaction abortable: abort it, carry on
                bounded(p, "abort_transaction", a.call_timeout_s)
                journal.write(e="A", t=key)
                continue
            journal.write(e="E", t=key, c=commit)
            bounded(p, "commit_transaction" if commit else "abort_transaction", a.call_timeout_s)
            journal.write(e="C" if commit else "A", t=key)
            if a.pause_ms:
                time.sleep(a.pause_ms / 1000)
    except fenced as exc:
        log(f"{a.tid}#{a.instance}: fenced ({exc!r})")
        os._exit(EXIT_FENCED)
    except (KafkaError, StuckClientError) as exc:
        # the transaction's fate is for the next instance's init_transactions to settle
        log(f"{a.tid}#{a.instance}: {exc!r}: exiting for a fresh instance")
        os._exit(EXIT_REBUILD)  # a wedged client's threads die with the process
    try:
        p.close(timeout=5)
    finally:
        os._exit(EXIT_STOPPED)


def run_producer_confluent(a: argparse.Namespace) -> int:
    from confluent_kafka import KafkaException, Producer

    stop, rng, journal = Stop(), random.Random(a.seed), Journal(a.journal)
    p = Producer({"bootstrap.servers": a.bootstrap, "client.id": f"{a.tid}-{a.instance}",
                  "transactional.id": a.tid, "enable.idempotence": True, "linger.ms": 2,
                  "transaction.timeout.ms": a.transaction_timeout_ms, "message.timeout.ms": 30_000,
                  "socket.timeout.ms": 10_000, "reconnect.backoff.max.ms": 500,
                  "retry.backoff.ms": 50,
                  # e.g. CHAOS_RDKAFKA_DEBUG=eos,protocol: librdkafka's own account in the producer logs
                  **({"debug": os.environ["CHAOS_RDKAFKA_DEBUG"]} if os.environ.get("CHAOS_RDKAFKA_DEBUG") else {})})
    deadline_s = a.call_timeout_s

    def retrying(call) -> None:
        """librdkafka's contract: a retriable error means call it again."""
        end = now() + deadline_s
        while True:
            try:
                call(max(1.0, end - now()))
                return
            except KafkaException as exc:
                err = exc.args[0]
                if err.retriable() and now() < end:
                    continue
                raise

    try:
        retrying(p.init_transactions)
        journal.write(e="I")
        txn = 0
        while not stop.requested:
            txn += 1
            key = f"{a.tid}|{a.instance}|{txn}"
            parts, commit = plan_transaction(rng, a.partitions, a.abort_ratio)
            n = len(parts)
            journal.write(e="B", t=key, n=n)
            p.begin_transaction()
            failed = []
            for i, part in enumerate(parts):
                p.produce(a.topic, key=a.tid.encode(), value=record_value(a.tid, a.instance, txn, i, n),
                          partition=part, on_delivery=lambda err, msg: err and failed.append(err))
            if p.flush(deadline_s) or failed:
                retrying(p.abort_transaction)
                journal.write(e="A", t=key)
                continue
            journal.write(e="E", t=key, c=commit)
            try:
                retrying(p.commit_transaction if commit else p.abort_transaction)
                journal.write(e="C" if commit else "A", t=key)
            except KafkaException as exc:
                if not exc.args[0].txn_requires_abort():
                    raise
                retrying(p.abort_transaction)
                journal.write(e="A", t=key)
            if a.pause_ms:
                time.sleep(a.pause_ms / 1000)
    except KafkaException as exc:
        err = exc.args[0]
        fenced = "fenced" in err.str().lower() or err.name() in ("_FENCED", "PRODUCER_FENCED")
        log(f"{a.tid}#{a.instance}: {err}: exiting for a fresh instance")
        os._exit(EXIT_FENCED if fenced else EXIT_REBUILD)
    p.flush(5)
    os._exit(EXIT_STOPPED)


# ==================================================================== consumers
def consumer_done(stop_file: str, seen_max: dict[int, int]) -> bool:
    """The campaign writes the last visible offset per partition into the stop file at the end;
    a consumer stops once it has delivered up to there."""
    try:
        last = json.loads(Path(stop_file).read_text())
    except (OSError, ValueError):
        return False
    return all(seen_max.get(int(p), -1) >= off for p, off in last.items())


def run_consumer_kafka_python(a: argparse.Namespace) -> int:
    from kafka import KafkaConsumer, TopicPartition
    from kafka.errors import KafkaError

    stop = Stop()
    c = KafkaConsumer(bootstrap_servers=[a.bootstrap], client_id=f"chaos-consumer-kp-{a.instance}",
                      group_id=None, enable_auto_commit=False, isolation_level="read_committed",
                      auto_offset_reset="earliest", max_poll_records=5000, reconnect_backoff_max_ms=500,
                      request_timeout_ms=30_000)
    tps = [TopicPartition(a.topic, p) for p in range(a.partitions)]
    c.assign(tps)
    c.seek_to_beginning(*tps)
    seen_max: dict[int, int] = {}
    with open(a.journal, "a", buffering=1) as out:
        while not consumer_done(a.stop_file, seen_max) and not stop.requested:
            try:
                batch = c.poll(timeout_ms=300)
            except KafkaError as exc:  # the broker is down: keep polling
                log(f"consumer kp#{a.instance}: {exc!r}")
                continue
            for tp, records in batch.items():
                for r in records:
                    out.write(f"{r.partition} {r.offset} {r.value.decode()}\n")
                    seen_max[r.partition] = r.offset
    c.close()
    return 0


def run_consumer_confluent(a: argparse.Namespace) -> int:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    stop = Stop()
    c = Consumer({"bootstrap.servers": a.bootstrap, "group.id": f"chaos-unused-{a.instance}",
                  "client.id": f"chaos-consumer-ck-{a.instance}", "enable.auto.commit": False,
                  "enable.auto.offset.store": False, "isolation.level": "read_committed",
                  "auto.offset.reset": "earliest", "reconnect.backoff.max.ms": 500})
    c.assign([TopicPartition(a.topic, p, OFFSET_BEGINNING) for p in range(a.partitions)])
    seen_max: dict[int, int] = {}
    with open(a.journal, "a", buffering=1) as out:
        while not consumer_done(a.stop_file, seen_max) and not stop.requested:
            for m in c.consume(num_messages=5000, timeout=0.3):
                if m.error():  # transport errors while the broker is down: librdkafka retries
                    continue
                out.write(f"{m.partition()} {m.offset()} {m.value().decode()}\n")
                seen_max[m.partition()] = m.offset()
    c.close()
    return 0


# ======================================================================= broker
class Broker:
    """The broker under test, as a subprocess on a fixed port (so clients reconnect)."""

    def __init__(self, workdir: Path, python: str):
        self.data = workdir / "data"
        self.log_path = workdir / "broker.log"
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.python = python
        self.proc: subprocess.Popen | None = None
        self.fault: str | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _note(self, text: str) -> None:
        with open(self.log_path, "ab") as f:
            f.write(f"\n=== chaos: {text} at {time.strftime('%H:%M:%S')} ===\n".encode())

    def start(self, fault: str | None = None, timeout: float = 30) -> int | None:
        """Start (fault armed or not) and wait for the ready line. Returns None when ready,
        or the exit code if the broker exited first (an armed fault hit while loading)."""
        self.fault = fault
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        env.pop("MINIKAFKA_FAULT", None)
        if fault:
            env["MINIKAFKA_FAULT"] = fault
        self._note(f"start{' with MINIKAFKA_FAULT=' + fault if fault else ''}")
        offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with open(self.log_path, "ab") as logf:
            self.proc = subprocess.Popen(
                [self.python, "-m", "minikafka", "--override", f"listeners=PLAINTEXT://127.0.0.1:{self.port}",
                 "--override", f"log.dirs={self.data}"],
                cwd=REPO_ROOT, env=env, stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT,
                start_new_session=True)
        end = now() + timeout
        while now() < end:
            with open(self.log_path, "rb") as f:
                f.seek(offset)
                if READY_RE.search(f.read().decode(errors="replace")):
                    return None
            code = self.proc.poll()
            if code is not None:
                return code
            time.sleep(0.02)
        self.kill()
        raise RuntimeError(f"broker not ready within {timeout}s (log: {self.log_path})")

    def kill(self) -> None:
        self._note("SIGKILL")
        if self.running():
            self.proc.kill()
        self.proc.wait(10)

    def stop(self) -> None:
        self._note("SIGTERM")
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise RuntimeError(f"broker did not stop within 30s of SIGTERM (log: {self.log_path})")

    def wait_exit(self, timeout: float) -> int | None:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None


# ====================================================================== checker
def check(journals: list[list[dict]], committed: list[tuple[int, int, bytes]],
          appended: list[tuple[int, int, bytes]],
          consumers: dict[str, tuple[list[tuple[int, int, bytes]], bool]]) -> dict:
    """Compare what the producers know (journals) with the log.

    committed: (partition, offset, value) read read_committed after everything settled;
    appended: the same read_uncommitted; consumers: name -> (what a live consumer delivered,
    whether it ran to the end and so must have delivered everything).
    Returns the figures and violation counts (pure: no I/O)."""
    size: dict[str, int] = {}
    outcome: dict[str, str] = {}   # key -> committed | aborted | uncertain (commit asked, no answer) | unfinished
    for events in journals:
        for e in events:
            t = e.get("t")
            if e["e"] == "B":
                size[t] = e["n"]
                outcome[t] = "unfinished"
            elif e["e"] == "E":
                outcome[t] = "uncertain" if e["c"] else "unfinished"
            elif e["e"] == "C":
                outcome[t] = "committed"
            elif e["e"] == "A":
                outcome[t] = "aborted"
    v = Counter()
    samples: dict[str, list] = defaultdict(list)

    def violation(kind: str, detail) -> None:
        v[kind] += 1
        if len(samples[kind]) < 5:
            samples[kind].append(detail)

    # the log as appended: never the same record twice
    counts = Counter(value for _, _, value in appended)
    for value, k in counts.items():
        if k > 1:
            violation("duplicate_appends", value.decode(errors="replace"))

    # what read_committed delivers
    seen: dict[bytes, tuple[int, int]] = {}
    per_txn: dict[str, set[int]] = defaultdict(set)
    last_order: dict[tuple[int, str], tuple[tuple[int, int], int]] = {}
    for partition, offset, value in sorted(committed, key=lambda r: (r[0], r[1])):
        if value in seen:
            violation("duplicates", value.decode(errors="replace"))
            continue
        seen[value] = (partition, offset)
        parsed = parse_value(value)
        if parsed is None or parsed[0] not in outcome:
            violation("unknown_records", value.decode(errors="replace"))
            continue
        key, order, i, n = parsed
        if outcome[key] in ("aborted", "unfinished"):
            violation("aborted_visible", f"{value.decode()} ({outcome[key]}) at {partition}@{offset}")
        per_txn[key].add(i)
        producer = key.rsplit("|", 2)[0]  # tid: instances of one id write in turn
        inst = int(key.split("|")[1])
        prev = last_order.get((partition, producer))
        if prev is not None and (prev[0], prev[1]) >= (inst, order):
            violation("order_violations", f"{value.decode()} at {partition}@{offset} after {prev}")
        last_order[(partition, producer)] = (inst, order)
    lost = 0
    for key, state in outcome.items():
        shown = len(per_txn.get(key, ()))
        if state == "committed" and shown < size[key]:
            lost += size[key] - shown
            if len(samples["lost_acknowledged"]) < 5:
                samples["lost_acknowledged"].append(f"{key}: {shown} of {size[key]} records")
        if 0 < shown < size[key]:
            violation("torn_visible", f"{key} ({state}): {shown} of {size[key]} records")
    v["lost_acknowledged"] += lost

    # the live consumers: no duplicate, nothing that is not in the final view, in order, complete
    consumer_records = 0
    for name, (records, ran_to_end) in consumers.items():
        consumer_records += len(records)
        got: dict[bytes, int] = {}
        pos: dict[int, int] = {}
        for partition, offset, value in records:
            if value in got:
                violation("duplicates", f"{name}: {value.decode(errors='replace')}")
            got[value] = offset
            if seen.get(value) != (partition, offset):
                violation("aborted_visible", f"{name}: {value.decode(errors='replace')} at {partition}@{offset}"
                                             f" is not committed there (final view: {seen.get(value)})")
            if offset <= pos.get(partition, -1):
                violation("order_violations", f"{name}: {partition}@{offset} after {pos[partition]}")
            pos[partition] = offset
        missing = len(set(seen) - set(got)) if ran_to_end else 0
        if missing:
            violation("consumer_missing", f"{name}: {missing} committed records never delivered")

    states = Counter(outcome.values())
    figures = {
        "transactions_committed": states["committed"],
        "transactions_aborted": states["aborted"],
        "transactions_uncertain": states["uncertain"],
        "transactions_unfinished": states["unfinished"],
        "records_checked": len(committed),
        "records_in_log": len(appended),
        "consumer_records_checked": consumer_records,
    }
    kinds = ("lost_acknowledged", "duplicates", "duplicate_appends", "aborted_visible", "torn_visible",
             "order_violations", "unknown_records", "consumer_missing")
    figures["violations"] = {k: v[k] for k in kinds}
    figures["violation_samples"] = {k: s for k, s in samples.items() if s}
    return figures


# ===================================================================== campaign
class Worker:
    def __init__(self, name: str, argv: list[str], workdir: Path):
        self.name, self.argv, self.workdir = name, argv, workdir
        self.proc: subprocess.Popen | None = None

    def start(self) -> "Worker":
        logf = open(self.workdir / f"{self.name}.log", "ab")
        try:
            self.proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), *self.argv],
                                         cwd=REPO_ROOT, stdin=subprocess.DEVNULL, stdout=logf, stderr=logf,
                                         env=dict(os.environ, PYTHONUNBUFFERED="1"))
        finally:
            logf.close()
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        if self.alive():
            self.proc.kill()
        if self.proc is not None:
            self.proc.wait(10)


class Campaign:
    def __init__(self, a: argparse.Namespace):
        self.a = a
        self.rng = random.Random(a.seed)
        self.own_workdir = not a.workdir  # only a temp dir of our own is removed at the end
        self.workdir = Path(a.workdir) if a.workdir else Path(tempfile.mkdtemp(prefix="minikafka-chaos-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.broker = Broker(self.workdir, sys.executable)
        self.stats = Counter()
        self.fault_exits = Counter()
        self.exit_codes = Counter()
        self.producers: dict[str, Worker] = {}
        self.instances: Counter = Counter()
        self.consumers: dict[str, Worker] = {}
        self.stop_file = self.workdir / "consumers-stop.json"
        self._journal_pos: dict[Path, int] = {}
        self.commits = 0

    # ------------------------------------------------------------ processes
    def spawn_producer(self, tid: str, client: str) -> None:
        self.instances[tid] += 1
        inst = self.instances[tid]
        w = Worker(f"producer-{tid}-{inst}",
                   ["producer", "--client", client, "--bootstrap", self.broker.bootstrap, "--topic", TOPIC,
                    "--partitions", str(self.a.partitions), "--tid", tid, "--instance", str(inst),
                    "--journal", str(self.workdir / f"journal-{tid}-{inst}.jsonl"),
                    "--seed", str(self.rng.randrange(1 << 30)), "--abort-ratio", str(self.a.abort_ratio),
                    "--pause-ms", str(self.a.pause_ms), "--call-timeout-s", str(self.a.call_timeout_s)],
                   self.workdir)
        self.producers[tid] = w.start()

    def spawn_consumer(self, name: str, client: str) -> None:
        run = len(list(self.workdir.glob(f"consumed-{name}-*.txt"))) + 1
        w = Worker(f"consumer-{name}-{run}",
                   ["consumer", "--client", client, "--bootstrap", self.broker.bootstrap, "--topic", TOPIC,
                    "--partitions", str(self.a.partitions), "--instance", str(run),
                    "--journal", str(self.workdir / f"consumed-{name}-{run}.txt"),
                    "--stop-file", str(self.stop_file)], self.workdir)
        self.consumers[name] = w.start()

    def tend(self) -> None:
        """Restart producers and consumers that exited (a wedged or failed client, a fence)."""
        for tid, w in list(self.producers.items()):
            if not w.alive():
                self.exit_codes[w.proc.returncode] += 1
                self.spawn_producer(tid, "kafka-python" if "-kp-" in tid else "confluent-kafka")
        for name, w in list(self.consumers.items()):
            if not w.alive():
                self.stats["consumer_restarts"] += 1
                self.spawn_consumer(name, "kafka-python" if name.startswith("kp") else "confluent-kafka")

    def count_commits(self) -> int:
        for path in self.workdir.glob("journal-*.jsonl"):
            pos = self._journal_pos.get(path, 0)
            with open(path, "rb") as f:
                f.seek(pos)
                chunk = f.read()
            end = chunk.rfind(b"\n") + 1
            self.commits += chunk[:end].count(b'"e":"C"')
            self._journal_pos[path] = pos + end
        return self.commits

    def wait_progress(self, commits: int, timeout: float) -> bool:
        target = self.count_commits() + commits
        end = now() + timeout
        while now() < end:
            self.tend()
            if self.count_commits() >= target:
                return True
            time.sleep(0.05)
        self.stats["stalls"] += 1
        log(f"no {commits} commits within {timeout:.0f}s (broker {'up' if self.broker.running() else 'down'})")
        return False

    # --------------------------------------------------------------- broker
    def start_broker(self, fault: str | None = None) -> bool:
        """Start the broker; False if an armed fault point made it exit while loading (finishing a
        PREPARE_*: a crash too), after which it runs unarmed."""
        code = self.broker.start(fault)
        if code is None:
            return True
        if fault and code == FAULT_EXIT:
            self.stats["crashes"] += 1
            self.fault_exits[fault + " (while loading)"] += 1
            if self.broker.start(None) is None:
                return False
        raise RuntimeError(f"broker exited with {code} while starting (log: {self.broker.log_path})")

    def crash_random(self) -> None:
        time.sleep(self.rng.uniform(0, self.a.max_kill_delay_s))  # a random moment of the traffic
        self.broker.kill()
        self.stats["crashes"] += 1
        self.stats["kills_at_random"] += 1
        self.start_broker()

    def crash_at_fault(self, point: str) -> None:
        if self.rng.random() < 0.5:
            self.broker.stop()
            self.stats["clean_restarts"] += 1
        else:
            time.sleep(self.rng.uniform(0, self.a.max_kill_delay_s))
            self.broker.kill()
            self.stats["crashes"] += 1
            self.stats["kills_at_random"] += 1
        if not self.start_broker(point):
            return
        end = now() + self.a.fault_wait_s
        code = None
        while now() < end:
            self.tend()
            code = self.broker.wait_exit(0.1)
            if code is not None:
                break
        if code == FAULT_EXIT:
            self.stats["crashes"] += 1
            self.fault_exits[point] += 1
        elif code is None:
            log(f"{point} not reached within {self.a.fault_wait_s:.0f}s: kill -9 instead")
            self.stats["faults_not_reached"] += 1
            self.broker.kill()
            self.stats["crashes"] += 1
            self.stats["kills_at_random"] += 1
        else:
            raise RuntimeError(f"broker exited with {code} (armed {point}); log: {self.broker.log_path}")
        self.start_broker()

    def kill_a_producer(self) -> None:
        tid = self.rng.choice(sorted(self.producers))
        time.sleep(self.rng.uniform(0, self.a.max_kill_delay_s))
        self.producers[tid].kill()
        self.stats["producer_kills"] += 1
        self.spawn_producer(tid, "kafka-python" if "-kp-" in tid else "confluent-kafka")

    # ---------------------------------------------------------------- admin
    def wire(self):
        from minikafka.admin.wire import WireClient
        return WireClient.to(self.broker.bootstrap, timeout=15, client_id="chaos")

    def create_topic(self) -> None:
        with self.wire() as c:
            r = c.request(19, 5, {"topics": [{"name": TOPIC, "num_partitions": self.a.partitions,
                                              "replication_factor": 1, "assignments": [], "configs": []}],
                                  "timeout_ms": 10000, "validate_only": False})
            assert r.topics[0].error_code == 0, r

    def fence_all(self, tids: list[str], timeout: float = 60) -> None:
        """InitProducerId for every id: aborts whatever a killed instance left open."""
        end = now() + timeout
        for tid in tids:
            while True:
                try:
                    with self.wire() as c:
                        r = c.request(22, 4, {"transactional_id": tid, "transaction_timeout_ms": 60000,
                                              "producer_id": -1, "producer_epoch": -1})
                    if r.error_code == 0:
                        break
                except OSError:
                    pass
                if now() > end:
                    raise RuntimeError(f"could not fence {tid} within {timeout}s")
                time.sleep(0.1)

    def offsets(self, isolation: int) -> dict[int, int]:
        with self.wire() as c:
            r = c.request(2, 7, {"replica_id": -1, "isolation_level": isolation,
                                 "topics": [{"name": TOPIC, "partitions": [
                                     {"partition_index": p, "timestamp": -1, "current_leader_epoch": -1}
                                     for p in range(self.a.partitions)]}]})
        return {p.partition_index: p.offset for p in r.topics[0].partitions}

    def wait_settled(self, timeout: float = 60) -> None:
        end = now() + timeout
        while True:
            lso, hw = self.offsets(1), self.offsets(0)
            if lso == hw:
                return
            if now() > end:
                raise RuntimeError(f"LSO {lso} never reached the high watermark {hw}")
            time.sleep(0.1)

    # ------------------------------------------------------------------ run
    def run(self) -> dict:
        a = self.a
        t0 = now()
        tids = [f"chaos-kp-{i}" for i in range(a.kafka_python)] + [f"chaos-ck-{i}" for i in range(a.confluent)]
        summary: dict = {"workdir": str(self.workdir), "seed": a.seed}
        chaos_s = 0.0
        try:
            self.start_broker()
            self.create_topic()
            for tid in tids:
                self.spawn_producer(tid, "kafka-python" if "-kp-" in tid else "confluent-kafka")
            self.spawn_consumer("kp", "kafka-python")
            self.spawn_consumer("ck", "confluent-kafka")
            faults = 0
            cycle = 0
            while self.stats["crashes"] < a.crashes and now() - t0 < a.max_seconds:
                self.wait_progress(a.commits_between_crashes, a.progress_timeout_s)
                if self.rng.random() < a.producer_kill_ratio:
                    self.kill_a_producer()
                if cycle % 2:
                    point = FAULTS[faults % len(FAULTS)]
                    faults += 1
                    self.crash_at_fault(point)
                else:
                    self.crash_random()
                cycle += 1
                log(f"crashes {self.stats['crashes']}, commits {self.count_commits()}")
            chaos_s = now() - t0
            # wind down: producers finish their transaction and stop; then nothing may stay open
            self.wait_progress(a.commits_between_crashes, a.progress_timeout_s)
            for w in self.producers.values():
                if w.alive():
                    w.proc.terminate()
            end = now() + 30
            for w in self.producers.values():
                try:
                    w.proc.wait(max(0.1, end - now()))
                except subprocess.TimeoutExpired:
                    self.stats["producers_killed_at_stop"] += 1
                    w.kill()
            self.fence_all(tids)
            self.wait_settled()
            from examples.shop.reading import read_topic
            committed = [(r.partition, r.offset, r.value) for r in
                         read_topic(self.broker.bootstrap, TOPIC, "read_committed", client_id="chaos-checker")]
            appended = [(r.partition, r.offset, r.value) for r in
                        read_topic(self.broker.bootstrap, TOPIC, "read_uncommitted", client_id="chaos-checker")]
            last: dict[int, int] = {p: -1 for p in range(a.partitions)}
            for p, off, _ in committed:
                last[p] = max(last[p], off)
            self.stop_file.write_text(json.dumps(last))
            end = now() + 60
            for name, w in self.consumers.items():
                try:
                    w.proc.wait(max(0.1, end - now()))
                except subprocess.TimeoutExpired:
                    log(f"consumer {name} did not catch up within 60s")
                    w.kill()
            journals = [read_journal(p) for p in sorted(self.workdir.glob("journal-*.jsonl"))]
            consumed: dict[str, list] = {}
            for path in sorted(self.workdir.glob("consumed-*.txt")):
                rows = []
                for line in path.read_text(errors="replace").splitlines():
                    p, off, value = line.split(" ", 2)
                    rows.append((int(p), int(off), value.encode()))
                consumed[path.stem] = rows
            # only the last run of each consumer went to the end; earlier ones are checked too
            last_runs = {Path(w.argv[w.argv.index("--journal") + 1]).stem for w in self.consumers.values()}
            figures = check(journals, committed, appended,
                            {k: (rows, k in last_runs) for k, rows in consumed.items()})
            summary.update(figures)
            self.broker.stop()
        finally:
            for w in list(self.producers.values()) + list(self.consumers.values()):
                w.kill()
            if self.broker.running():
                self.broker.kill()
        summary.update({
            "duration_s": round(now() - t0, 1),
            "chaos_s": round(chaos_s, 1),
            "crashes": self.stats["crashes"],
            "kills_at_random": self.stats["kills_at_random"],
            "fault_exits": dict(self.fault_exits),
            "faults_not_reached": self.stats["faults_not_reached"],
            "clean_restarts": self.stats["clean_restarts"],
            "producer_kills": self.stats["producer_kills"],
            "producer_instances": sum(self.instances.values()),
            "producer_exits": {str(k): n for k, n in self.exit_codes.items()},
            "consumer_restarts": self.stats["consumer_restarts"],
            "stalls": self.stats["stalls"],
        })
        violations = sum(summary["violations"].values())
        summary["complete"] = (summary["crashes"] >= a.crashes and summary["transactions_committed"] > 0)
        summary["ok"] = violations == 0 and summary["complete"]
        return summary


# ========================================================================== CLI
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="tools/chaos.py", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd")
    run = sub.add_parser("run", help="the campaign (default)")
    for p in (ap, run):
        p.add_argument("--crashes", type=int, default=100, help="broker crashes to reach (default 100)")
        p.add_argument("--max-seconds", type=float, default=1800, help="stop crashing after this long")
        p.add_argument("--partitions", type=int, default=4)
        p.add_argument("--kafka-python", type=int, default=2, help="kafka-python transactional producers")
        p.add_argument("--confluent", type=int, default=2, help="confluent-kafka transactional producers")
        p.add_argument("--abort-ratio", type=float, default=0.2, help="share of transactions aborted on purpose")
        p.add_argument("--commits-between-crashes", type=int, default=3)
        p.add_argument("--progress-timeout-s", type=float, default=30)
        p.add_argument("--max-kill-delay-s", type=float, default=1.0, help="kill at a random moment up to this")
        p.add_argument("--fault-wait-s", type=float, default=30, help="wait this long for an armed fault point")
        p.add_argument("--producer-kill-ratio", type=float, default=0.3, help="chance per cycle to kill a producer")
        p.add_argument("--pause-ms", type=int, default=0, help="producers pause between transactions")
        p.add_argument("--call-timeout-s", type=float, default=15, help="deadline of a transactional call")
        p.add_argument("--seed", type=int, default=None)
        p.add_argument("--workdir", help="data, journals and logs, kept (default: a new temp dir, removed"
                                          " when all is well)")
        p.add_argument("--keep", action="store_true", help="keep the temp workdir even when all is well")
        p.add_argument("--json", help="also write the summary here")
    for name in ("producer", "consumer"):
        w = sub.add_parser(name, help=argparse.SUPPRESS)
        w.add_argument("--client", choices=("kafka-python", "confluent-kafka"), required=True)
        w.add_argument("--bootstrap", required=True)
        w.add_argument("--topic", required=True)
        w.add_argument("--partitions", type=int, required=True)
        w.add_argument("--instance", type=int, required=True)
        w.add_argument("--journal", required=True)
        if name == "producer":
            w.add_argument("--tid", required=True)
            w.add_argument("--seed", type=int, required=True)
            w.add_argument("--abort-ratio", type=float, default=0.2)
            w.add_argument("--pause-ms", type=int, default=0)
            w.add_argument("--call-timeout-s", type=float, default=15)
            w.add_argument("--transaction-timeout-ms", type=int, default=60_000)
        else:
            w.add_argument("--stop-file", required=True)
    a = ap.parse_args(argv)
    if a.cmd is None:
        a.cmd = "run"
    return a


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    if a.cmd == "producer":
        fn = run_producer_kafka_python if a.client == "kafka-python" else run_producer_confluent
        return fn(a)
    if a.cmd == "consumer":
        fn = run_consumer_kafka_python if a.client == "kafka-python" else run_consumer_confluent
        return fn(a)
    if a.seed is None:
        a.seed = random.randrange(1 << 30)
    campaign = Campaign(a)
    # SIGTERM/SIGINT: unwind, so the broker and the clients are stopped too
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        summary = campaign.run()
    except Exception as exc:  # the campaign itself could not go on: say so, keep the evidence
        log(f"campaign aborted: {exc!r}; kept {campaign.workdir}")
        print(json.dumps({"ok": False, "error": repr(exc), "workdir": str(campaign.workdir)}), flush=True)
        return 2
    text = json.dumps(summary, sort_keys=True)
    if a.json:
        Path(a.json).write_text(text + "\n")
    if summary["ok"] and campaign.own_workdir and not a.keep:
        shutil.rmtree(campaign.workdir, ignore_errors=True)
    elif not summary["ok"]:
        log(f"kept {campaign.workdir} (broker.log, journals, consumer logs)")
    print(text, flush=True)
    if any(summary["violations"].values()):
        return 1
    return 0 if summary["ok"] else 2


if __name__ == "__main__":
    raise SystemExit(main())
