#!/usr/bin/env python3
"""Run kafka-python's own integration suite (its ``test/integration``) unchanged against
minikafka, and against Apache Kafka 4.1 to compare.

The suite runs in its external-broker mode (``KAFKA_VERSION=4.1.0``,
``KAFKA_URI=PLAINTEXT://HOST:PORT``, ``KAFKA_ROOT`` an existing empty dir), with
``--tb=native --timeout-method=signal``, its SSL file left out (it builds Java
keystores). Each broker is configured like the suite's own test broker
(``servers/resources/default/kafka.properties``): node.id 0, advertised.listeners
set, 4 partitions per topic, 2 offsets partitions, group.min.session.timeout.ms
1000, no initial rebalance delay, StandardAuthorizer with
allow.everyone.if.no.acl.found=true.

    python tools/kafka_python_suite.py CHECKOUT [--target minikafka|kafka|both]
        [--bootstrap HOST:PORT] [--python PY] [--json OUT] [-k EXPR]

CHECKOUT is a kafka-python source tree (e.g. commit a3b3836 of dpkp/kafka-python,
exported with ``git archive``); it is only read. Targets:

* ``minikafka`` (default): this checkout's broker, in a temp dir on a free port;
* ``kafka``: a throwaway Kafka 4.1 (tests/conformance/kafka_reference.py,
  ``REFERENCE_DIR``), the same settings, node id 0;
* ``both``: the two in turn, then every test that passes on Kafka and not on
  minikafka (exit status 1 if there is one);
* ``--bootstrap``: an already running broker instead (its configuration is yours).

The suite needs pytest and pytest-timeout beside kafka-python's own imports: by
default a throwaway venv is made (``python -m venv`` in the temp dir, those two and
kafka-python's optional codecs installed with pip); ``--python`` runs it with an
existing interpreter instead (one that has them; the checkout's ``kafka`` package
comes first on its path, so an installed kafka-python does not matter). Nothing is
installed into that interpreter.

The last line on stdout is a JSON summary: per target the counts and each test's
outcome; with ``both``, ``regressions`` (passes on Kafka, not on minikafka).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KAFKA_VERSION = "4.1.0"
# the suite's test broker (kafka-python servers/resources/default/kafka.properties), as far as
# a client can tell; the listeners are each target's
SUITE_BROKER = {
    "node.id": "0",
    "num.partitions": "4",
    "offsets.topic.num.partitions": "2",
    "group.min.session.timeout.ms": "1000",
    "group.initial.rebalance.delay.ms": "0",
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
}
# what the suite imports beyond the standard library and kafka-python itself
SUITE_PACKAGES = ["pytest", "pytest-timeout", "pytest-mock", "crc32c", "lz4", "python-snappy", "zstandard"]
LEFT_OUT = ["test/integration/test_ssl_integration.py"]


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------ brokers

class Minikafka:
    name = "minikafka"

    def __init__(self, workdir: Path):
        sys.path.insert(0, str(ROOT))
        from minikafka.testing import BrokerProcess
        self.port = free_port()
        overrides = dict(SUITE_BROKER, **{"advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}"})
        self.broker = BrokerProcess(workdir / "minikafka-data", port=self.port, overrides=overrides,
                                    name="kafka-python-suite")

    def start(self) -> str:
        self.broker.start()
        return f"127.0.0.1:{self.port}"

    def close(self) -> None:
        self.broker.close()

    def describe(self) -> str:
        return f"minikafka ({ROOT}), log {self.broker.log_path}"


class ReferenceKafka:
    name = "kafka"

    def __init__(self, workdir: Path):
        sys.path.insert(0, str(ROOT / "tests"))
        sys.path.insert(0, str(ROOT))
        from conformance.kafka_reference import KafkaCluster, unavailable_reason
        reason = unavailable_reason()
        if reason:
            raise SystemExit(f"kafka_python_suite: {reason}")
        self.cluster = KafkaCluster(dict(SUITE_BROKER))
        self.cluster.node1.node_id = 0   # the suite's broker is node 0

    def start(self) -> str:
        self.cluster.start()
        return self.cluster.bootstrap

    def close(self) -> None:
        self.cluster.close()

    def describe(self) -> str:
        return f"Apache Kafka {KAFKA_VERSION} (KRaft, one combined node, {self.cluster.root})"


class External:
    name = "external"

    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap

    def start(self) -> str:
        return self.bootstrap

    def close(self) -> None:
        pass

    def describe(self) -> str:
        return f"the broker at {self.bootstrap}"


# ------------------------------------------------------------------ the suite

def suite_python(args, workdir: Path) -> str:
    if args.python:
        return args.python
    venv = workdir / "venv"
    print(f"making a throwaway venv in {venv} ({', '.join(SUITE_PACKAGES)})", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    subprocess.run([py, "-m", "pip", "install", "--quiet", *SUITE_PACKAGES], check=True)
    return py


def run_suite(python: str, checkout: Path, bootstrap: str, workdir: Path, label: str, k: str | None) -> dict:
    root = workdir / f"kafka-root-{label}"   # KAFKA_ROOT: any existing dir (unused by the external mode)
    root.mkdir(exist_ok=True)
    junit = workdir / f"junit-{label}.xml"
    env = dict(os.environ, KAFKA_VERSION=KAFKA_VERSION, KAFKA_URI=f"PLAINTEXT://{bootstrap}", KAFKA_ROOT=str(root),
               PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONPATH", None)
    cmd = [python, "-m", "pytest", "test/integration", "--tb=native", "--timeout-method=signal",
           "-p", "no:cacheprovider", f"--junitxml={junit}", "-q"]
    cmd += [f"--ignore={p}" for p in LEFT_OUT]
    if k:
        cmd += ["-k", k]
    print(f"[{label}] {' '.join(cmd)} (in {checkout}, KAFKA_URI=PLAINTEXT://{bootstrap})", flush=True)
    t0 = time.monotonic()
    # the checkout's kafka package comes first on the path (python -m puts the cwd first)
    out = subprocess.run(cmd, cwd=checkout, env=env, text=True, capture_output=True)
    seconds = time.monotonic() - t0
    log = workdir / f"pytest-{label}.log"
    log.write_text(out.stdout + out.stderr)
    tail = (out.stdout + out.stderr).strip().splitlines()[-1:] or [""]
    print(f"[{label}] {tail[0]} ({seconds:.0f} s; output in {log})", flush=True)
    outcomes = parse_junit(junit) if junit.exists() else {}
    counts: dict[str, int] = {}
    for o in outcomes.values():
        counts[o] = counts.get(o, 0) + 1
    return {"counts": counts, "seconds": round(seconds), "exit": out.returncode, "tests": outcomes}


def parse_junit(path: Path) -> dict[str, str]:
    outcomes = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        if case.find("skipped") is not None:
            outcome = "skipped"
        elif case.find("failure") is not None:
            outcome = "failed"
        elif case.find("error") is not None:
            outcome = "error"
        else:
            outcome = "passed"
        outcomes[name] = outcome
    return outcomes


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkout", type=Path, help="a kafka-python source tree (with test/integration)")
    ap.add_argument("--target", choices=("minikafka", "kafka", "both"), default="minikafka")
    ap.add_argument("--bootstrap", help="run against this running broker instead of starting one")
    ap.add_argument("--python", help="an interpreter with pytest and pytest-timeout (default: a throwaway venv)")
    ap.add_argument("-k", help="only the tests matching this pytest -k expression")
    ap.add_argument("--json", type=Path, help="also write the summary here")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (logs, junit files, broker data)")
    args = ap.parse_args(argv)
    checkout = args.checkout.resolve()
    if not (checkout / "test" / "integration" / "conftest.py").exists():
        print(f"kafka_python_suite: {checkout} has no test/integration/conftest.py", file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="kafka-python-suite-"))
    summary: dict = {"checkout": str(checkout), "kafka_version": KAFKA_VERSION, "targets": {}}
    try:
        python = suite_python(args, workdir)
        if args.bootstrap:
            targets = [External(args.bootstrap)]
        else:
            names = ["kafka", "minikafka"] if args.target == "both" else [args.target]
            targets = [ReferenceKafka(workdir) if n == "kafka" else Minikafka(workdir) for n in names]
        for t in targets:
            bootstrap = t.start()
            try:
                result = run_suite(python, checkout, bootstrap, workdir, t.name, args.k)
            finally:
                t.close()
            result["broker"] = t.describe()
            summary["targets"][t.name] = result
        runs = summary["targets"]
        status = 0
        if "kafka" in runs and "minikafka" in runs:
            kafka, ours = runs["kafka"]["tests"], runs["minikafka"]["tests"]
            regressions = sorted(n for n, o in kafka.items() if o == "passed" and ours.get(n) != "passed")
            summary["regressions"] = regressions
            for n in regressions:
                print(f"passes on Kafka, {ours.get(n, 'missing')} on minikafka: {n}")
            status = 1 if regressions else 0
        for name, r in runs.items():
            not_passed = sorted(f"{n} ({o})" for n, o in r["tests"].items() if o in ("failed", "error"))
            print(f"{name}: {r['counts']}" + "".join(f"\n  {n}" for n in not_passed))
        if args.json:
            args.json.write_text(json.dumps(summary, indent=1) + "\n")
        print(json.dumps({k: v if k != "targets" else {n: {"counts": r["counts"], "seconds": r["seconds"]}
                                                        for n, r in v.items()} for k, v in summary.items()}))
        return status
    finally:
        if args.keep:
            print(f"kept {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
