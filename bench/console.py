#!/usr/bin/env python3
"""What ``minikafka console`` costs: its pages' render time and its polling's CPU on the broker.

    python bench/console.py [--topics 10 --partitions 100] [--open 100] [--seconds 30] [--renders 50]

A fresh minikafka with ``--topics`` x ``--partitions`` partitions (1,000 by default), each with
10 committed transactional records, ``--open`` transactions left open (one partition each, by
raw InitProducerId / AddPartitionsToTxn / Produce requests), and a consumer group that
committed offset 0 on every partition (so its read_committed lag is counted by reading).

1. The broker's CPU over ``--seconds`` with no console (its own background work), then with
   the console polling once a second while a page is watched (a client long-polling the
   overview's live part, as an open browser tab does); the difference is the console's cost,
   as a share of one core. The console's own CPU and its poll durations are printed too.
2. Render times: ``--renders`` sequential GETs of the overview page (``/``) and of its live
   part, and of the transactions, partitions and groups pages, on one keep-alive connection:
   the answer's time at the client (p50, p95, max) and the CPU the console spent making the
   page (its Server-Timing header), which the machine's load does not change.

On a shared 2-core machine the figures are indicative (other processes take the cores)."""
from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # this checkout's minikafka (the wire client), as the broker it starts

import workloads as w  # noqa: E402
from brokers import Minikafka, cpu_seconds, rss_mb  # noqa: E402

from minikafka.admin.wire import WireClient  # noqa: E402
from minikafka.protocol import records as rec  # noqa: E402


