#!/usr/bin/env python3
"""Side-by-side benchmark: minikafka and a reference broker (Apache Kafka 4.1), same client, same run.

    python bench/throughput.py                                        # minikafka alone
    python bench/throughput.py --reference-bootstrap 127.0.0.1:19092  # and Kafka, with ratios
    make bench ARGS='--reference-bootstrap 127.0.0.1:19092'

Starts minikafka (fresh data dir, free port, default config) and drives it and the reference
with librdkafka (confluent-kafka), 1 KB records. Each broker is warmed up first (a short pass of
every workload: the JVM's JIT, minikafka's caches). Every row then runs against both brokers
back to back, alternating which goes first, --runs times (--quick-runs for the produce and fetch
rows of about a second, --consume-runs for the consume rows), each run once the page cache's
dirty data is written back and the machine is quiet (`settle`); the table shows, for each
broker, the median of its runs (each figure on its own: rate, latency percentiles, records,
broker CPU) and the ratio: the median of the runs' ratios (each run's minikafka figure against
the reference's measured right before or after it), oriented so that >1.00x means minikafka is
ahead (for latencies, ready time and memory: Kafka's figure divided by minikafka's). Paired,
because the machine it was built on has slow phases of tens of seconds that hit both brokers (a
VM handing freed memory back to its host): the two runs of a pair mostly fall in the same phase,
where the medians of each broker's runs taken apart compare one broker's fast runs with the
other's slow ones. The median, not the best run: a best-of picks each broker's luckiest outlier.
The measurements behind both: bench/README.md. Every row states how many records it wrote or read on each side, checked against what was
expected, and the CPU time the broker process used in that run: on a loaded 2-core machine the
client and the neighbours move the rates by a third from run to run, the CPU time far less.
Brokers started here run at the reference broker's niceness, so `nice -n 10` on the bench slows
the clients of both, never one broker.

A row that cannot be measured on either broker (an error, a short read, a missing Kafka
distribution for the ready row) ends the run with exit code 1 and names the row; no partial
table is printed. --only / --skip choose rows (keys below).

Rows (key: what):
  acks1        produce acks=1, one partition                         rec/s
  idempotent   produce acks=all, enable.idempotence                  rec/s
  txn10        one producer, transactions of 10 records              commits/s
  txn1000      one producer, transactions of 1,000 records           rec/s
  consume      consume read_uncommitted, the acks=1 topic             rec/s
  txnconsume   consume read_uncommitted, a topic of 10,000 transactions (10 producers interleaved)
  committed    consume read_committed, the same topic                 rec/s
               (measured with txnconsume, one right after the other in each run: rc/ru, the
               median of each run's read_committed rate over its read_uncommitted rate)
  commit1, commit10, commit100
               N transactional producers (up to 4 worker processes, a thread per producer)
               committing 10-record transactions to a 10-partition topic (producer i to partition
               i % 10) for --commit-seconds: commits/s, commit_transaction() latency p50 and p99
  produce1000  produce acks=1 round-robin over a 1,000-partition topic
  fetch1000    consume read_uncommitted from all 1,000 partitions (one consumer)
  ready        exec to Metadata answered, empty data dir, median of --ready-starts starts, each
               once dirty data is written back and the machine is 90% idle over 0.25 s (at most
               30 s later; starts that never found it so are counted in the JSON, "busy")
               (Kafka: a private single-node KRaft broker on free ports, storage formatted
               before the clock starts; needs the distribution: --reference-home)
  idlerss      RSS 1 s after ready, empty data dir, median over the same starts
  loadedrss    peak RSS during commit100 (Kafka: the reference broker's process, found by port)
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

import workloads as w
from brokers import BenchError, Minikafka, PrivateKafka, Running, cpu_seconds, kafka_home, nice_of, rss_mb

ALL_ROWS = ["acks1", "idempotent", "txn10", "txn1000", "consume", "txnconsume", "committed",
            "commit1", "commit10", "commit100", "produce1000", "fetch1000", "ready", "idlerss", "loadedrss"]

LABELS = {
    "acks1": "produce acks=1",
    "idempotent": "produce acks=all idempotent",
    "txn10": "txn of 10 records, 1 producer",
    "txn1000": "txn of 1,000 records, 1 producer",
    "consume": "consume read_uncommitted",
    "txnconsume": "consume read_uncommitted, 10k txns",
    "committed": "consume read_committed, 10k txns",
    "commit1": "commit, 1 txn producer",
    "commit10": "commit, 10 txn producers",
    "commit100": "commit, 100 txn producers",
    "produce1000": "produce, 1,000 partitions",
    "fetch1000": "fetch, 1,000 partitions",
    "ready": "ready, empty data dir",
    "idlerss": "idle RSS",
    "loadedrss": "RSS under 100 txn producers",
}

# rows of about a second: more runs (--quick-runs) for a steadier median, at little cost
QUICK_ROWS = {"acks1", "idempotent", "txn1000", "produce1000", "fetch1000"}
# The consume rows measure the client more than the broker (the consumer thread is busy for the
# whole read, the broker ~a fifth of it): the two brokers are within a few percent and a run moves
# by +-10%, so over 7 runs their medians moved 0.93-1.14x from one bench run to the next (21
# alternating runs: 1.05x, 17 of 21 pairs ahead). More runs (--consume-runs), at ~1 s each.
CONSUME_ROWS = {"consume", "txnconsume", "committed"}


def runs_of(row: str, args) -> int:
    if row in CONSUME_ROWS:
        return max(args.runs, args.consume_runs)
    return max(args.runs, args.quick_runs) if row in QUICK_ROWS else args.runs

# metric key -> (unit shown, higher is better, format)
METRICS = {
    "rate": ("rec/s", True, "{:,.0f}"),
    "mbps": ("MB/s", True, "{:,.1f}"),
    "commits_s": ("commits/s", True, "{:,.0f}"),
    "p50_ms": ("p50 ms", False, "{:,.2f}"),
    "p99_ms": ("p99 ms", False, "{:,.2f}"),
    "ready_s": ("s (median)", False, "{:.3f}"),
    "rss_mb": ("MB", False, "{:,.1f}"),
    "rc_ru": ("rc/ru", True, "{:.2f}"),
}

# Rows measured together, one right after the other on the same broker in each run (the order
# alternating): read_committed against read_uncommitted of the same topic is a ratio of two
# rows, and measured a minute apart it moved with the machine (0.76-1.06 over five runs).
# rc/ru is each run's ratio, the median shown under the committed row.
PAIRED = {"txnconsume": "committed"}

# what each row shows (each the median of the runs)
# (records are --size bytes: MB/s and the other figures are in --json)
ROW_METRICS = {
    "acks1": ["rate"], "idempotent": ["rate"], "txn10": ["commits_s"], "txn1000": ["rate"],
    "consume": ["rate"], "txnconsume": ["rate"], "committed": ["rate", "rc_ru"],
    "commit1": ["commits_s", "p50_ms", "p99_ms"], "commit10": ["commits_s", "p50_ms", "p99_ms"],
    "commit100": ["commits_s", "p50_ms", "p99_ms"], "produce1000": ["rate"], "fetch1000": ["rate"],
    "ready": ["ready_s"], "idlerss": ["rss_mb"], "loadedrss": ["rss_mb"],
}


def loadavg() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3])


class RowLost(Exception):
    def __init__(self, row: str, side: str, why: str):
        super().__init__(f"row '{LABELS.get(row, row)}' ({row}) lost on {side}: {why}")


class Side:
    """One broker under test and the topics this run made on it."""

    def __init__(self, name: str, broker, args):
        self.name, self.broker, self.args = name, broker, args
        self.bootstrap = broker.bootstrap
        self.topics: list[str] = []
        self.fixtures: dict[str, tuple[str, int, int]] = {}  # name -> (topic, partitions, records)
        self.p1000_start: list[int] = []

    def topic(self, prefix: str, partitions: int = 1) -> str:
        t = w.unique(prefix)
        w.create_topic(self.bootstrap, t, partitions)
        self.topics.append(t)
        return t

    # -- fixtures: topics that consume rows read; made by the row that writes them, else here
    def plain_topic(self):
        if "plain" not in self.fixtures:
            t = self.topic("acks1")
            w.produce(self.bootstrap, t, self.args.records, self.args.size)
            self.fixtures["plain"] = (t, 1, self.args.records)
        return self.fixtures["plain"]

    def txn_topic(self):
        """--txns transactions of --records/--txns records, from 10 producers at once (interleaved
        in the log as in real use) into one partition."""
        if "txn" not in self.fixtures:
            a = self.args
            t = self.topic("txns")
            per = max(1, a.records // a.txns)
            w.concurrent_transactions(self.bootstrap, t, 10, per, a.size, txns_each=a.txns // 10)
            self.fixtures["txn"] = (t, 1, (a.txns // 10) * 10 * per)
        return self.fixtures["txn"]

    def p1000_topic(self):
        """One 1,000-partition topic per broker, made once: each partition gets one record before
        anything is timed, so the rows measure steady-state produce and fetch, not the broker's
        first writes to a new partition (see warm_up). produce1000 appends to it; fetch1000 reads
        what produce1000 wrote (from the offsets where the warm-up left each partition), so both
        brokers read the same number of records."""
        if "p1000" not in self.fixtures:
            t = self.topic("p1000", 1000)
            w.produce(self.bootstrap, t, 1000, self.args.size, partitions=1000)
            self.fixtures["p1000"] = (t, 1000, 0)
            self.p1000_start = [1] * 1000
        return self.fixtures["p1000"]

    def p1000_for_fetch(self):
        t, parts, n = self.p1000_topic()
        if n < self.args.partition_records:  # produce1000 did not run (enough)
            w.produce(self.bootstrap, t, self.args.partition_records - n, self.args.size, partitions=parts)
            self.fixtures["p1000"] = (t, parts, self.args.partition_records)
        return self.fixtures["p1000"]

    def cleanup(self):
        try:
            w.delete_topics(self.bootstrap, self.topics)
        finally:
            self.broker.close()


def prepare(row: str, s: Side) -> None:
    """Make the topics a row reads before its clock (and CPU count) starts."""
    {"consume": s.plain_topic, "txnconsume": s.txn_topic, "committed": s.txn_topic,
     "fetch1000": s.p1000_for_fetch, "produce1000": s.p1000_topic}.get(row, lambda: None)()


def measure(row: str, s: Side, args) -> dict:
    """One run of `row` on side `s`: a dict of METRICS keys plus `records` (a count or a note)."""
    a, bs = args, s.bootstrap
    if row in ("acks1", "idempotent"):
        t = s.topic(row)
        r = w.produce(bs, t, a.records, a.size, idempotent=row == "idempotent")
        if row == "acks1":
            s.fixtures["plain"] = (t, 1, a.records)
        return r
    if row == "produce1000":
        t, parts, n = s.p1000_topic()
        r = w.produce(bs, t, a.partition_records, a.size, partitions=parts)
        s.fixtures["p1000"] = (t, parts, n + a.partition_records)
        return r
    if row == "txn10":
        return w.transactions(bs, s.topic(row), a.txn10_count, 10, a.size)
    if row == "txn1000":
        return w.transactions(bs, s.topic(row), max(1, a.records // 1000), 1000, a.size)
    if row in ("consume", "txnconsume", "committed", "fetch1000"):
        t, parts, n = {"consume": s.plain_topic, "txnconsume": s.txn_topic, "committed": s.txn_topic,
                       "fetch1000": s.p1000_for_fetch}[row]()
        return w.consume(bs, t, parts, n, committed=row == "committed",
                         start=s.p1000_start if row == "fetch1000" else None)
    if row.startswith("commit"):
        n = int(row[len("commit"):])
        pid = getattr(s.broker, "pid", None)
        if n == 100 and "loadedrss" in a.rows and pid is None:
            raise BenchError(f"no process found listening on {bs} (for the loaded RSS)")
        return w.concurrent_transactions(bs, s.topic(row, 10), n, 10, a.size, partitions=10,
                                         seconds=a.commit_seconds, broker_pid=pid)
    raise AssertionError(row)


def measure_once(row: str, s: Side, args) -> dict:
    """`measure` with the broker's CPU time of the run; any failure loses the row."""
    try:
        prepare(row, s)
        pid = getattr(s.broker, "pid", None)
        cpu0 = cpu_seconds(pid) if pid else None
        r = measure(row, s, args)
        if pid and r.get("broker_cpu_s") is None:
            r["broker_cpu_s"] = cpu_seconds(pid) - cpu0
        return r
    except Exception as e:  # noqa: BLE001
        raise RowLost(row, s.name, f"{type(e).__name__}: {e or '(no detail)'}") from e


