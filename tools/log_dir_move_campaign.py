#!/usr/bin/env python3
"""Log-dir move campaign: a partition of ``--size-mb`` (1 GB) moved between two log dirs under
load, the broker killed (-9) at a random point of each move, every acknowledged record checked.

A minikafka with two ``log.dirs`` (temp dir, free port) gets one topic of one partition, filled
to the size with 10 kB records by an idempotent confluent-kafka producer (acks=all). Then, run
after run, the partition is moved to the other dir (AlterReplicaLogDirs) while the producer goes
on (``--load-mb-s``, 1 MB/s) and a consumer follows the partition's end, and the broker is killed
with SIGKILL:

* in most runs when the copy has reached a fraction of the partition drawn uniformly from
  [0, 1) (DescribeLogDirs' future replica size, polled every 20 ms);
* in every fifth run at one step of the swap in turn, armed with MINIKAFKA_FAULT
  (logdir.before_commit, .after_commit, .after_future_rename, .after_swap), since the swap
  lasts milliseconds and a random kill would seldom land in it.

After each kill the broker restarts and the campaign checks, in this order:

* one copy: exactly one ``<topic>-0`` dir in the two log dirs, no ``-delete`` dir left, and a
  ``-future`` dir only if the move had not committed (its copy then goes on and completes);
* every record: the producer is paused (its outstanding records delivered or failed), the whole
  partition is read from offset 0, and every acknowledged record must be there, at its
  acknowledged offset, exactly once, byte for byte; nothing may be read twice;
* the move: the partition ends in the target dir (a resumed copy completes).

The last line on stdout is a JSON summary (per run: kill point, copy progress at the kill,
records acknowledged and verified, lost, duplicated, copies found; totals). Exit status 0 when no
record was lost or duplicated and every run left one copy, 1 otherwise, 2 when the campaign could
not run.

    python tools/log_dir_move_campaign.py [--runs 20] [--size-mb 1024] [--seed N] [--json OUT]
                                          [--workdir DIR] [--keep] [--deadline-minutes M]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from minikafka.admin.wire import WireClient  # noqa: E402
from minikafka.testing import BrokerProcess, wait_until  # noqa: E402

TOPIC = "moving"
RECORD = 10_000
SWAP_FAULTS = ("logdir.before_commit", "logdir.after_commit", "logdir.after_future_rename", "logdir.after_swap")


def log(msg: str) -> None:
    print(f"[campaign {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def value(i: int) -> bytes:
    head = b"%d:" % i
    return head + bytes([i % 251]) * (RECORD - len(head))


def index_of(v: bytes) -> int:
    return int(v.split(b":", 1)[0])


class Producer:
    """One idempotent producer for the whole campaign: records 0, 1, 2, ... (``value``), the
    acknowledged ones remembered with their offsets. ``run(rate)`` sends in a thread until
    ``pause()``, which waits for every outstanding record's outcome."""

    def __init__(self, bootstrap: str):
        from confluent_kafka import Producer as P
        self.p = P({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all", "linger.ms": 20,
                    "batch.size": 1 << 20, "message.timeout.ms": 300000, "retry.backoff.ms": 100,
                    "queue.buffering.max.kbytes": 65536})
        self.acked: dict[int, int] = {}
        self.failed = 0
        self.sent = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _on_delivery(self, err, msg) -> None:
        if err is not None:
            self.failed += 1
        else:
            self.acked[index_of(msg.value())] = msg.offset()

    def _send(self) -> None:
        while True:
            try:
                self.p.produce(TOPIC, value=value(self.sent), on_delivery=self._on_delivery)
                self.sent += 1
                return
            except BufferError:
                self.p.poll(0.05)

    def fill(self, size: int) -> None:
        while self.sent * RECORD < size:
            for _ in range(200):
                self._send()
            self.p.poll(0)
        self.p.flush(300)

    def run(self, rate_bytes: float) -> None:
        self._stop.clear()

        def loop():
            t0, n = time.monotonic(), 0
            while not self._stop.is_set():
                if n * RECORD <= (time.monotonic() - t0) * rate_bytes:
                    self._send()
                    n += 1
                self.p.poll(0.005)
        self._thread = threading.Thread(target=loop, daemon=True)
        self._thread.start()

    def pause(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        left = self.p.flush(300)
        if left:
            raise RuntimeError(f"{left} records still undelivered after 300 s")


class Follower:
    """A consumer following the partition's end while a move runs (clients keep consuming)."""

    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap
        self.count = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def run(self, from_offset: int) -> None:
        from confluent_kafka import Consumer, TopicPartition
        self._stop.clear()

        def loop():
            c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "campaign-follower",
                          "enable.auto.commit": False, "fetch.wait.max.ms": 100})
            c.assign([TopicPartition(TOPIC, 0, from_offset)])
            while not self._stop.is_set():
                self.count += sum(1 for m in c.consume(500, 0.2) if m.error() is None)
            c.close()
        self._thread = threading.Thread(target=loop, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(60)


def describe(bootstrap: str) -> dict[str, list]:
    """{log dir: [(size, offset lag, is future)]} of the partition."""
    with WireClient.to(bootstrap, timeout=30) as c:
        r = c.request(35, 4, {"topics": [{"topic": TOPIC, "partitions": [0]}]})
    return {d.log_dir: [(p.partition_size, p.offset_lag, p.is_future_key) for t in d.topics for p in t.partitions]
            for d in r.results}


def current_dir(bootstrap: str) -> str:
    (d,) = [d for d, ps in describe(bootstrap).items() if any(not f for _, _, f in ps)]
    return d


def alter(bootstrap: str, target: str) -> None:
    with WireClient.to(bootstrap, timeout=30) as c:
        r = c.request(34, 2, {"dirs": [{"path": target, "topics": [{"name": TOPIC, "partitions": [0]}]}]})
    code = r.results[0].partitions[0].error_code
    if code != 0:
        raise RuntimeError(f"AlterReplicaLogDirs answered {code}")


def on_disk(dirs: list[str]) -> dict[str, list[str]]:
    return {d: sorted(n for n in os.listdir(d) if n.startswith(f"{TOPIC}-0")) for d in dirs}


def verify(bootstrap: str, producer: Producer) -> dict:
    """Read the whole partition; every acknowledged record at its offset, once, byte for byte."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "campaign-checker", "enable.auto.commit": False,
                  "fetch.max.bytes": 52428800, "max.partition.fetch.bytes": 10485760})
    c.assign([TopicPartition(TOPIC, 0, 0)])
    _, end = c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=30)
    seen: dict[int, int] = {}
    duplicates = corrupt = 0
    offset = -1
    deadline = time.monotonic() + 600
    while offset < end - 1 and time.monotonic() < deadline:
        for m in c.consume(2000, 1.0):
            if m.error() is not None:
                continue
            offset = m.offset()
            i = index_of(m.value())
            if m.value() != value(i):
                corrupt += 1
            if i in seen:
                duplicates += 1
            seen[i] = offset
    c.close()
    lost = [i for i, off in producer.acked.items() if seen.get(i) != off]
    return {"acked": len(producer.acked), "read": len(seen), "end_offset": end, "lost": len(lost),
            "lost_first": sorted(lost)[:5], "duplicates": duplicates, "corrupt": corrupt}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--size-mb", type=int, default=1024, help="the partition's size before the first move")
    ap.add_argument("--segment-mb", type=int, default=128, help="log.segment.bytes, in MB")
    ap.add_argument("--load-mb-s", type=float, default=1.0, help="the producer's rate during the moves")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--deadline-minutes", type=float, default=None,
                    help="start no run after this long (the summary then has fewer runs, exit status 2)")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--keep", action="store_true", help="keep the broker's data and log")
    ap.add_argument("--json", type=Path, default=None, help="also write the summary here")
    args = ap.parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    work = Path(tempfile.mkdtemp(prefix="log-dir-campaign-", dir=args.workdir))
    dirs = [str(work / "dir-a"), str(work / "dir-b")]
    broker = BrokerProcess(work / "data", name="campaign", overrides={
        "log.dirs": ",".join(dirs), "log.segment.bytes": args.segment_mb << 20, "num.partitions": 1,
        "message.max.bytes": 2 << 20})
    summary = {"seed": seed, "runs": [], "size_mb": args.size_mb, "segment_mb": args.segment_mb,
               "load_mb_s": args.load_mb_s}
    producer = follower = None
    t_start = time.monotonic()
    try:
        broker.start(timeout=120)
        with WireClient.to(broker.bootstrap, timeout=30) as c:
            c.request(19, 5, {"topics": [{"name": TOPIC, "num_partitions": 1, "replication_factor": 1,
                                          "assignments": [], "configs": []}], "timeout_ms": 30000,
                              "validate_only": False})
        producer, follower = Producer(broker.bootstrap), Follower(broker.bootstrap)
        t0 = time.monotonic()
        producer.fill(args.size_mb << 20)
        log(f"filled {len(producer.acked)} records ({args.size_mb} MB) in {time.monotonic() - t0:.0f} s; seed {seed}")
        for run in range(1, args.runs + 1):
            if args.deadline_minutes is not None and time.monotonic() - t_start > args.deadline_minutes * 60:
                log(f"deadline: {run - 1} of {args.runs} runs done in {args.deadline_minutes} min")
                summary["stopped"] = f"deadline after {run - 1} runs"
                break
            fault = SWAP_FAULTS[(run // 5 - 1) % len(SWAP_FAULTS)] if run % 5 == 0 else None
            if fault:
                broker.stop()
                broker.extra_env["MINIKAFKA_FAULT"] = fault
                broker.start(timeout=300)
            source = current_dir(broker.bootstrap)
            target = next(d for d in dirs if d != source)
            size = describe(broker.bootstrap)[source][0][0]
            fraction = None if fault else rng.random()
            producer.run(args.load_mb_s * 1e6)
            follower.run(max(producer.acked.values()) + 1)
            t_move = time.monotonic()
            alter(broker.bootstrap, target)
            copied = 0
            if fault:
                broker.wait_exit(600)
            else:
                def reached():
                    nonlocal copied
                    future = [s for s, _, f in describe(broker.bootstrap).get(target, []) if f]
                    moved = any(not f for _, _, f in describe(broker.bootstrap).get(target, []))
                    copied = future[0] if future else (size if moved else copied)
                    return moved or copied >= fraction * size
                wait_until(reached, 600, interval=0.02, message="the copy's progress")
                broker.kill9()
            killed_at = time.monotonic() - t_move
            broker.extra_env.pop("MINIKAFKA_FAULT", None)
            t_restart = time.monotonic()
            broker.start(timeout=600)
            restart_s = time.monotonic() - t_restart
            disk = on_disk(dirs)
            complete = [d for d, names in disk.items() if f"{TOPIC}-0" in names]
            leftovers = [n for names in disk.values() for n in names if n.endswith("-delete")]
            futures = [n for names in disk.values() for n in names if n.endswith("-future")]
            one_copy = len(complete) == 1 and not leftovers and len(futures) <= 1
            # a resumed copy completes
            wait_until(lambda: current_dir(broker.bootstrap) == target
                       and not any(f for ps in describe(broker.bootstrap).values() for _, _, f in ps), 900,
                       interval=0.2, message="the move completes")
            move_s = time.monotonic() - t_move
            follower.stop()
            producer.pause()
            check = verify(broker.bootstrap, producer)
            final = on_disk(dirs)
            one_copy = one_copy and final == {source: [], target: [f"{TOPIC}-0"]}
            entry = {"run": run, "kill": fault or f"at {fraction:.2f} of the copy", "copied_bytes": copied,
                     "size_bytes": size, "killed_after_s": round(killed_at, 2), "restart_s": round(restart_s, 2),
                     "move_done_s": round(move_s, 1), "copies_after_restart": disk, "one_copy": one_copy,
                     "followed": follower.count, **check}
            summary["runs"].append(entry)
            log(f"run {run}: kill {entry['kill']} (copied {copied >> 20} of {size >> 20} MB), restart "
                f"{restart_s:.1f} s, {check['acked']} acknowledged, {check['read']} read, lost {check['lost']}, "
                f"duplicates {check['duplicates']}, one copy {one_copy}")
    except Exception as e:
        log(f"campaign stopped: {type(e).__name__}: {e}")
        summary["error"] = f"{type(e).__name__}: {e}"
    finally:
        if follower is not None:
            follower.stop()
        broker.close()
        summary["seconds"] = round(time.monotonic() - t_start)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            log(f"kept {work}")
    runs = summary["runs"]
    summary["totals"] = {"runs": len(runs), "lost": sum(r["lost"] for r in runs),
                         "duplicates": sum(r["duplicates"] for r in runs), "corrupt": sum(r["corrupt"] for r in runs),
                         "runs_with_one_copy": sum(r["one_copy"] for r in runs),
                         "records_acknowledged": runs[-1]["acked"] if runs else 0}
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary["totals"] | {"seed": seed, "seconds": summary["seconds"],
                                          "error": summary.get("error"), "stopped": summary.get("stopped")}))
    if "error" in summary or len(runs) < args.runs:
        return 2
    t = summary["totals"]
    return 0 if t["lost"] == t["duplicates"] == t["corrupt"] == 0 and t["runs_with_one_copy"] == len(runs) else 1


if __name__ == "__main__":
    sys.exit(main())