def fill(bootstrap: str, topics: list[str], partitions: int, open_txns: int) -> dict:
    """10 committed records per partition, ``open_txns`` open transactions, a group at 0."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": w.unique("console-fill"),
                  "linger.ms": 20})
    p.init_transactions(60)
    p.begin_transaction()
    for t in topics:
        for part in range(partitions):
            for i in range(10):
                p.produce(t, value=b"x" * 100, partition=part)
    p.flush(120)
    p.commit_transaction(120)
    everything = [(t, part) for t in topics for part in range(partitions)]
    step = max(1, len(everything) // max(open_txns, 1))
    opened = []
    with WireClient.to(bootstrap, timeout=30) as c:
        for i in range(open_txns):
            topic, part = everything[(i * step) % len(everything)]
            tid = f"console-bench-open-{i}"
            r = c.request(22, 4, {"transactional_id": tid, "transaction_timeout_ms": 900_000,
                                  "producer_id": -1, "producer_epoch": -1})
            assert r.error_code == 0, r
            pid, epoch = r.producer_id, r.producer_epoch
            r = c.request(24, 3, {"v3_and_below_transactional_id": tid, "v3_and_below_producer_id": pid,
                                  "v3_and_below_producer_epoch": epoch,
                                  "v3_and_below_topics": [{"name": topic, "partitions": [part]}]})
            batch = rec.build_batch([rec.Record(0, None, None, b"open", ())], producer_id=pid,
                                    producer_epoch=epoch, base_sequence=0, is_transactional=True)
            r = c.request(0, 9, {"transactional_id": tid, "acks": -1, "timeout_ms": 10000,
                                 "topic_data": [{"name": topic, "partition_data": [{"index": part,
                                                                                    "records": batch}]}]})
            assert r.responses[0].partition_responses[0].error_code == 0, r
            opened.append((topic, part))
    group = w.unique("console-group")
    g = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        g.commit(offsets=[TopicPartition(t, part, 0) for t, part in everything], asynchronous=False)
    finally:
        g.close()
    return {"partitions": len(everything), "open": len(opened), "group": group}


class Console:
    def __init__(self, bootstrap: str):
        self.proc = subprocess.Popen([sys.executable, "-m", "minikafka", "console", "--bootstrap-server", bootstrap,
                                      "--listen", "127.0.0.1:0"], cwd=ROOT, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"ready: http://([\d.]+):(\d+)/", line)
        if not m:
            self.proc.kill()
            raise SystemExit(f"the console did not start: {line}{self.proc.stdout.read()}")
        self.host, self.port = m.group(1), int(m.group(2))
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        for _ in self.proc.stdout:
            pass

    def connection(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(self.host, self.port, timeout=60)

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def get(conn: http.client.HTTPConnection, path: str, timing: list | None = None) -> tuple[float, str]:
    """(milliseconds to the whole answer, its body); ``timing`` gets the console's own
    Server-Timing figures (render wall and CPU ms)."""
    t0 = time.perf_counter()
    conn.request("GET", path)
    r = conn.getresponse()
    body = r.read().decode()
    if r.status != 200:
        raise SystemExit(f"GET {path}: {r.status} {body[:500]}")
    if timing is not None:
        timing.append(dict((k, float(v)) for k, v in re.findall(r"(\w+);dur=([\d.]+)", r.getheader("server-timing", ""))))
    return (time.perf_counter() - t0) * 1000, body


def seq_of(body: str) -> int:
    m = re.search(r'data-seq="(\d+)"', body)
    return int(m.group(1)) if m else 0


def watch(console: Console, stop: threading.Event, polls: list[float]) -> None:
    """An open overview tab: its live part, one request per snapshot."""
    conn = console.connection()
    seq = 0
    while not stop.is_set():
        _, body = get(conn, f"/live/overview?since={seq}")
        seq = seq_of(body)
        m = re.search(r"poll (\d+) ms", body)
        if m:
            polls.append(float(m.group(1)))


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--topics", type=int, default=10)
    ap.add_argument("--partitions", type=int, default=100, help="per topic")
    ap.add_argument("--open", type=int, default=100, help="transactions left open")
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--renders", type=int, default=50)
    ap.add_argument("--json", help="write the figures to this file")
    a = ap.parse_args()
    out: dict = {"load_before": open("/proc/loadavg").read().split()[:3]}
    b = Minikafka()
    console = None
    try:
        topics = [w.unique(f"console{i}") for i in range(a.topics)]
        for t in topics:
            w.create_topic(b.bootstrap, t, a.partitions)
        out.update(fill(b.bootstrap, topics, a.partitions, a.open))
        print(f"{out['partitions']} partitions, {out['open']} open transactions, 1 group; "
              f"measuring {a.seconds:.0f} s windows", flush=True)

        c0, t0 = cpu_seconds(b.pid), time.monotonic()
        time.sleep(a.seconds)
        idle = (cpu_seconds(b.pid) - c0) / (time.monotonic() - t0)

        console = Console(b.bootstrap)
        conn = console.connection()
        seq = 0
        while seq < 5:  # warm: the lag scans done, the templates compiled
            _, body = get(conn, f"/live/overview?since={seq}")
            seq = seq_of(body)
        assert body.count('class="pin"') == a.open, "the overview does not show every open transaction"
        stop, polls = threading.Event(), []
        watcher = threading.Thread(target=watch, args=(console, stop, polls), daemon=True)
        watcher.start()
        c0, k0, t0 = cpu_seconds(b.pid), cpu_seconds(console.proc.pid), time.monotonic()
        time.sleep(a.seconds)
        elapsed = time.monotonic() - t0
        polled = (cpu_seconds(b.pid) - c0) / elapsed
        console_cpu = (cpu_seconds(console.proc.pid) - k0) / elapsed
        stop.set()
        watcher.join(10)
        out.update({"broker_cpu_idle": idle, "broker_cpu_polled": polled, "console_cost": polled - idle,
                    "console_cpu": console_cpu, "console_rss_mb": rss_mb(console.proc.pid),
                    "poll_ms_p50": percentile(polls, 0.5), "poll_ms_max": max(polls), "polls": len(polls)})

        renders = {}
        conn = console.connection()  # (the first one idled past hypercorn's keep-alive timeout)
        for path in ("/", "/live/overview?since=0", "/transactions", "/partitions", "/groups"):
            timing: list[dict] = []
            times = [get(conn, path, timing)[0] for _ in range(a.renders)]
            renders[path] = {"p50_ms": percentile(times, 0.5), "p95_ms": percentile(times, 0.95),
                             "max_ms": max(times), "cpu_p50_ms": percentile([t["cpu"] for t in timing], 0.5),
                             "cpu_max_ms": max(t["cpu"] for t in timing)}
        out["renders"] = renders
    finally:
        if console is not None:
            console.close()
        b.close()
    out["load_after"] = open("/proc/loadavg").read().split()[:3]

    print(f"broker CPU, no console:          {out['broker_cpu_idle'] * 100:5.1f}% of a core")
    print(f"broker CPU, console polling:     {out['broker_cpu_polled'] * 100:5.1f}% of a core"
          f"  -> the console's polling costs {out['console_cost'] * 100:.1f}% (bound: < 5%)")
    print(f"console process CPU:             {out['console_cpu'] * 100:5.1f}% of a core, RSS {out['console_rss_mb']:.0f} MB;"
          f" poll p50 {out['poll_ms_p50']:.0f} ms, max {out['poll_ms_max']:.0f} ms ({out['polls']} polls)")
    print(f"{'page (answer time, and CPU)':28} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'CPU p50':>8} {'CPU max':>8}")
    for path, r in out["renders"].items():
        print(f"{path:28} {r['p50_ms']:8.1f} {r['p95_ms']:8.1f} {r['max_ms']:8.1f} {r['cpu_p50_ms']:8.1f}"
              f" {r['cpu_max_ms']:8.1f}")
    overview = out["renders"]["/"]
    print(f"overview: p95 {overview['p95_ms']:.0f} ms, max {overview['max_ms']:.0f} ms (bound: < 300 ms)")
    out["met"] = out["console_cost"] < 0.05 and overview["p95_ms"] < 300
    print(f"issue 34's bounds {'met' if out['met'] else 'NOT met'} "
          f"(polling < 5% of a core on the broker, overview p95 < 300 ms)")
    print(f"load average before {' '.join(out['load_before'])}, after {' '.join(out['load_after'])}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0 if out["met"] else 1


if __name__ == "__main__":
    sys.exit(main())