def pair_of(row: str, rows: list[str]) -> str | None:
    """The row that `row` is measured together with, when both are selected."""
    return next((a for a, b in PAIRED.items() if b == row and a in rows), None)


def paired_ratio(metric: str, mk_runs: list[dict], ref_runs: list[dict]) -> float:
    """The median of the runs' ratios, minikafka's run i against the reference's run i (measured
    back to back), oriented so that >1 means minikafka is ahead."""
    higher = METRICS[metric][1]
    return statistics.median((a[metric] / b[metric] if higher else b[metric] / a[metric])
                             for a, b in zip(mk_runs, ref_runs))


def median_run(row: str, runs: list[dict]) -> dict:
    """What the table shows of a row's runs on one broker: the median of each figure (a figure
    only some runs have, such as rc/ru when its pair was not measured, is left out)."""
    out = {m: statistics.median(r[m] for r in runs) for m in ROW_METRICS[row] if all(m in r for r in runs)}
    counts = [r["records"] for r in runs]
    out["records"] = counts[0] if len(set(counts)) == 1 else int(statistics.median(counts))
    cpu = [r["broker_cpu_s"] for r in runs if r.get("broker_cpu_s") is not None]
    if cpu:
        out["broker_cpu_s"] = statistics.median(cpu)
    return out


