"""Run librdkafka's own test suite against minikafka and, beside it, a real Apache Kafka 4.1.

What passes on Apache Kafka must pass on minikafka. Given a built librdkafka checkout
(``./configure && make && make -C tests build``), this starts one minikafka (and, unless
``--no-kafka``, one single-node Kafka from ``$REFERENCE_DIR``, formatted with Kafka's default
features), runs the chosen tests one at a time against each with the suite's own runner
(``tests/test-runner``: broker-facing tests only, ``-L``), and prints a table
``test | Kafka | minikafka`` with the differences first.

    cd <minikafka checkout> && .venv/bin/python tools/librdkafka_suite.py \
        --librdkafka /path/to/librdkafka [--tests 0001,0002] [--no-kafka] [--full] [--runner BIN]

Both brokers get the suite's "default" scenario (tests/scenarios/default.json: topic auto-creation
on, 4 partitions; one node, so replication factor 1), group.initial.rebalance.delay.ms=0 and
the StandardAuthorizer with allow.everyone.if.no.acl.found=true (as librdkafka's CI brokers: ACL
APIs work, a resource no ACL names is open).
Tests of the "noautocreate" scenario run on a second pair of brokers with auto-creation off.
Every test gets a fresh test.conf (random topic names), its own wall-clock timeout, and its
output in ``--work``/<target>/<test>.log. A broker that died during a test is restarted (and the
test marked ``+broker-died``). Exit status: 0 if no test that passed on Kafka failed on minikafka.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from minikafka.testing import BrokerProcess  # noqa: E402

KAFKA_VERSION = "4.1.0"

# The tests run by default: every broker-facing test (not TEST_F_LOCAL, not manual) of the
# checkout's tests/test.c that applies to Kafka 4.1 (the runner's TEST_BRKVER gating; the share
# consumer tests need 4.2), except these, which need what a one-node PLAINTEXT pair cannot give
# both sides, measure speed, or are the suite's own known issues (--full runs them too; they skip
# or fail alike). Tests the runner itself skips (scenario, SSL/SASL not configured) show SKIPPED.
EXCLUDED = {
    "0038": "performance measurement",
    "0047": "TEST_F_KNOWN_ISSUE",
    "0055": "latency measurement",
    "0097": "needs an SSL listener (skips without)",
    "0101": "fetch from follower: needs several brokers with racks",
    "0115": "needs ACLs and an authenticated listener",
    "0119": "needs ACLs and an authenticated listener",
    "0126": "needs SASL/OAUTHBEARER OIDC with an identity provider",
    "0135": "needs a SASL listener",
    "0142": "needs a SASL listener with re-authentication",
}
KAFKA_TUPLE = (4, 1, 0, 0)

SCENARIOS = {  # tests/scenarios/<name>.json, one node
    "default": {"auto.create.topics.enable": "true", "num.partitions": "4"},
    "noautocreate": {"auto.create.topics.enable": "false", "num.partitions": "4"},
}
# librdkafka's CI brokers have an authorizer (0081 expects CreateAcls to work, 0109 denies a topic
# with kafka-acls.sh); a resource no ACL names stays open to everyone
COMMON = {"group.initial.rebalance.delay.ms": "0",
          "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
          "allow.everyone.if.no.acl.found": "true"}

SUMMARY_LINE = re.compile(r"^\|\S*\s+(\S+)\s+\|\s+(\w+)\s+\|\s+([\d.]+)s")
STATE_LINE = re.compile(r"={17} Test (\S+) (PASSED|FAILED|SKIPPED) ={17}")
FAILED_AT = re.compile(r'### Test "([^" ]+)[^"]*" failed at (\S+)')  # "0081_admin (do_test_X:12)"
ANSI = re.compile(r"\x1b\[[0-9;]*m|\x1b\(B")


def test_table(librdkafka: Path) -> dict[str, dict]:
    """test name -> {number, local, manual, scenario, minver} parsed from tests/test.c."""
    text = (librdkafka / "tests" / "test.c").read_text()
    start = text.index("struct test tests[] = {")
    tests = {}
    for m in re.finditer(r"_TEST\((\w+),(.*?)\)\s*,\s*\n(?=\s*(?:_TEST|/\*|#|\{NULL))", text[start:], re.S):
        name, rest = m.group(1), m.group(2)
        ver = re.search(r"TEST_BRKVER\((\d+),\s*(\d+),\s*(\d+),\s*(\d+)\)", rest)
        scen = re.search(r'\.scenario\s*=\s*"([^"]+)"', rest)
        tests[name] = {"number": name[:4], "local": "TEST_F_LOCAL" in rest,
                       "manual": "TEST_F_MANUAL" in rest,
                       "scenario": scen.group(1) if scen else "default",
                       "minver": tuple(int(x) for x in ver.groups()) if ver else None}
    return tests


class Target:
    name = "?"

    def __init__(self, scenario: str, work: Path):
        self.scenario = scenario
        self.work = work
        self.settings = dict(SCENARIOS[scenario], **COMMON)

    bootstrap: str

    def start(self) -> None: ...
    def alive(self) -> bool: ...
    def stop(self) -> None: ...


class Minikafka(Target):
    name = "minikafka"

    def start(self) -> None:
        data = self.work / f"minikafka-{self.scenario}" / "data"
        self.proc = BrokerProcess(data, overrides=self.settings, name=f"minikafka-{self.scenario}")
        self.proc.start()
        self.bootstrap = self.proc.bootstrap

    def alive(self) -> bool:
        return self.proc.running

    def restart(self) -> None:
        self.proc.restart(kill=True)

    def stop(self) -> None:
        self.proc.close()


class Kafka(Target):
    name = "kafka"

    def start(self) -> None:
        from conformance.kafka_reference import KafkaCluster, unavailable_reason
        reason = unavailable_reason()
        if reason:
            raise SystemExit(f"no reference Kafka: {reason} (or pass --no-kafka)")
        # Kafka 4.1's default finalized features (no --feature): what a user's new cluster has
        self.cluster = KafkaCluster(overrides=self.settings, features=())
        self.cluster.start()
        self.bootstrap = self.cluster.bootstrap

    def alive(self) -> bool:
        p = self.cluster.node1.proc
        return p is not None and p.poll() is None

    def restart(self) -> None:
        self.cluster.restart(kill=True)

    def stop(self) -> None:
        self.cluster.close()


@dataclass
class Outcome:
    result: str                       # PASSED / FAILED / SKIPPED / TIMEOUT / CRASHED / ...
    subtests: dict[str, str] = field(default_factory=dict)   # name -> state from the summary
    reason: str = ""
    seconds: float = 0.0
    log: Path | None = None


def run_one(librdkafka: Path, target: Target, number: str, args, logdir: Path) -> Outcome:
    tests_dir = librdkafka / "tests"
    conf = logdir / f"{number}.conf"
    conf.write_text(f"bootstrap.servers={target.bootstrap}\ntest.topic.random=true\n"
                    f"test.timeout.multiplier={args.multiplier}\n" + "".join(f"{c}\n" for c in args.conf))
    log = logdir / f"{number}.log"
    env = dict(os.environ, RDKAFKA_TEST_CONF=str(conf), TEST_KAFKA_VERSION=KAFKA_VERSION, TESTS=number,
               TEST_SCENARIO=target.scenario, TEST_CONSUMER_GROUP_PROTOCOL=args.group_protocol,
               LD_LIBRARY_PATH=f"{librdkafka / 'src'}:{librdkafka / 'src-cpp'}",
               RDKAFKA_GITVER="suite",
               # test_kafka_topics() runs Kafka's kafka-topics.sh (a stock admin client) at BROKERS
               KAFKA_PATH=str(args.kafka_home), BROKERS=target.bootstrap)
    cmd = [str(args.runner or tests_dir / "test-runner"), "-L", "-p1"] + (["-Q"] if args.quick else [])
    t0 = time.monotonic()
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=tests_dir, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            rc = proc.wait(args.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc = None
    seconds = time.monotonic() - t0
    for stats in tests_dir.glob(f"stats_{number}_*.json"):  # the runner's per-test stats dumps
        stats.unlink(missing_ok=True)
    if rc is None:
        _, subtests, reason = parse_log(log.read_text(errors="replace"), 0)
        return Outcome("TIMEOUT", subtests, f"killed after {args.timeout}s; {reason}", seconds, log)
    return Outcome(*parse_log(log.read_text(errors="replace"), rc), seconds=seconds, log=log)


def parse_log(text: str, rc: int) -> tuple[str, dict[str, str], str]:
    """(result, subtest -> state, reason) from a test-runner's output and exit status."""
    lines = ANSI.sub("", text).splitlines()
    subtests: dict[str, str] = {}
    reason = ""
    for i, line in enumerate(lines):
        m = STATE_LINE.search(line) or SUMMARY_LINE.match(line)
        if m and m.group(1) != "<MAIN>":
            subtests[m.group(1)] = m.group(2)
        m = FAILED_AT.search(line)
        if m and m.group(1) != "<MAIN>":
            subtests[m.group(1)] = "FAILED"
            if not reason:  # where it failed, and the assertion's message
                reason = f"{m.group(2)}: {lines[i + 1].strip() if i + 1 < len(lines) else ''}"[:300]
    states = set(subtests.values())
    if "FAILED" in states:
        result = "FAILED"
    elif rc != 0:  # no test failed, yet the runner did: leftover threads, a crash
        result, reason = "CRASHED", f"test-runner exit {rc}: " + next(
            (ln.strip() for ln in reversed(lines) if "###" not in ln and ln.strip()), "")[:200]
    elif states and states <= {"SKIPPED"}:
        result = "SKIPPED"
    elif not states:
        result = "NONE"
    else:
        result = "PASSED"
    return result, subtests, reason


