#!/usr/bin/env python3
"""Decompression bombs against minikafka, and Kafka's answer to the same batches (issue 32).

    python bench/bombs.py                                         # minikafka alone
    python bench/bombs.py --reference-bootstrap 127.0.0.1:19092   # and the same batches to Kafka

For each codec (gzip, snappy, lz4, zstd), a batch whose 16 records of 64 MiB of zeros inflate
to 1 GiB (gzip 1 MB, lz4 4 MB, zstd 40 KB, snappy in snappy-java's 32 KB blocks 48 MB; every
record keyed), sent with and without the producer's LogAppendTime bit, to a plain and to a
compacted topic (max.message.bytes 64 MiB, so that the snappy one fits): minikafka's answer,
its peak RSS above its RSS just before (the kernel's high-water mark, reset before each
batch), the wall time to the answer, and the p99 of a bystander's requests while it was
processed (a transactional producer and a read_committed consumer on their own topic:
tests/adversarial/bystander.py). Then one batch of --tiny (default 5,000,000) tiny records
(zstd): minikafka's CPU time for it beside Kafka's for the same bytes (the CPU of the
reference broker's process, found by its port), and the bystander's p99 meanwhile.

With --reference-bootstrap every batch also goes to that Kafka (topics named bombs-*, deleted at
the end): its answer is printed beside minikafka's. Acceptance (issue 32): peak RSS under 200 MB
above idle and bystander p99 under 50 ms for every bomb; the answers equal. On a shared, loaded
machine the times are indicative.
"""
from __future__ import annotations

import argparse
import json
import os
import struct
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))  # this checkout's minikafka, whatever the venv has installed

from adversarial import batches as bad  # noqa: E402
from adversarial.bystander import Bystander  # noqa: E402
from brokers import Minikafka, cpu_seconds, listener_pid, split_hostport  # noqa: E402
from minikafka.broker.tools.wire import WireClient  # noqa: E402
from minikafka.protocol import records as rec  # noqa: E402

MiB = 1 << 20
TOPIC_CONFIGS = {"max.message.bytes": str(64 * MiB)}


def peak_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise SystemExit(f"bombs: pid {pid} has no VmHWM")


def reset_peak(pid: int) -> int:
    Path(f"/proc/{pid}/clear_refs").write_text("5")
    return peak_rss(pid)


def with_log_append_time(batch: bytes) -> bytes:
    b = bytearray(batch)
    attrs = struct.unpack_from(">h", b, rec.ATTRIBUTES_OFFSET)[0]
    struct.pack_into(">h", b, rec.ATTRIBUTES_OFFSET, attrs | rec.TIMESTAMP_TYPE_MASK)
    struct.pack_into(">I", b, rec.CRC_OFFSET, rec.compute_crc(b, 0, len(b)))
    return bytes(b)


def cached(path: Path, build) -> bytes:
    if path.exists():
        return path.read_bytes()
    data = build()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return data


