#!/usr/bin/env python3
"""Throughput benchmark: librdkafka (confluent-kafka) against a fresh broker.

Starts the broker as a subprocess (temp data dir, free port), then measures:
  ready      seconds from exec to the ready line
  idle RSS   resident memory after start-up
  produce    acks=all, plain and idempotent
  txn        10-record and 1,000-record transactions (commits/s and records/s)
  consume    read_uncommitted and read_committed

Usage: python bench/throughput.py [--records 200000] [--size 1024] [--only produce,consume,...]
Prints a table; numbers depend on the machine (targets are in the project brief).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Broker:
    def __init__(self, extra: list[str]):
        self.dir = tempfile.mkdtemp(prefix="minikafka-bench-")
        self.port = free_port()
        cmd = [sys.executable, "-m", "minikafka", "--override", f"listeners=PLAINTEXT://127.0.0.1:{self.port}",
               "--override", f"log.dirs={self.dir}/data", "--log-level", "WARNING"]
        for e in extra:
            cmd += ["--override", e]
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.proc.stdout.readline()
        self.ready_s = time.perf_counter() - t0
        if "listening on" not in line:
            raise SystemExit(f"broker did not start: {line!r}")
        self.bootstrap = f"127.0.0.1:{self.port}"

    def rss_mb(self) -> float:
        with open(f"/proc/{self.proc.pid}/status") as f:
            m = re.search(r"VmRSS:\s+(\d+) kB", f.read())
        return int(m.group(1)) / 1024

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


class External:
    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap

    def close(self):
        pass


def create_topic(bootstrap, topic, partitions=1):
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        f.result(30)


def producer_conf(bootstrap, **extra):
    conf = {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "batch.size": 1_000_000,
            "queue.buffering.max.messages": 1_000_000, "queue.buffering.max.kbytes": 1_048_576,
            "compression.type": "none"}
    conf.update(extra)
    return conf


def bench_produce(bootstrap, n, size, idempotent):
    from confluent_kafka import Producer
    topic = f"bench-produce-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic)
    p = Producer(producer_conf(bootstrap, **({"enable.idempotence": True} if idempotent else {})))
    value = os.urandom(size)
    errors = []

    def cb(err, msg):
        if err is not None:
            errors.append(err)

    t0 = time.perf_counter()
    for _ in range(n):
        while True:
            try:
                p.produce(topic, value, on_delivery=cb)
                break
            except BufferError:
                p.poll(0.01)
        p.poll(0)
    p.flush(120)
    dt = time.perf_counter() - t0
    if errors:
        raise SystemExit(f"produce errors: {errors[:3]}")
    return topic, n / dt, n * size / dt / 1e6, dt


def bench_txn(bootstrap, n, size, per_txn):
    from confluent_kafka import Producer
    topic = f"bench-txn-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic)
    p = Producer(producer_conf(bootstrap, **{"transactional.id": f"bench-{uuid.uuid4().hex[:8]}", "linger.ms": 1}))
    p.init_transactions(30)
    value = os.urandom(size)
    txns = max(1, n // per_txn)
    t0 = time.perf_counter()
    for _ in range(txns):
        p.begin_transaction()
        for _ in range(per_txn):
            while True:
                try:
                    p.produce(topic, value)
                    break
                except BufferError:
                    p.poll(0.01)
        p.commit_transaction(60)
    dt = time.perf_counter() - t0
    return topic, txns * per_txn / dt, txns / dt, dt


def bench_consume(bootstrap, topic, expected, committed):
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex[:8]}",
                  "enable.auto.commit": False, "isolation.level": "read_committed" if committed else "read_uncommitted",
                  "fetch.max.bytes": 52428800, "max.partition.fetch.bytes": 10485760, "fetch.wait.max.ms": 100})
    c.assign([TopicPartition(topic, 0, 0)])
    got = nbytes = 0
    t0 = time.perf_counter()
    deadline = t0 + 120
    while got < expected and time.perf_counter() < deadline:
        for m in c.consume(10000, 1.0):
            if m.error() is None:
                got += 1
                nbytes += len(m.value())
    dt = time.perf_counter() - t0
    c.close()
    if got < expected:
        raise SystemExit(f"consumed only {got}/{expected}")
    return got / dt, nbytes / dt / 1e6, dt


def best_of(runs, fn, key):
    """Run `fn` `runs` times and keep the result with the highest `key` (single short runs
    on a small shared machine vary by a third; the best run shows what the broker can do)."""
    results = [fn() for _ in range(max(1, runs))]
    return max(results, key=key)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--only", default="produce,idempotent,txn10,txn1000,consume,committed")
    ap.add_argument("--bootstrap", help="use a running broker instead of starting one (no ready/RSS rows)")
    ap.add_argument("--runs", type=int, default=2, help="runs per case; the table shows the best (default 2)")
    args = ap.parse_args()
    only = set(args.only.split(","))
    b = External(args.bootstrap) if args.bootstrap else Broker([])
    rows = []
    try:
        if not args.bootstrap:
            rows.append(("broker ready", f"{b.ready_s:.3f} s", "", ""))
            time.sleep(0.5)  # let start-up settle before reading the idle footprint
            rows.append(("idle RSS", f"{b.rss_mb():.1f} MB", "", ""))
        topic = None
        if "produce" in only:
            topic, rps, mbps, dt = best_of(args.runs, lambda: bench_produce(b.bootstrap, args.records, args.size, False),
                                           key=lambda r: r[1])
            rows.append(("produce acks=all", f"{rps:,.0f} rec/s", f"{mbps:,.1f} MB/s", f"{dt:.1f} s"))
        if "idempotent" in only:
            t, rps, mbps, dt = best_of(args.runs, lambda: bench_produce(b.bootstrap, args.records, args.size, True),
                                       key=lambda r: r[1])
            topic = topic or t
            rows.append(("produce acks=all idempotent", f"{rps:,.0f} rec/s", f"{mbps:,.1f} MB/s", f"{dt:.1f} s"))
        txn_topic = None
        if "txn10" in only:
            t, rps, cps, dt = best_of(args.runs, lambda: bench_txn(b.bootstrap, min(args.records, 20_000), args.size, 10),
                                      key=lambda r: r[1])
            rows.append(("txn 10 rec/commit", f"{rps:,.0f} rec/s", f"{cps:,.0f} commits/s", f"{dt:.1f} s"))
        if "txn1000" in only:
            txn_topic, rps, cps, dt = best_of(args.runs, lambda: bench_txn(b.bootstrap, args.records, args.size, 1000),
                                              key=lambda r: r[1])
            rows.append(("txn 1000 rec/commit", f"{rps:,.0f} rec/s", f"{cps:,.1f} commits/s", f"{dt:.1f} s"))
        if "consume" in only and topic:
            rps, mbps, dt = best_of(args.runs, lambda: bench_consume(b.bootstrap, topic, args.records, False),
                                    key=lambda r: r[0])
            rows.append(("consume read_uncommitted", f"{rps:,.0f} rec/s", f"{mbps:,.1f} MB/s", f"{dt:.1f} s"))
        if "committed" in only and txn_topic:
            n = (args.records // 1000) * 1000
            rps, mbps, dt = best_of(args.runs, lambda: bench_consume(b.bootstrap, txn_topic, n, True),
                                    key=lambda r: r[0])
            rows.append(("consume read_committed", f"{rps:,.0f} rec/s", f"{mbps:,.1f} MB/s", f"{dt:.1f} s"))
    finally:
        b.close()
    print(f"\nminikafka benchmark: {args.records:,} records of {args.size} B, confluent-kafka "
          f"{__import__('confluent_kafka').libversion()[0]}, {os.cpu_count()} cores, best of {args.runs} run(s)\n")
    w = [max(len(r[i]) for r in rows + [("case", "rate", "throughput", "time")]) for i in range(4)]
    print("  ".join(h.ljust(w[i]) for i, h in enumerate(("case", "rate", "throughput", "time"))))
    print("  ".join("-" * x for x in w))
    for r in rows:
        print("  ".join(c.ljust(w[i]) for i, c in enumerate(r)))


if __name__ == "__main__":
    main()
