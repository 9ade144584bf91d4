#!/usr/bin/env python3
"""Many hostile connections against one minikafka: its memory and a well-behaved client's latency.

    python bench/hostile_connections.py [--connections 1000] [--announce 104857600] [--send 71680]

Starts minikafka (fresh data dir, free ports, default settings) with a PLAINTEXT and an SSL
listener (no client authentication; certificates made with openssl in a temp dir). A producer
and a read_committed consumer (tests/adversarial/bystander.py: a transactional producer, one
round of AddPartitionsToTxn, Produce, EndTxn every 10 ms, and a consumer fetching with
isolation_level=1) run on the PLAINTEXT listener throughout, each request timed. Then a
separate process opens --connections TLS connections to the SSL listener (--concurrency
handshakes at a time), each announcing a request of --announce bytes and sending --send bytes
of it, and holds them all --hold seconds. Reported: the broker's RSS (before, the peak, and
while the connections are held), the bystander's p99 per request before, while the connections
are being opened and while they are held, and whether anything failed.

Acceptance (issue 32): with 1,000 connections, each announcing 100 MB and sending 70 KB: RSS
under 300 MB, p99 under 50 ms once held and under 200 ms while opening, nothing crashes.
On a shared machine the latencies are indicative: the load average is printed with them.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from brokers import ROOT, BenchError, _stop, free_port, wait_ready  # noqa: E402


def rss_kb(pid: int, field: str = "VmRSS") -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise BenchError(f"no {field} for pid {pid}")


def hostile(host: str, port: int, ca: str, count: int, concurrency: int, announce: int, send: int,
            hold: float) -> None:
    """The hostile client (run in its own process): prints one JSON line when all connections are
    open ({"opened", "failed", "seconds"}), holds them until stdin closes or ``hold`` runs out."""
    import ssl
    import trio

    ctx = ssl.create_default_context(cafile=ca)
    # a Produce request header (api key 0, version 9), then filler: the broker reads it as the
    # start of a 100 MB Produce request
    head = struct.pack(">ihhi", announce, 0, 9, 1) + struct.pack(">h", 1) + b"h"
    payload = head + b"\0" * max(0, send - len(head) + 4)
    streams, failed = [], [0]

    async def one(limit):
        async with limit:
            try:
                s = await trio.open_ssl_over_tcp_stream(host, port, ssl_context=ctx)
                await s.do_handshake()
                await s.send_all(payload)
                streams.append(s)
            except (OSError, trio.BrokenResourceError) as e:
                failed[0] += 1
                if failed[0] <= 3:
                    print(f"connection failed: {e!r}", file=sys.stderr)

    async def main():
        limit = trio.CapacityLimiter(concurrency)
        start = time.monotonic()
        async with trio.open_nursery() as n:
            for _ in range(count):
                n.start_soon(one, limit)
        print(json.dumps({"opened": len(streams), "failed": failed[0], "seconds": time.monotonic() - start}),
              flush=True)
        with trio.move_on_after(hold):
            await trio.to_thread.run_sync(sys.stdin.read, abandon_on_cancel=True)
        for s in streams:
            await trio.aclose_forcefully(s)

    trio.run(main)


def p99(samples: list[float]) -> float:
    s = sorted(samples)
    return s[min(len(s) - 1, int(len(s) * 0.99))] if s else float("nan")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--connections", type=int, default=1000)
    ap.add_argument("--announce", type=int, default=100 * 1024 * 1024, help="announced request size (bytes)")
    ap.add_argument("--send", type=int, default=70 * 1024, help="bytes of it each connection sends")
    ap.add_argument("--concurrency", type=int, default=8, help="TLS handshakes in flight at a time")
    ap.add_argument("--hold", type=float, default=10.0, help="seconds the connections are held")
    ap.add_argument("--baseline", type=float, default=3.0, help="seconds of bystander alone first")
    ap.add_argument("--override", action="append", default=[], help="broker setting key=value")
    ap.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    ap.add_argument("--hostile", nargs=8, help=argparse.SUPPRESS)  # the child process
    args = ap.parse_args(argv)
    if args.hostile:
        h, p, ca, count, conc, announce, send, hold = args.hostile
        hostile(h, int(p), ca, int(count), int(conc), int(announce), int(send), float(hold))
        return 0

    from adversarial.bystander import Bystander
    from security_kit import make_certs

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = args.connections + 200
    if soft < need:
        if hard < need:
            raise SystemExit(f"ulimit -n is {soft} (hard {hard}); {need} descriptors are needed")
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))  # inherited by the broker and the client
    tmp = tempfile.mkdtemp(prefix="minikafka-bench-hostile-")
    proc = child = None
    try:
        certs = make_certs(Path(tmp) / "certs")
        plain, tls = free_port(), free_port()
        cmd = [sys.executable, "-m", "minikafka", "--log-level", "INFO", "--override", f"log.dirs={tmp}/data",
               "--override", f"listeners=PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{tls}",
               "--override", "ssl.keystore.type=PEM", "--override", f"ssl.keystore.location={certs.server}"]
        for o in args.override:
            cmd += ["--override", o]
        log_path = Path(tmp) / "broker.log"
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=open(log_path, "ab"), stderr=subprocess.STDOUT,
                                env=dict(os.environ, PYTHONPATH=str(ROOT)))
        wait_ready("127.0.0.1", plain, proc, 60, "minikafka")
        rss_idle = rss_kb(proc.pid)
        by = Bystander(f"127.0.0.1:{plain}", timeout=30).start()
        time.sleep(args.baseline)  # the bystander alone for a while (a measurement window)
        t_open = by.mark()
        child = subprocess.Popen([sys.executable, __file__, "--hostile", "127.0.0.1", str(tls), str(certs.ca),
                                  str(args.connections), str(args.concurrency), str(args.announce), str(args.send),
                                  str(args.hold + 120)],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                 env=dict(os.environ, PYTHONPATH=str(ROOT)))
        line = child.stdout.readline()
        if not line:
            raise BenchError(f"the hostile client ended early (exit code {child.wait()})")
        opened = json.loads(line)
        t_held = by.mark()
        held_rss = []
        while time.monotonic() < t_held + args.hold:
            held_rss.append(rss_kb(proc.pid))
            time.sleep(0.1)  # sampling interval
        t_end = by.mark()
        peak = rss_kb(proc.pid, "VmHWM")
        load = os.getloadavg()
        child.stdin.close()
        child.wait(60)
        by.stop()
        alive = proc.poll() is None
        errors = by.errors
        try:
            by.check()
        except AssertionError as e:
            errors = errors + [str(e)]
        tracebacks = log_path.read_text(errors="replace").count("Traceback")
        lat = {name: [s for t, _, s in by.samples if lo <= t < hi] for name, lo, hi in
               (("alone", 0, t_open), ("opening", t_open, t_held), ("held", t_held, t_end))}
        out = {
            "connections": args.connections, "announce": args.announce, "send": args.send,
            "concurrency": args.concurrency, "opened": opened["opened"], "failed": opened["failed"],
            "open_seconds": round(opened["seconds"], 2),
            "rss_idle_mb": round(rss_idle / 1024, 1), "rss_peak_mb": round(peak / 1024, 1),
            "rss_held_mb": round(sorted(held_rss)[len(held_rss) // 2] / 1024, 1) if held_rss else None,
            "p99_ms": {k: round(p99(v) * 1000, 1) for k, v in lat.items()},
            "requests": {k: len(v) for k, v in lat.items()},
            "broker_alive": alive, "bystander_errors": errors, "tracebacks_in_log": tracebacks,
            "load_average": [round(x, 2) for x in load], "ulimit_n": resource.getrlimit(resource.RLIMIT_NOFILE)[0],
            "cpus": os.cpu_count(),
        }
        print(f"\n{out['opened']} TLS connections opened ({out['failed']} failed) in {out['open_seconds']} s, "
              f"each announcing {args.announce:,} bytes and sending {args.send:,}; held {args.hold:.0f} s")
        print(f"broker RSS: idle {out['rss_idle_mb']} MB, peak {out['rss_peak_mb']} MB, "
              f"held {out['rss_held_mb']} MB")
        print("bystander p99 per request (ms): " + ", ".join(
            f"{k} {v} ({out['requests'][k]} requests)" for k, v in out["p99_ms"].items()))
        print(f"broker alive: {alive}; bystander errors: {errors or 'none'}; tracebacks in the broker log: "
              f"{tracebacks}; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")
        if args.json:
            Path(args.json).write_text(json.dumps(out, indent=1))
        ok = alive and not errors and not tracebacks and out["failed"] == 0
        return 0 if ok else 1
    except BenchError as e:
        print(f"bench/hostile_connections.py: {e}", file=sys.stderr)
        return 1
    finally:
        if child is not None and child.poll() is None:
            child.kill()
        if proc is not None:
            _stop(proc, 30)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
