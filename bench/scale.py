#!/usr/bin/env python3
"""Scale: how minikafka's throughput, latency, memory and recovery time grow along four axes.

    python bench/scale.py                       # every axis (about 5-10 minutes; needs ~12 GB of disk)
    python bench/scale.py --axes partitions,txnsize --max-data-gb 1
    make bench-scale ARGS='--axes producers'

Each point runs on a fresh broker (default config, temp data dir) with librdkafka clients and
1 KB records, and ends with a crash: kill -9, then a restart on the same data, timed to the first
Metadata answer (the "recovery" column; the CPU time the restarted process used by then is given
too, as the machine's load does not change it).

  partitions  1 / 100 / 1,000 partitions, 100 MB round-robin: produce rate and the broker's CPU for it,
              fetch rate, one-record
              produce round trip p50/p99, RSS after, recovery
  producers   1 / 10 / 100 transactional producers, 10-record transactions for --seconds: commits/s,
              commit latency p50/p99, peak RSS, recovery with one transaction open per producer
  txnsize     one producer, transactions of 1 / 100 / 10,000 records for --seconds: records/s,
              commit latency p50/p99, peak RSS, recovery with one transaction open
  data        100 MB / 1 GB / 10 GB in 1,000 partitions: fill rate, fetch rate of the first 100 MB,
              round trip p50/p99, RSS after the fill, ready after a clean stop, recovery after kill -9

Prints one table per axis; --json FILE keeps every figure.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time

import workloads as w
from brokers import Minikafka, cpu_seconds, rss_mb


def loadavg() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3])


def restart(b: Minikafka, *, crash: bool) -> tuple[Minikafka, float, float]:
    """Stop `b` (kill -9 if crash, else SIGTERM and wait) and start a broker on its data dir;
    returns the new broker, its ready time and the CPU time it had used by then."""
    data, tmp = b.data_dir, b.tmp
    if crash:
        b.kill9()
        b.log.close()
    else:
        b.close(keep_data=True)
    nb = Minikafka(data_dir=data, timeout=600)
    nb.tmp = tmp  # the new broker owns the temp dir now: close() removes it
    return nb, nb.ready_s, nb.ready_cpu_s


def point_partitions(parts: int, a) -> dict:
    b = Minikafka()
    try:
        bs = b.bootstrap
        t = w.unique("scale-p")
        w.create_topic(bs, t, parts)
        w.produce(bs, t, parts, a.size, partitions=parts)  # first write to each partition, untimed
        n = a.partition_mb * 1000 * 1000 // a.size
        cpu0 = cpu_seconds(b.pid)
        prod = w.produce(bs, t, n, a.size, partitions=parts)
        produce_cpu = cpu_seconds(b.pid) - cpu0  # per-batch work grows with partitions (smaller batches)
        cons = w.consume(bs, t, parts, n + parts, committed=False)
        lat = w.produce_latency(bs, t, parts, a.latency_samples, a.size)
        rss = rss_mb(b.pid)
        b, ready, cpu = restart(b, crash=True)
        return {"produce_rate": prod["rate"], "produce_cpu_s": produce_cpu, "fetch_rate": cons["rate"], "p50_ms": lat["p50_ms"],
                "p99_ms": lat["p99_ms"], "rss_mb": rss, "recovery_s": ready, "recovery_cpu_s": cpu,
                "records": n}
    finally:
        b.close()


def point_transactions(producers: int, per_txn: int, a) -> dict:
    b = Minikafka()
    try:
        bs = b.bootstrap
        t = w.unique("scale-tx")
        w.create_topic(bs, t, 10)
        box = {}

        def crash():
            nonlocal b
            b, box["ready"], box["cpu"] = restart(b, crash=True)

        r = w.concurrent_transactions(bs, t, producers, per_txn, a.size, partitions=10, seconds=a.seconds,
                                      broker_pid=b.pid, while_open=crash)
        return {"commits_s": r["commits_s"], "rate": r["rate"], "p50_ms": r["p50_ms"], "p99_ms": r["p99_ms"],
                "rss_mb": r["peak_rss_mb"], "recovery_s": box["ready"], "recovery_cpu_s": box["cpu"],
                "records": r["records"], "commits": r["commits"]}
    finally:
        b.close()


def point_data(mb: int, a) -> dict:
    need = mb * 1.3 / 1000 + 1  # GB: the data, its indexes, slack
    free = shutil.disk_usage("/tmp").free / 1e9
    if free < need:
        raise SystemExit(f"scale: {mb:,} MB needs about {need:.0f} GB free in /tmp, {free:.0f} GB left")
    b = Minikafka()
    try:
        bs = b.bootstrap
        parts = 1000
        t = w.unique("scale-d")
        w.create_topic(bs, t, parts)
        n = mb * 1000 * 1000 // a.size
        fill = w.produce(bs, t, n, a.size, partitions=parts)
        rss = rss_mb(b.pid)
        first = min(n, 100_000_000 // a.size)  # the first 100 MB, from offset 0 of every partition
        cons = w.consume(bs, t, parts, first, committed=False, exact=False)
        lat = w.produce_latency(bs, t, parts, a.latency_samples, a.size)
        b, clean, clean_cpu = restart(b, crash=False)
        b, ready, cpu = restart(b, crash=True)
        return {"produce_rate": fill["rate"], "fetch_rate": cons["rate"], "p50_ms": lat["p50_ms"],
                "p99_ms": lat["p99_ms"], "rss_mb": rss, "restart_s": clean, "restart_cpu_s": clean_cpu,
                "recovery_s": ready, "recovery_cpu_s": cpu, "records": n}
    finally:
        b.close()


AXES = {
    "partitions": ("partitions", [1, 100, 1000], lambda x, a: point_partitions(x, a)),
    "producers": ("txn producers", [1, 10, 100], lambda x, a: point_transactions(x, 10, a)),
    "txnsize": ("records per txn", [1, 100, 10_000], lambda x, a: point_transactions(1, x, a)),
    "data": ("data, MB", [100, 1000, 10_000], lambda x, a: point_data(x, a)),
}

COLUMNS = {  # axis -> [(header, key, format)]
    "partitions": [("produce rec/s", "produce_rate", "{:,.0f}"), ("produce broker CPU s", "produce_cpu_s", "{:.2f}"),
                   ("fetch rec/s", "fetch_rate", "{:,.0f}"),
                   ("round trip p50/p99 ms", ("p50_ms", "p99_ms"), "{:.2f} / {:.2f}"),
                   ("RSS MB", "rss_mb", "{:,.0f}"),
                   ("recovery s (CPU s)", ("recovery_s", "recovery_cpu_s"), "{:.2f} ({:.2f})")],
    "producers": [("commits/s", "commits_s", "{:,.0f}"), ("commit p50/p99 ms", ("p50_ms", "p99_ms"), "{:.1f} / {:.1f}"),
                  ("peak RSS MB", "rss_mb", "{:,.0f}"),
                  ("recovery s (CPU s)", ("recovery_s", "recovery_cpu_s"), "{:.2f} ({:.2f})")],
    "txnsize": [("rec/s", "rate", "{:,.0f}"), ("commits/s", "commits_s", "{:,.1f}"),
                ("commit p50/p99 ms", ("p50_ms", "p99_ms"), "{:.1f} / {:.1f}"), ("peak RSS MB", "rss_mb", "{:,.0f}"),
                ("recovery s (CPU s)", ("recovery_s", "recovery_cpu_s"), "{:.2f} ({:.2f})")],
    "data": [("fill rec/s", "produce_rate", "{:,.0f}"), ("fetch rec/s (first 100 MB)", "fetch_rate", "{:,.0f}"),
             ("round trip p50/p99 ms", ("p50_ms", "p99_ms"), "{:.2f} / {:.2f}"), ("RSS MB", "rss_mb", "{:,.0f}"),
             ("clean restart s (CPU s)", ("restart_s", "restart_cpu_s"), "{:.2f} ({:.2f})"),
             ("recovery s (CPU s)", ("recovery_s", "recovery_cpu_s"), "{:.2f} ({:.2f})")],
}


def table(axis: str, results: list[tuple[int, dict]]) -> str:
    name = AXES[axis][0]
    cols = [name] + [h for h, _, _ in COLUMNS[axis]] + ["records"]
    rows = []
    for x, r in results:
        cells = [f"{x:,}"]
        for _, key, f in COLUMNS[axis]:
            cells.append(f.format(*(r[k] for k in key)) if isinstance(key, tuple) else f.format(r[key]))
        cells.append(f"{r['records']:,}")
        rows.append(cells)
    width = [max(len(c[k]) for c in rows + [cols]) for k in range(len(cols))]
    fmt = lambda cells: "  ".join(c.rjust(width[k]) for k, c in enumerate(cells))  # noqa: E731
    return "\n".join([fmt(cols), "  ".join("-" * x for x in width)] + [fmt(c) for c in rows])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--axes", default=",".join(AXES), help=f"comma-separated, of {', '.join(AXES)}")
    ap.add_argument("--size", type=int, default=1024, help="record size (default 1024)")
    ap.add_argument("--seconds", type=float, default=5.0, help="length of a transactional point (default 5)")
    ap.add_argument("--partition-mb", type=int, default=100, help="data per partitions point (default 100 MB)")
    ap.add_argument("--latency-samples", type=int, default=300, help="round trips per latency figure (default 300)")
    ap.add_argument("--max-data-gb", type=float, default=10, help="largest data point in GB (default 10)")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args()
    axes = args.axes.split(",")
    bad = [x for x in axes if x not in AXES]
    if bad:
        ap.error(f"unknown axis {', '.join(bad)}; axes: {', '.join(AXES)}")
    import confluent_kafka
    print(f"minikafka scale: {args.size} B records, librdkafka {confluent_kafka.libversion()[0]}, "
          f"{os.cpu_count()} cores, load average at start {loadavg()}", flush=True)
    out = {}
    for axis in axes:
        name, points, run = AXES[axis]
        if axis == "data":
            points = [p for p in points if p <= args.max_data_gb * 1000]
        results = []
        for x in points:
            t0 = time.monotonic()
            try:
                r = run(x, args)
            except Exception as e:  # noqa: BLE001
                print(f"scale: FAILED at {axis} = {x:,}: {type(e).__name__}: {e}", file=sys.stderr)
                return 1
            r["load"] = loadavg()
            results.append((x, r))
            print(f"  {axis} {x:,}: done in {time.monotonic() - t0:.1f} s (load {r['load']})",
                  file=sys.stderr, flush=True)
        out[axis] = results
        print(f"\n{axis} (load average {results[0][1]['load']} .. {results[-1][1]['load']})\n"
              + table(axis, results), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({a: [{"point": x, **r} for x, r in rs] for a, rs in out.items()}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
