#!/usr/bin/env python3
"""Decompression bombs against minikafka, and Kafka's answer to the same batches (issue 32).

    python bench/bombs.py                                # and Kafka 4.1: the shared one, else a private one
    python bench/bombs.py --reference-bootstrap HOST:PORT  # another Kafka
    python bench/bombs.py --no-reference                   # minikafka alone

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

Every batch also goes to the reference Kafka (the shared one at 127.0.0.1:19092 if it answers,
never started or stopped here; else a private Kafka on free ports, started and stopped here;
topics named bombs-*, deleted at the end): its answer is printed beside minikafka's. Each figure
is printed beside its acceptance bound (issue 32): peak RSS under 200 MB above idle and bystander
p99 under 50 ms for every bomb; the answers equal; the tiny batch's CPU beside Kafka's. The load
average is printed at the start and the end: on a shared, loaded machine the times are
indicative.
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
from brokers import (Minikafka, PrivateKafka, cpu_seconds, kafka_home, listener_pid,  # noqa: E402
                     metadata_lists_broker, split_hostport)
from minikafka.admin.wire import WireClient  # noqa: E402
from minikafka.protocol import records as rec  # noqa: E402
from minikafka.protocol import schema  # noqa: E402

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
            self.await_leader(name)
            self.topics.append(name)
        return name

    def encode_produce(self, topic: str, batch: bytes) -> tuple[int, bytes]:
        """A Produce request of ``batch``, encoded (before the measured window: encoding a large
        batch holds this process's GIL, which the bystander's threads need too)."""
        body = {"transactional_id": None, "acks": -1, "timeout_ms": 600000,
                "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}
        self.client.corr += 1
        return self.client.corr, schema.encode_request(0, 9, self.client.corr, self.client.client_id, body)

    def produce(self, request: tuple[int, bytes]):
        corr, frame = request
        self.client.send_frame(frame)
        p = self.client.receive(0, 9, corr).responses[0].partition_responses[0]
        return p.error_code, len(p.record_errors or [])

    def await_leader(self, topic: str, timeout: float = 60) -> None:
        """Until the new topic's partition has a leader (Kafka's brokers learn of a topic from the
        controller a moment after CreateTopics answers: a produce then is NOT_LEADER_OR_FOLLOWER)."""
        deadline = time.monotonic() + timeout
        while True:
            t = self.client.request(3, 12, {"topics": [{"topic_id": uuid.UUID(int=0), "name": topic}],
                                            "allow_auto_topic_creation": False,
                                            "include_topic_authorized_operations": False}).topics[0]
            if t.error_code == 0 and t.partitions and t.partitions[0].leader_id >= 0:
                return
            if time.monotonic() > deadline:
                raise SystemExit(f"bombs: {self.name}: {topic} has no leader after {timeout:.0f} s")
            time.sleep(0.1)

    def close(self) -> None:
        if self.topics:
            try:
                self.client.request(20, 6, {"topics": [{"name": n, "topic_id": uuid.UUID(int=0)} for n in self.topics],
                                            "timeout_ms": 30000})
            except Exception as e:  # the figures are out already; say what is left behind
                print(f"bombs: could not delete {self.topics} on {self.name}: {e}", file=sys.stderr)
        self.client.close()


def measure(target: Target, topic: str, batch: bytes, bystander: Bystander | None) -> dict:
    request = target.encode_produce(topic, batch)
    base = reset_peak(target.pid) if target.pid and bystander else None
    cpu0 = cpu_seconds(target.pid) if target.pid else None
    mark = time.monotonic()
    answer = target.produce(request)
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


RSS_BOUND_MB = 200  # issue 32: peak RSS above idle while a bomb is processed
P99_BOUND_MS = 50  # issue 32: the concurrent producer's and consumer's p99 meanwhile
SHARED_REFERENCE = "127.0.0.1:19092"  # the shared reference Kafka 4.1 (../shared/reference/kafka.sh)


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def within(value, bound) -> str:
    """``value`` beside its acceptance bound: ``12.3 (<50 ok)``."""
    if value is None:
        return f"- (<{bound} ?)"
    return f"{value} (<{bound} {'ok' if value < bound else 'OVER'})"


def reference(args) -> tuple[str | None, object]:
    """The Kafka the batches also go to: --reference-bootstrap, else the shared reference if it
    answers, else a private Kafka started here from the distribution (kafka_home), else none."""
    if args.no_reference:
        return None, None
    if args.reference_bootstrap:
        return args.reference_bootstrap, None
    try:
        if metadata_lists_broker(*split_hostport(SHARED_REFERENCE)):
            return SHARED_REFERENCE, None
    except OSError:
        pass
    home = kafka_home(args.reference_home)
    if home is None:
        print(f"# no reference Kafka: {SHARED_REFERENCE} does not answer and no distribution found "
              f"(--reference-home or REFERENCE_DIR); minikafka alone", flush=True)
        return None, None
    print(f"# {SHARED_REFERENCE} does not answer: starting a private Kafka 4.1 from {home}", flush=True)
    private = PrivateKafka(home)
    return private.bootstrap, private


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reference-bootstrap", help="also send every batch to this Kafka (default: the shared "
                    f"reference at {SHARED_REFERENCE} if it answers, else a private one started here)")
    ap.add_argument("--reference-home", help="Kafka distribution for the private reference "
                    "(default $REFERENCE_DIR/kafka_2.13-4.1.0)")
    ap.add_argument("--no-reference", action="store_true", help="minikafka alone")
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
    print(f"# load average {load_average()} ({os.cpu_count()} cores) at the start", flush=True)
    bombs = {}
    for name in codecs:
        t0 = time.monotonic()
        bombs[name] = cached(cache / f"{name}-{args.size_mb}mb-16.bin",
                             lambda: bad.inflating_batch(bad.CODECS[name], size, records=16, key=b"k"))
        print(f"# {name}: {len(bombs[name]):,} bytes inflating to {size:,} ({time.monotonic() - t0:.1f}s to load)",
              flush=True)
    tiny = cached(cache / f"tiny-zstd-{args.tiny}.bin", lambda: bad.tiny_records_batch(4, args.tiny)) \
        if args.tiny else None

    ref_bootstrap, private = reference(args)
    mk = Minikafka()
    ours = Target("minikafka", f"127.0.0.1:{mk.port}", mk.proc.pid)
    ref = None
    results = {"bombs": [], "tiny": None, "load_average_start": load_average()}
    bystander = None
    try:
        if ref_bootstrap:
            ref = Target("kafka", ref_bootstrap, listener_pid(split_hostport(ref_bootstrap)[1]))
            print(f"# reference Kafka at {ref_bootstrap} (pid {ref.pid})", flush=True)
        bystander = Bystander(ours.bootstrap).start()
        bystander.wait_progress(requests=20)
        idle = Path(f"/proc/{mk.proc.pid}/status").read_text()
        idle_mb = int(next(x for x in idle.splitlines() if x.startswith("VmRSS:")).split()[1]) / 1024
        quiet = time.monotonic()
        bystander.wait_progress(requests=100, timeout=60)
        lat = sorted(bystander.latencies(since=quiet))
        results["quiet_p99_ms"] = round(lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000, 1)
        print(f"# minikafka idle RSS (bystander running): {idle_mb:.1f} MB; bystander p99 with no bomb: "
              f"{results['quiet_p99_ms']} ms over {len(lat)} requests", flush=True)
        header = (f"{'codec':7} {'LAT bit':7} {'topic':10} {'answer':>6} {'kafka':>6} "
                  f"{'peak RSS above idle MB':>24} {'bystander p99 ms':>18} {'seconds':>8} {'broker cpu s':>12}")
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
                          f"{row['kafka']['answer'] if ref else '':>6} "
                          f"{within(row['peak_above_mb'], RSS_BOUND_MB):>24} "
                          f"{within(row['p99_ms'], P99_BOUND_MS):>18} {row['seconds']:>8} {row['cpu_s']:>12}",
                          flush=True)
        if "snappy" in bombs:
            # the control for the snappy rows: a request of the same size with nothing to inflate
            control = bad.batch(b"".join(bad.record(bytes(len(bombs["snappy"]) // 16 - 64), b"k", i)
                                         for i in range(16)), 16)
            row = {"codec": "none", "bytes": len(control)}
            row.update(measure(ours, ours.topic("plain"), control, bystander))
            results["control"] = row
            print(f"# control: an uncompressed batch of {len(control):,} bytes (the snappy bomb's size, nothing to "
                  f"inflate): answer {row['answer']}, peak {within(row['peak_above_mb'], RSS_BOUND_MB)} MB above "
                  f"idle, bystander p99 {within(row['p99_ms'], P99_BOUND_MS)} ms, {row['seconds']} s", flush=True)
        if tiny is not None:
            row = {"records": args.tiny, "bytes": len(tiny)}
            row["minikafka"] = measure(ours, ours.topic("plain"), tiny, bystander)
            if ref is not None:
                row["kafka"] = measure(ref, ref.topic("plain"), tiny, None)
            results["tiny"] = row
            m, k = row["minikafka"], row.get("kafka")
            print(f"# {args.tiny:,} tiny records (zstd, {len(tiny):,} bytes): minikafka answer {m['answer']}, "
                  f"CPU {m['cpu_s']} s, {m['seconds']} s to the answer, bystander p99 "
                  f"{within(m['p99_ms'], P99_BOUND_MS)} ms, peak {within(m['peak_above_mb'], RSS_BOUND_MB)} MB "
                  f"above idle")
            if k:
                ratio = f"{m['cpu_s'] / k['cpu_s']:.1f}x Kafka's" if k.get("cpu_s") else "Kafka's CPU unknown"
                print(f"#   Kafka answer {k['answer']}, CPU {k.get('cpu_s')} s, {k['seconds']} s to the answer: "
                      f"minikafka's CPU {ratio} (reported beside Kafka's; no bound)")
        bystander.stop()
        bystander.check()
    finally:
        if bystander is not None:
            bystander.stop()
        ours.close()
        if ref is not None:
            ref.close()
        mk.close()
        if private is not None:
            private.close()
    results["load_average_end"] = load_average()
    if results["bombs"]:
        worst_rss = max(r["peak_above_mb"] for r in results["bombs"])
        worst_p99 = max(r["p99_ms"] or 0 for r in results["bombs"])
        print(f"# worst peak RSS above idle {within(worst_rss, RSS_BOUND_MB)} MB, worst bystander p99 "
              f"{within(worst_p99, P99_BOUND_MS)} ms over {len(results['bombs'])} bombs")
        if ref is not None:
            same = all(r["answer"] == r["kafka"]["answer"] for r in results["bombs"])
            print(f"# answers {'all equal' if same else 'DIFFER'} to Kafka's")
    print(f"# load average {results['load_average_end']} at the end (p99 and CPU figures on a loaded "
          f"machine are indicative)")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
