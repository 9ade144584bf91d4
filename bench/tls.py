#!/usr/bin/env python3
"""Throughput over TLS beside plaintext: one minikafka with a PLAINTEXT and an SSL listener
(certificates made with openssl in a temp dir), librdkafka (confluent-kafka), 1 KB records.

    python bench/tls.py [--records 100000] [--runs 2]
    make bench            # runs bench/throughput.py, then this

Rows: produce acks=1 and consume read_uncommitted, each on a topic of its own per listener; the
best of --runs; the ratio is TLS / plaintext (on TLS a Fetch answer is written through the TLS
stream instead of sendfile, and every byte is encrypted by the broker and decrypted by the client).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

import workloads as w  # noqa: E402
from brokers import ROOT, BenchError, _stop, free_port, wait_ready  # noqa: E402
from security_kit import make_certs  # noqa: E402

SIZE = 1024


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="minikafka-bench-tls-")
    proc = None
    try:
        certs = make_certs(__import__("pathlib").Path(tmp) / "certs")
        plain, tls = free_port(), free_port()
        cmd = [sys.executable, "-m", "minikafka", "--log-level", "WARNING", "--override", f"log.dirs={tmp}/data",
               "--override", f"listeners=PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{tls}",
               "--override", "ssl.keystore.type=PEM", "--override", f"ssl.keystore.location={certs.server}"]
        log = open(f"{tmp}/broker.log", "ab")
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        wait_ready("127.0.0.1", plain, proc, 60, "minikafka")
        clients = {"plaintext": ({}, f"127.0.0.1:{plain}"),
                   "TLS": ({"security.protocol": "SSL", "ssl.ca.location": str(certs.ca)}, f"127.0.0.1:{tls}")}
        best: dict[tuple[str, str], float] = {}
        for run in range(args.runs):
            for name, (client, bootstrap) in clients.items():
                topic = w.unique(f"tls-bench-{name}")
                w.create_topic(f"127.0.0.1:{plain}", topic, 1)
                r = w.produce(bootstrap, topic, args.records, SIZE, client=client)
                best[("produce acks=1", name)] = max(best.get(("produce acks=1", name), 0), r["rate"])
                r = w.consume(bootstrap, topic, 1, args.records, committed=False, client=client)
                best[("consume", name)] = max(best.get(("consume", name), 0), r["rate"])
        print(f"\nThroughput over TLS beside plaintext: minikafka, {args.records} records of {SIZE} B, best of {args.runs}")
        print(f"{'row':<18}{'plaintext rec/s':>18}{'TLS rec/s':>14}{'TLS/plain':>11}")
        for row in ("produce acks=1", "consume"):
            p, t = best[(row, "plaintext")], best[(row, "TLS")]
            print(f"{row:<18}{p:>18,.0f}{t:>14,.0f}{t / p:>10.2f}x")
        return 0
    except BenchError as e:
        print(f"bench/tls.py: {e}", file=sys.stderr)
        return 1
    finally:
        if proc is not None:
            _stop(proc, 30)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