def wait_quiet(idle_share: float = 0.9, window: float = 0.25, limit: float = 5.0) -> bool:
    """Until the machine was at least `idle_share` idle over `window` seconds (at most `limit`
    seconds; False if it never was). A start-up is a tenth of a second of CPU: work left over from
    the rows before it (the shared Kafka deleting the run's topics' directories, clients exiting,
    the write-back of their data) would be timed with it."""
    def idle():
        v = [int(x) for x in open("/proc/stat").readline().split()[1:]]
        return sum(v), v[3] + v[4]  # all, idle + iowait

    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        t0, i0 = idle()
        time.sleep(window)
        t1, i1 = idle()
        if t1 > t0 and (i1 - i0) / (t1 - t0) >= idle_share:
            return True
    return False


def settle(limit: float = 2.0) -> bool:
    """Before each run (not timed): write back the page cache's dirty data, then wait until the
    machine is quiet (at most `limit` seconds; False if it never was). Every produce run leaves
    ~200 MB dirty; past the kernel's background ratio (~2 GB here) the flusher writes them back
    while whichever later run is timed, on either broker, shares the two cores with it."""
    os.sync()
    return wait_quiet(limit=limit)


def startup_rows(make, starts: int, idle_after: float) -> tuple[dict, dict]:
    """Start a broker `starts` times on an empty data dir, each on a quiet machine (dirty data
    written back, then 90% idle; waited for up to 30 s, as a start measured while the machine
    is still busy with the rows before measures that instead: 0.105-0.159 s over one run's ten
    starts at load 3.7): median ready time (and the CPU time the process had used by then),
    median idle RSS. `busy`: how many starts never found the machine quiet."""
    ready, cpu, rss, busy = [], [], [], 0
    for _ in range(starts):
        busy += not settle(limit=30.0)
        b = make()
        try:
            ready.append(b.ready_s)
            cpu.append(b.ready_cpu_s)
            time.sleep(idle_after)  # the idle footprint, once start-up work has settled
            rss.append(rss_mb(b.pid))
        finally:
            b.close()
    return ({"ready_s": statistics.median(ready), "broker_cpu_s": statistics.median(cpu),
             "records": f"{starts} starts", "samples": ready, "cpu_samples": cpu, "busy": busy},
            {"rss_mb": statistics.median(rss), "records": f"{starts} starts", "samples": rss})


