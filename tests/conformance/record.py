"""Record golden files from a real Apache Kafka 4.1.0 (``make conformance-record``).

    python -m conformance.record [-k TEXT ...] [--check] [--keep-going]    (from tests/)

Scenarios are grouped by their broker settings; each group gets a fresh Kafka
cluster (see kafka_reference.py), so nothing leaks from one group to another
and the run needs no broker of yours. ``-k`` records only scenarios whose name
contains TEXT (repeated: any of them); ``--check`` writes nothing and fails when an answer differs
from the committed golden file (re-recording must reproduce them).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    __package__ = "conformance"

from . import golden  # noqa: E402
from .kafka_reference import KafkaCluster, unavailable_reason  # noqa: E402
from .normalize import differences  # noqa: E402
from .dsl import NAMED_LISTENER, admin_only  # noqa: E402
from .runner import ADMIN_LOGIN, Run, create_topic, warm_up  # noqa: E402
from .scenarios import all_scenarios  # noqa: E402


class KafkaTarget:
    held_prefix = golden.HELD_PREFIX
    creates_held_topics_itself = True
    group_coordinator_lags = True   # learns of a new topic after it is served (runner.await_group_coordinator)

    def __init__(self, cluster: KafkaCluster):
        self.cluster = cluster

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap

    @property
    def sasl_bootstrap(self) -> str | None:
        return self.cluster.sasl_bootstrap

    @property
    def ssl_bootstrap(self) -> str | None:
        return self.cluster.ssl_bootstrap

    @property
    def listeners(self) -> dict[str, str | None]:
        """Listener name -> host:port: the endpoints an answer may name (normalize.py), node 1's
        and, for held topics, node 2's (which no answer should name: it is stopped)."""
        c = self.cluster
        out = {"PLAINTEXT": c.bootstrap, "SASL_PLAINTEXT": c.sasl_bootstrap, "SSL": c.ssl_bootstrap,
               "CONTROLLER": f"127.0.0.1:{c.controller_port}"}
        if c.named_port is not None:
            out[NAMED_LISTENER] = f"127.0.0.1:{c.named_port}"
        if c.node2 is not None:
            out["node 2 PLAINTEXT"] = f"127.0.0.1:{c.node2.port}"
        return out

    def restart(self, kill: bool) -> None:
        self.cluster.restart(kill)


def groups(scenarios) -> dict[tuple, list]:
    """Scenarios sharing a Kafka cluster. Those with held topics get a cluster of their own (with
    the stopped second broker), as minikafka has no second broker: beside it, DescribeCluster lists
    a fenced node 2 and CreateTopics with replication factor 2 may succeed while node 2 is not fenced
    yet, which other scenarios' answers (recorded without it) do not show."""
    out: dict[tuple, list] = {}
    for s in scenarios:
        out.setdefault((s.config_key, s.needs_held), []).append(s)
    return out


def record_group(config: tuple, scenarios: list, check: bool, keep_going: bool) -> list[str]:
    problems = []
    settings = scenarios[0].broker
    cluster = KafkaCluster(settings, with_second_broker=any(s.needs_held for s in scenarios),
                           features=golden.feature_args(scenarios[0].features))
    try:
        t0 = time.monotonic()
        cluster.start()
        if admin_only(settings):
            ADMIN_LOGIN[cluster.bootstrap] = cluster.sasl_bootstrap
        target = KafkaTarget(cluster)
        warm_up(target.bootstrap)
        runs = [Run(s, target, uuid.uuid4().hex[:8]) for s in scenarios]
        if cluster.node2 is not None:
            # held topics: placed on node 2, which then stops for good (their markers wait)
            cluster.start_second_broker()
            for run in runs:
                for word, t in run.scenario.topics.items():
                    if t.held:
                        create_topic(target.bootstrap, run.real(word), t.partitions, t.configs, broker_ids=[2],
                                     leader_bootstrap=f"127.0.0.1:{cluster.node2.port}")
            cluster.stop_second_broker()
        print(f"group {settings or 'defaults'} {', '.join(cluster.features)}"
              f"{' (own broker)' if scenarios[0].own_broker else ''}: Kafka ready in {time.monotonic() - t0:.1f} s, "
              f"{len(runs)} scenarios", flush=True)
        for run in runs:
            s = run.scenario
            t1 = time.monotonic()
            try:
                transcript = run.run()
            except Exception as e:
                problems.append(f"{s.name}: {type(e).__name__}: {e}")
                print(f"  FAILED {s.name}: {e}", flush=True)
                for entry in run.transcript:
                    print(f"    {json.dumps(entry)}", flush=True)
                if not keep_going:
                    raise
                continue
            if check:
                old = golden.load(s.name)
                if old is None:
                    problems.append(f"{s.name}: no golden file")
                else:
                    diffs = golden.compare(s, old["steps"], transcript, differences, declared=False)
                    problems += diffs
                    print(f"  {'same' if not diffs else 'DIFFERENT'} {s.name}", flush=True)
            else:
                golden.write(s, transcript)
                print(f"  recorded {s.name} ({time.monotonic() - t1:.1f} s)", flush=True)
    finally:
        cluster.close()
    return problems


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-k", action="append", default=[],
                    help="only scenarios whose name contains this text (repeated: any of them)")
    ap.add_argument("--check", action="store_true", help="compare with the golden files instead of writing them")
    ap.add_argument("--keep-going", action="store_true", help="record the other scenarios when one fails")
    args = ap.parse_args(argv)
    reason = unavailable_reason()
    if reason:
        print(f"record: {reason}", file=sys.stderr)
        return 2
    chosen = [s for s in all_scenarios() if not args.k or any(k in s.name for k in args.k)]
    t0 = time.monotonic()
    problems = []
    for config, scenarios in groups(chosen).items():
        problems += record_group(config, scenarios, args.check, args.keep_going)
    verb = "checked" if args.check else "recorded"
    print(f"{verb} {len(chosen)} scenarios in {time.monotonic() - t0:.0f} s; {len(problems)} problem(s)")
    for p in problems:
        print(f"  {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