class Target:
    """One broker the batches go to: a connection, the topics made for this run."""

    def __init__(self, name: str, bootstrap: str, pid: int | None):
        self.name, self.bootstrap, self.pid = name, bootstrap, pid
        host, port = split_hostport(bootstrap)
        self.client = WireClient(host, port, timeout=600)
        self.topics: list[str] = []
        self.run = uuid.uuid4().hex[:6]

    def topic(self, kind: str) -> str:
        name = f"bombs-{kind}-{self.run}"
        if name not in self.topics:
            configs = dict(TOPIC_CONFIGS, **({"cleanup.policy": "compact"} if kind == "compacted" else {}))
            body = {"topics": [{"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [],
                                "configs": [{"name": k, "value": v} for k, v in configs.items()]}],
                    "timeout_ms": 30000, "validate_only": False}
            code = self.client.request(19, 5, body).topics[0].error_code
            if code not in (0, 36):
                raise SystemExit(f"bombs: {self.name} cannot create {name}: error {code}")
            self.topics.append(name)
        return name

    def produce(self, topic: str, batch: bytes):
        body = {"transactional_id": None, "acks": -1, "timeout_ms": 600000,
                "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}
        p = self.client.request(0, 9, body).responses[0].partition_responses[0]
        return p.error_code, len(p.record_errors or [])

    def close(self) -> None:
        if self.topics:
            try:
                self.client.request(20, 6, {"topics": [{"name": n, "topic_id": uuid.UUID(int=0)} for n in self.topics],
                                            "timeout_ms": 30000})
            except Exception as e:  # the figures are out already; say what is left behind
                print(f"bombs: could not delete {self.topics} on {self.name}: {e}", file=sys.stderr)
        self.client.close()


def measure(target: Target, topic: str, batch: bytes, bystander: Bystander | None) -> dict:
    base = reset_peak(target.pid) if target.pid and bystander else None
    cpu0 = cpu_seconds(target.pid) if target.pid else None
    mark = time.monotonic()
    answer = target.produce(topic, batch)
    done = time.monotonic()
    out = {"answer": answer[0], "record_errors": answer[1], "seconds": round(done - mark, 3)}
    if cpu0 is not None:
        out["cpu_s"] = round(cpu_seconds(target.pid) - cpu0, 3)
    if base is not None:
        out["peak_above_mb"] = round((peak_rss(target.pid) - base) / MiB, 1)
    if bystander is not None:
        bystander.wait_progress()
        lat = sorted(s for t, _, s in bystander.samples if mark <= t <= done + 0.05)
        out["bystander_requests"] = len(lat)
        out["p99_ms"] = round(lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000, 1) if lat else None
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reference-bootstrap", help="also send every batch to this Kafka (its answer, its CPU)")
    ap.add_argument("--size-mb", type=int, default=1024, help="inflated size of each bomb (default 1024)")
    ap.add_argument("--codecs", default="gzip,snappy,lz4,zstd")
    ap.add_argument("--tiny", type=int, default=5_000_000, help="records in the tiny-records batch (0: none)")
    ap.add_argument("--cache", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "minikafka-bombs"),
                    help="where built batches are kept between runs")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()

    cache = Path(args.cache)
    size = args.size_mb * MiB
    codecs = [c for c in args.codecs.split(",") if c]
    bombs = {}
    for name in codecs:
        t0 = time.monotonic()
        bombs[name] = cached(cache / f"{name}-{args.size_mb}mb-16.bin",
                             lambda: bad.inflating_batch(bad.CODECS[name], size, records=16, key=b"k"))
        print(f"# {name}: {len(bombs[name]):,} bytes inflating to {size:,} ({time.monotonic() - t0:.1f}s to load)",
              flush=True)
    tiny = cached(cache / f"tiny-zstd-{args.tiny}.bin", lambda: bad.tiny_records_batch(4, args.tiny)) \
        if args.tiny else None

    mk = Minikafka()
    ours = Target("minikafka", f"127.0.0.1:{mk.port}", mk.proc.pid)
    ref = None
    if args.reference_bootstrap:
        ref = Target("kafka", args.reference_bootstrap, listener_pid(split_hostport(args.reference_bootstrap)[1]))
    results = {"bombs": [], "tiny": None}
    bystander = Bystander(ours.bootstrap).start()
    try:
        bystander.wait_progress(requests=20)
        idle = Path(f"/proc/{mk.proc.pid}/status").read_text()
        idle_mb = int(next(x for x in idle.splitlines() if x.startswith("VmRSS:")).split()[1]) / 1024
        quiet = time.monotonic()
        bystander.wait_progress(requests=100, timeout=60)
        lat = sorted(bystander.latencies(since=quiet))
        results["quiet_p99_ms"] = round(lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000, 1)
        print(f"# minikafka idle RSS (bystander running): {idle_mb:.1f} MB; bystander p99 with no bomb: "
              f"{results['quiet_p99_ms']} ms over {len(lat)} requests", flush=True)
        header = (f"{'codec':7} {'LAT bit':7} {'topic':10} {'answer':>6} {'kafka':>6} {'peak above idle MB':>18} "
                  f"{'p99 ms':>7} {'seconds':>8} {'broker cpu s':>12}")
        print(header)
        for name in codecs:
            for lat in (False, True):
                batch = with_log_append_time(bombs[name]) if lat else bombs[name]
                for kind in ("plain", "compacted"):
                    row = {"codec": name, "log_append_time_bit": lat, "topic": kind}
                    row.update(measure(ours, ours.topic(kind), batch, bystander))
                    if ref is not None:
                        row["kafka"] = measure(ref, ref.topic(kind), batch, None)
                    results["bombs"].append(row)
                    print(f"{name:7} {'yes' if lat else 'no':7} {kind:10} {row['answer']:>6} "
                          f"{row['kafka']['answer'] if ref else '':>6} {row['peak_above_mb']:>18} "
                          f"{row['p99_ms']:>7} {row['seconds']:>8} {row['cpu_s']:>12}", flush=True)
        if tiny is not None:
            row = {"records": args.tiny, "bytes": len(tiny)}
            row["minikafka"] = measure(ours, ours.topic("plain"), tiny, bystander)
            if ref is not None:
                row["kafka"] = measure(ref, ref.topic("plain"), tiny, None)
            results["tiny"] = row
            m, k = row["minikafka"], row.get("kafka")
            print(f"# {args.tiny:,} tiny records (zstd, {len(tiny):,} bytes): minikafka answer {m['answer']}, "
                  f"CPU {m['cpu_s']} s, {m['seconds']} s to the answer, bystander p99 {m['p99_ms']} ms, peak "
                  f"{m['peak_above_mb']} MB above idle" + (f"; Kafka answer {k['answer']}, CPU {k['cpu_s']} s, "
                                                            f"{k['seconds']} s" if k else ""))
        bystander.stop()
        bystander.check()
    finally:
        bystander.stop()
        ours.close()
        if ref is not None:
            ref.close()
        mk.close()
    worst_rss = max(r["peak_above_mb"] for r in results["bombs"]) if results["bombs"] else None
    worst_p99 = max(r["p99_ms"] or 0 for r in results["bombs"]) if results["bombs"] else None
    print(f"# worst peak above idle {worst_rss} MB (bound 200), worst bystander p99 {worst_p99} ms (bound 50)")
    if ref is not None:
        same = all(r["answer"] == r["kafka"]["answer"] for r in results["bombs"])
        print(f"# answers {'all equal' if same else 'DIFFER'} to Kafka's")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