def cell(o: Outcome | None) -> str:
    if o is None:
        return "-"
    if o.result == "PASSED" and "SKIPPED" in o.subtests.values():
        n = sum(1 for s in o.subtests.values() if s == "PASSED")
        return f"PASSED ({n}/{len(o.subtests)} run)"
    if o.result == "FAILED":
        bad = [k for k, v in o.subtests.items() if v == "FAILED"]
        return "FAILED" + (f" ({', '.join(b[5:] for b in bad)})" if bad and len(o.subtests) > 1 else "")
    return o.result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--librdkafka", required=True, type=Path, help="a built librdkafka checkout")
    ap.add_argument("--tests", help="comma-separated test numbers (default: the documented set)")
    ap.add_argument("--full", action="store_true", help="also the excluded tests (SSL/SASL/multi-broker/perf)")
    ap.add_argument("--skip", default="", help="comma-separated test numbers to leave out")
    ap.add_argument("--reference-dir", type=Path, default=os.environ.get("REFERENCE_DIR"),
                    help="the assembled Kafka 4.1 (default $REFERENCE_DIR)")
    ap.add_argument("--no-kafka", action="store_true", help="minikafka only")
    ap.add_argument("--no-minikafka", action="store_true", help="Kafka only")
    ap.add_argument("--timeout", type=float, default=420, help="wall-clock seconds per test (default 420)")
    ap.add_argument("--multiplier", default="2", help="test.timeout.multiplier (default 2: a loaded machine)")
    ap.add_argument("--no-quick", dest="quick", action="store_false", help="not the runner's quick mode (-Q)")
    ap.add_argument("--group-protocol", default="classic", choices=("classic", "consumer"),
                    help="TEST_CONSUMER_GROUP_PROTOCOL (default classic)")
    ap.add_argument("--runner", type=Path,
                    help="another test-runner binary built from the checkout (run in its tests/), "
                         "e.g. one adapted to a single broker (docs/peer_suites.md)")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="a line for every test's test.conf, e.g. debug=cgrp,fetch (repeatable)")
    ap.add_argument("--work", type=Path, help="logs and broker data (default: a new temp dir, kept)")
    ap.add_argument("--json", type=Path, help="write the results here too")
    args = ap.parse_args()

    lib = args.librdkafka.resolve()
    if args.reference_dir:
        os.environ["REFERENCE_DIR"] = str(Path(args.reference_dir).resolve())
    from conformance.kafka_reference import kafka_home
    args.kafka_home = kafka_home()  # its bin/kafka-topics.sh, for the tests that call it
    if not (lib / "tests" / "test-runner").exists():
        ap.error(f"{lib}/tests/test-runner missing: build it (make && make -C tests build)")
    table = test_table(lib)
    if args.tests:
        numbers = [t.strip() for t in args.tests.split(",") if t.strip()]
    else:
        numbers = [t["number"] for t in table.values()
                   if not t["local"] and not t["manual"] and (t["minver"] or (0,)) <= KAFKA_TUPLE
                   and (args.full or t["number"] not in EXCLUDED)]
    skip = {t.strip() for t in args.skip.split(",") if t.strip()}
    numbers = sorted(n for n in dict.fromkeys(numbers) if n not in skip)
    work = (args.work or Path(tempfile.mkdtemp(prefix="librdkafka-suite-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    print(f"work dir {work}; {len(numbers)} tests", flush=True)

    # which scenarios the chosen tests need (a test number may hold tests of both)
    by_scenario: dict[str, list[str]] = {}
    for n in numbers:
        scens = {t["scenario"] for t in table.values() if t["number"] == n and not t["local"]} or {"default"}
        for s in sorted(scens):
            for name in s.split(","):
                if name in SCENARIOS:
                    by_scenario.setdefault(name, []).append(n)
                    break
    kinds = ([] if args.no_kafka else [Kafka]) + ([] if args.no_minikafka else [Minikafka])
    results: dict[tuple[str, str], dict[str, Outcome]] = {}
    for scenario, nums in by_scenario.items():
        targets = []
        try:
            for kind in kinds:
                t = kind(scenario, work)
                print(f"starting {t.name} ({scenario})", flush=True)
                t.start()
                targets.append(t)
            for n in nums:
                for t in targets:
                    logdir = work / t.name / scenario
                    logdir.mkdir(parents=True, exist_ok=True)
                    o = run_one(lib, t, n, args, logdir)
                    if not t.alive():
                        o.result += "+broker-died"
                        t.restart()
                    results.setdefault((n, scenario), {})[t.name] = o
                    print(f"  {n} {scenario:12} {t.name:9} {cell(o):30} {o.seconds:6.1f}s {o.reason}", flush=True)
        finally:
            for t in targets:
                t.stop()

    rows = []
    for (n, scenario), by in sorted(results.items()):
        k, m = by.get("kafka"), by.get("minikafka")
        differs = k is not None and m is not None and cell(k) != cell(m)
        rows.append((not differs, n, scenario, cell(k), cell(m),
                     f"{k.seconds:.0f}s" if k else "-", f"{m.seconds:.0f}s" if m else "-"))
    rows.sort()
    print(f"\n{'test':6} {'scenario':12} {'Kafka 4.1':32} {'minikafka':32} times (K/m)")
    for same, n, scenario, kc, mc, kt, mt in rows:
        print(f"{n:6} {scenario:12} {kc:32} {mc:32} {kt}/{mt}" + ("" if same else "   <-- differs"))
    regressions = [(n, s) for (n, s), by in results.items()
                   if "kafka" in by and "minikafka" in by
                   and by["kafka"].result == "PASSED" and by["minikafka"].result != "PASSED"]
    print(f"\n{len(rows)} runs, {sum(1 for r in rows if not r[0])} differ; "
          f"passed on Kafka and not on minikafka: {', '.join(n for n, _ in sorted(regressions)) or 'none'}")
    print(f"logs: {work}/<target>/<scenario>/<test>.log")
    if args.json:
        args.json.write_text(json.dumps({
            f"{n}/{s}": {name: {"result": o.result, "seconds": round(o.seconds, 1), "subtests": o.subtests,
                                "reason": o.reason, "log": str(o.log)} for name, o in by.items()}
            for (n, s), by in sorted(results.items())}, indent=1))
    return 1 if regressions else 0


if __name__ == "__main__":
    sys.exit(main())