def warm_up(s: Side, args) -> None:
    """A short pass of every workload family, not measured."""
    bs, n = s.bootstrap, max(1000, args.records // 10)
    t = s.topic("warm")
    w.produce(bs, t, n, args.size)
    w.produce(bs, t, n, args.size, idempotent=True)
    w.consume(bs, t, 1, 2 * n, committed=False)
    t = s.topic("warmtx", 10)
    w.transactions(bs, t, 100, 10, args.size)
    w.transactions(bs, t, 3, 1000, args.size)
    r = w.concurrent_transactions(bs, t, 10, 10, args.size, partitions=10, seconds=2)
    w.consume(bs, t, 10, 100 * 10 + 3 * 1000 + r["records"], committed=True)
    if {"produce1000", "fetch1000"} & set(args.rows):
        # Kafka is slow for some seconds after a 1,000-partition topic is made (measured: 10-40x
        # slower for 2-3 rounds of 20,000 records, then steady): rounds until two in a row are
        # within 30% of the best one, at most 60 s
        t, parts, n = s.p1000_topic()
        rates, t0 = [], time.monotonic()
        while time.monotonic() - t0 < 60:
            rates.append(w.produce(bs, t, 10_000, args.size, partitions=parts)["rate"])
            if len(rates) >= 3 and min(rates[-2:]) >= 0.7 * max(rates):
                break
        w.consume(bs, t, parts, 1000 + 10_000 * len(rates), committed=False)
        s.p1000_start = w.end_offsets(bs, t, parts)


def fmt_records(x) -> str:
    return f"{x:,}" if isinstance(x, int) else str(x)


def render(rows_done: dict, sides: list[str], header: list[str]) -> str:
    """The table: one line per metric, the row's label on its first line."""
    cols = (["row", "metric"] + sides + (["ratio"] if len(sides) == 2 else [])
            + ["records " + " | ".join(sides), "broker CPU s"])
    lines = []
    for row in ALL_ROWS:
        if row not in rows_done:
            continue
        res = rows_done[row]
        for i, m in enumerate(m for m in ROW_METRICS[row] if all(m in res[sd] for sd in sides)):
            unit, higher, f = METRICS[m]
            vals = [res[sd][m] for sd in sides]
            cells = [LABELS[row] if i == 0 else "", unit] + [f.format(v) for v in vals]
            if len(sides) == 2 and m == "rc_ru":
                cells.append("")  # each broker's own ratio: nothing to compare them by
            elif len(sides) == 2:
                mk, ref = vals
                ratio = res["ratio"][m] if m in res.get("ratio", {}) else (
                    (mk / ref if higher else ref / mk) if (mk and ref) else float("nan"))
                cells.append(f"{ratio:.2f}x")
            cells.append(" | ".join(fmt_records(res[sd]["records"]) for sd in sides) if i == 0 else "")
            cpu = [res[sd].get("broker_cpu_s") for sd in sides]
            cells.append(" | ".join("?" if c is None else f"{c:.2f}" for c in cpu) if i == 0 and any(
                c is not None for c in cpu) else "")
            lines.append(cells)
    width = [max(len(c[k]) for c in lines + [cols]) for k in range(len(cols))]
    right = set(range(2, 2 + len(sides) + (1 if len(sides) == 2 else 0)))

    def fmt(cells):
        return "  ".join(c.rjust(width[k]) if k in right else c.ljust(width[k]) for k, c in enumerate(cells)).rstrip()
    out = header + ["", fmt(cols), fmt(["-" * x for x in width])] + [fmt(c) for c in lines]
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reference-bootstrap", metavar="HOST:PORT",
                    help="also run every row against this broker (e.g. the reference Kafka 4.1 at 127.0.0.1:19092)")
    ap.add_argument("--reference-home", metavar="DIR",
                    help="Kafka distribution for the reference's ready/idle-RSS rows (default: "
                         "$REFERENCE_DIR/kafka_2.13-4.1.0, else ../reference/kafka_2.13-4.1.0)")
    ap.add_argument("--bootstrap", metavar="HOST:PORT",
                    help="measure a running minikafka instead of starting one (ready/idle RSS still start their own)")
    ap.add_argument("--records", type=int, default=200_000, help="records per produce/consume row (default 200,000)")
    ap.add_argument("--size", type=int, default=1024, help="record value size in bytes (default 1024)")
    ap.add_argument("--txns", type=int, default=10_000, help="transactions in the read_committed topic (default 10,000)")
    ap.add_argument("--txn10-count", type=int, default=2_000, help="transactions in the txn10 row (default 2,000)")
    ap.add_argument("--partition-records", type=int, default=100_000,
                    help="records over the 1,000 partitions (default 100,000)")
    ap.add_argument("--commit-seconds", type=float, default=5.0, help="length of each commitN run (default 5 s)")
    ap.add_argument("--ready-starts", type=int, default=10, help="starts for the ready/idle RSS rows (default 10)")
    # 5: the rows of several seconds (commits) are few runs; the 10-producer commit median is within
    # a few percent of Kafka's, and of 21 pairs over seven bench runs 5 went to Kafka
    ap.add_argument("--runs", type=int, default=5,
                    help="runs per row and broker; the table shows their median (default 5)")
    ap.add_argument("--quick-runs", type=int, default=7,
                    help="runs of the produce and fetch rows that take about a second (default 7)")
    ap.add_argument("--consume-runs", type=int, default=15,
                    help="runs of the consume rows (default 15)")
    ap.add_argument("--only", help="comma-separated row keys (default: all)")
    ap.add_argument("--skip", default="", help="comma-separated row keys to leave out")
    ap.add_argument("--no-warmup", action="store_true", help="skip the warm-up pass")
    ap.add_argument("--json", metavar="FILE", help="also write every run's figures to FILE")
    args = ap.parse_args()
    rows = args.only.split(",") if args.only else list(ALL_ROWS)
    skip = set(filter(None, args.skip.split(",")))
    unknown = [r for r in rows + list(skip) if r not in ALL_ROWS]
    if unknown:
        ap.error(f"unknown row(s) {', '.join(unknown)}; rows: {', '.join(ALL_ROWS)}")
    args.rows = rows = [r for r in ALL_ROWS if r in rows and r not in skip]
    if "loadedrss" in rows and "commit100" not in rows:
        ap.error("loadedrss is measured during commit100: select commit100 too")
    home = None
    if args.reference_bootstrap and ({"ready", "idlerss"} & set(rows)):
        home = kafka_home(args.reference_home)
        if home is None:
            print("bench: FAILED: rows 'ready' and 'idlerss' need a Kafka distribution to start a private"
                  " reference broker: pass --reference-home DIR (or set REFERENCE_DIR), or --skip ready,idlerss",
                  file=sys.stderr)
            return 1

    import confluent_kafka
    names = ["minikafka"] + (["kafka"] if args.reference_bootstrap else [])
    header = [f"minikafka side-by-side benchmark: {args.size} B records, confluent-kafka {confluent_kafka.version()[0]}"
              f" (librdkafka {confluent_kafka.libversion()[0]}), {os.cpu_count()} cores, median of {args.runs} run(s)"
              f" ({max(args.runs, args.quick_runs)} for produce and fetch rows, {max(args.runs, args.consume_runs)}"
              " for consume rows)",
              f"minikafka on CPython {platform.python_version()} ({sys.executable}; the broker runs on the"
              " interpreter of the bench: a build without PGO/LTO, such as pyenv's default, is slower)",
              f"load average at start {loadavg()}"
              + (f"; reference {args.reference_bootstrap}" if args.reference_bootstrap else ""),
              *(["ratio: how many times better minikafka is, the median of the runs' ratios (each run pairs the"
                 " brokers back to back; >1.00x: ahead; latency, ready and RSS: Kafka/minikafka)"]
                if args.reference_bootstrap else []),
              "records: how many each broker's runs wrote or read (median; every run checked); broker CPU s: CPU time"
              " of the broker process in a run, median (a shared Kafka's includes its other clients; ready: used"
              " by then)"]
    print("\n".join(header), file=sys.stderr, flush=True)
    results: dict[str, dict] = {}
    samples: dict[str, dict] = {}
    sides: dict[str, Side] = {}
    current = "start-up"
    try:
        # brokers started here run at the reference broker's niceness (else at the bench's own)
        nice = None
        if args.reference_bootstrap:
            sides["kafka"] = Side("kafka", Running(args.reference_bootstrap, "kafka"), args)
            if sides["kafka"].broker.pid:
                nice = nice_of(sides["kafka"].broker.pid)
        current = "minikafka start"
        if any(r not in ("ready", "idlerss") for r in rows) or args.bootstrap:
            sides["minikafka"] = Side("minikafka", Running(args.bootstrap, "minikafka") if args.bootstrap
                                      else Minikafka(nice=nice), args)
        nices = {n: nice_of(s.broker.pid) if s.broker.pid else "?" for n, s in sides.items()}
        header[1] += "; broker nice " + ", ".join(f"{n} {v}" for n, v in nices.items()) + f", clients {os.nice(0)}"
        print(header[1], file=sys.stderr, flush=True)
        if not args.no_warmup and any(r not in ("ready", "idlerss") for r in rows):
            for name, s in sides.items():
                current = f"warm-up of {name}"
                t0 = time.monotonic()
                warm_up(s, args)
                print(f"  warmed up {name} in {time.monotonic() - t0:.1f} s", file=sys.stderr, flush=True)
        for row in rows:
            if row in ("ready", "idlerss", "loadedrss") or row in PAIRED.values() and pair_of(row, rows):
                continue
            group = [row] + ([PAIRED[row]] if row in PAIRED and PAIRED[row] in rows else [])
            for g in group:
                samples[g] = {n: [] for n in names}
            for run in range(runs_of(row, args)):
                for name in (names if run % 2 == 0 else names[::-1]):
                    done = {}
                    for g in (group if run % 4 < 2 else group[::-1]):
                        current = g
                        settle()
                        done[g] = measure_once(g, sides[name], args)
                    if len(done) == 2 and "committed" in done:
                        done["committed"]["rc_ru"] = done["committed"]["rate"] / done["txnconsume"]["rate"]
                    for g, r in done.items():
                        samples[g][name].append(r)
                        print(f"  {g:<12} {name:<9} run {run + 1}: " + ", ".join(
                            f"{METRICS[m][2].format(r[m])} {METRICS[m][0]}" for m in ROW_METRICS[g] if m in r)
                              + (f", broker CPU {r['broker_cpu_s']:.2f} s" if r.get("broker_cpu_s") is not None else "")
                              + (f", clients' CPU {r['client_cpu_s']:.2f} s" if "client_cpu_s" in r else "")
                              + f" ({fmt_records(r['records'])} records, load {loadavg()})", file=sys.stderr, flush=True)
            for g in group:
                results[g] = {n: median_run(g, samples[g][n]) for n in names}
                if len(names) == 2:
                    results[g]["ratio"] = {m: paired_ratio(m, *(samples[g][n] for n in names))
                                           for m in ROW_METRICS[g] if m != "rc_ru" and m in samples[g][names[0]][0]}
            if row == "commit100" and "loadedrss" in rows:
                results["loadedrss"] = {n: {"rss_mb": max(x["peak_rss_mb"] for x in samples[row][n]),
                                            "records": "peak"} for n in names}
        # the bench's minikafka stops before the start-up rows; topics made on a running broker are
        # deleted at the very end (Kafka deletes their files a minute later, in the background)
        if not args.bootstrap and "minikafka" in sides:
            sides["minikafka"].broker.close()
            sides["minikafka"].topics.clear()
        if "ready" in rows or "idlerss" in rows:
            makers = {"minikafka": lambda: Minikafka(nice=nice)}
            if args.reference_bootstrap:
                makers["kafka"] = lambda: PrivateKafka(home, nice=nice)
            for name, make in makers.items():
                current = "ready" if "ready" in rows else "idlerss"
                try:
                    rd, rs = startup_rows(make, args.ready_starts, 1.0)
                except Exception as e:  # noqa: BLE001
                    raise RowLost(current, name, f"{type(e).__name__}: {e or '(no detail)'}") from e
                results.setdefault("ready", {})[name] = rd
                results.setdefault("idlerss", {})[name] = rs
                print(f"  ready/idle   {name:<9} median {rd['ready_s']:.3f} s (CPU {rd['broker_cpu_s']:.2f} s),"
                      f" {rs['rss_mb']:.1f} MB" + (f", {rd['busy']} of the starts on a busy machine" if rd["busy"] else "")
                      + f" (load {loadavg()})", file=sys.stderr, flush=True)
            for r in ("ready", "idlerss"):
                if r not in rows:
                    results.pop(r, None)
        for name in list(sides):
            current = f"clean-up of {name}"
            sides.pop(name).cleanup()
    except RowLost as e:
        print(f"bench: FAILED: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001
        print(f"bench: FAILED during {current}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"bench: interrupted during {current}", file=sys.stderr)
        return 130
    finally:
        for s in sides.values():
            try:
                s.cleanup()
            except Exception:  # noqa: BLE001
                pass
    missing = [r for r in rows if r not in results or any(n not in results[r] for n in names)]
    if missing:
        print(f"bench: FAILED: row(s) {', '.join(missing)} not measured", file=sys.stderr)
        return 1
    header[1] += f"; load average at end {loadavg()}"
    print(render(results, names, header))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"header": header, "median": results, "runs": samples}, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
