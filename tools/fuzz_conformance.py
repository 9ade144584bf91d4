"""Differential fuzzer for transactions: minikafka against Apache Kafka 4.1 (never in CI).

    python tools/fuzz_conformance.py --seed 1 --count 50            (from the repository root)
    python tools/fuzz_conformance.py --seed 1 --count 50 --show 7   (print sequence 7's steps)

Generates ``count`` short random sequences of legal-but-adversarial transactional requests
(the conformance DSL's Scenario objects, from a seeded RNG: the same seed makes the same
sequences), records each against a throwaway reference Kafka (tests/conformance/kafka_reference.py,
needs Java and ../reference or $REFERENCE_DIR), replays it against minikafka (this checkout's
code) and prints, per sequence, ``same`` or the first differing step (field, Kafka's value, ours).

Kafka's transcripts go to a temp dir (``--out DIR`` to keep them; a transcript already in DIR is
reused, so a second run with the same --out replays minikafka only). Nothing is written to
tests/conformance/golden. Sequences with the same cluster settings share a broker, as the recorder's
do; a sequence with a restart gets a broker of its own (at most one Kafka JVM runs at a time).

The grammar: InitProducerId (a new instance fences the old; with the current or a stale
pid/epoch: KIP-360 recovery), AddPartitionsToTxn (v3; v4 and verify-only), transactional
Produce (correct / stale / future epoch; next / duplicate / gapped sequence; a late retry of an
earlier batch), EndTxn commit and abort (v3 on transaction.version=1, v5 on 2; retries,
mismatched epochs), AddOffsetsToTxn + TxnOffsetCommit, observers (read_committed and
read_uncommitted Fetch, ListOffsets, DescribeTransactions, DescribeProducers, OffsetFetch), and
restart / kill -9. Every step that sets off asynchronous work (markers after EndTxn, an abort after
a fencing InitProducerId) is followed by a wait until the coordinator has settled, so Kafka's
answers do not depend on timing.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import random
import shutil
import sys
import tempfile
import time
import traceback
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from conformance import golden  # noqa: E402
from conformance.dsl import (TV2, Scenario, Topic, add_offsets, add_partitions, await_settled, batch,  # noqa: E402
                             delete_records, describe_producers, describe_txn, end_txn, fetch, init_pid,
                             list_offsets, offset_fetch, produce, produce_parts, ref, restart, txn_offset_commit)
from conformance.normalize import differences  # noqa: E402
from conformance.runner import Run, warm_up  # noqa: E402

TIMEOUT_MS = 600000   # far beyond a sequence's length, restarts included: no transaction times out
# sequences that let a transaction time out: a short timeout and a frequent check (no restarts in
# them, so that nothing times out before the step that waits for it)
SHORT_TIMEOUT_MS = 6000
TIMEOUT_BROKER = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": "300"}
PARTITIONS = 2


# ------------------------------------------------------------------------------------ generator

@dataclasses.dataclass
class Who:
    """A producer identity: the saved answer whose producer_id / producer_epoch it uses, plus a
    delta on the epoch (a stale or future epoch)."""
    save: str
    delta: int = 0

    @property
    def pid(self):
        return ref(f"{self.save}.producer_id")

    @property
    def epoch(self):
        return ref(f"{self.save}.producer_epoch") + self.delta if self.delta else ref(f"{self.save}.producer_epoch")


class Txn:
    """What the generator believes of one transactional id (``{tx}``, ``{tx2}``)."""

    def __init__(self, tid: str):
        self.tid = tid
        self.current: Who | None = None   # the newest instance's identity
        self.zombies: list[Who] = []      # stale identities (fenced instances, epochs before a bump)
        self.seq = [0] * PARTITIONS       # the current identity's next sequence per partition
        self.ongoing = False
        self.added: set[int] = set()

    def bump(self, save: str) -> None:
        if self.current is not None:
            self.zombies.append(self.current)
        self.current = Who(save)
        self.seq = [0] * PARTITIONS
        self.ongoing = False
        self.added = set()


class Gen:
    """Builds one sequence, keeping a rough model of what Kafka will answer, only to pick
    requests that hit interesting states (a wrong guess still makes a legal, deterministic
    sequence)."""

    def __init__(self, rng: random.Random, tv: int, ids: int, timeouts: bool = False):
        self.r = rng
        self.timeouts = timeouts          # a transaction may be left to time out (expire())
        self.tv = tv
        self.steps: list = []
        self.n = 0                        # saved-name counter
        self.txns = [Txn("{tx}" if i == 0 else f"{{tx{i + 1}}}") for i in range(ids)]
        self.sent: list[tuple] = []       # (Txn, Who, partition, seq, values) of earlier batches: late retries
        self.restarted = False
        self.deleted = False              # a DeleteRecords was sent (restarts are then clean)
        self.values = 0
        self.idem: str | None = None      # the idempotent producer's saved InitProducerId
        self.idem_seq = [0] * PARTITIONS

    def name(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def pick(self) -> Txn:
        started = [x for x in self.txns if x.current is not None]
        return self.r.choice(started) if started and self.r.random() < 0.85 else self.r.choice(self.txns)

    def who(self, x: Txn) -> Who:
        """Mostly the current identity; sometimes a zombie or an epoch off by one."""
        y = self.r.random()
        if x.current is None:
            return self.who(self.r.choice([t for t in self.txns if t.current is not None]))
        if y < 0.75:
            return x.current
        if y < 0.87 and x.zombies:
            return self.r.choice(x.zombies)
        return Who(x.current.save, self.r.choice([-1, 1]))

    @property
    def timeout_ms(self) -> int:
        return SHORT_TIMEOUT_MS if self.timeouts else TIMEOUT_MS

    def expire(self) -> None:
        """Wait until the coordinator has aborted every open transaction once it timed out (or see
        at once that none is open); the producers are not told. Every id: one that times out
        during the wait of another would otherwise be caught half-way."""
        for x in self.txns:
            self.steps.append(describe_txn(x.tid, until={"transaction_states.0.transaction_state":
                                                         ["Empty", "CompleteCommit", "CompleteAbort"]}, timeout_s=60))
            x.ongoing, x.added = False, set()

    def settle(self, x: Txn) -> None:
        self.steps.append(await_settled(x.tid, timeout_s=30))

    # -- steps --
    def init(self, x: Txn | None = None) -> None:
        x = x or self.pick()
        v = 5 if self.tv == 2 else self.r.choice([3, 4])
        save = self.name("i")
        if x.current is not None and self.r.random() < 0.4:
            # KIP-360: an instance that asks for its epoch back (current: recovery; stale: fenced)
            w = self.r.choice([x.current] * 3 + x.zombies[-2:])
            self.steps.append(init_pid(save, x.tid, v=v, timeout_ms=self.timeout_ms, pid=w.pid, epoch=w.epoch,
                                       retry_while=(51,)))
            ok = w is x.current
        else:
            self.steps.append(init_pid(save, x.tid, v=v, timeout_ms=self.timeout_ms, retry_while=(51,)))
            ok = True
        self.settle(x)
        if ok:
            x.bump(save)

    def add(self, x: Txn | None = None, parts=None, w: Who | None = None) -> None:
        x = x or self.pick()
        w = w or self.who(x)
        parts = parts or sorted(self.r.sample(range(PARTITIONS), self.r.choice([1, 1, 2])))
        v, verify = self.r.choice([(3, False), (3, False), (4, False), (5, False), (4, True)])
        self.steps.append(add_partitions(None, [("{t}", p) for p in parts], x.tid, v=v, verify_only=verify,
                                         pid=w.pid, epoch=w.epoch))
        if w is x.current and not verify:
            x.added.update(parts)
            x.ongoing = True

    def produce(self) -> None:
        if self.sent and self.r.random() < 0.15:
            x, w, p, seq, values = self.r.choice(self.sent)   # a late retry of an earlier batch
        else:
            x = self.pick()
            w = self.who(x)
            # on transaction.version=1 mostly a partition the transaction has (else INVALID_TXN_STATE)
            p = (self.r.choice(sorted(x.added)) if self.tv == 1 and x.added and self.r.random() < 0.8
                 else self.r.randrange(PARTITIONS))
            if self.tv == 1 and p not in x.added and w is x.current and self.r.random() < 0.7:
                self.add(x, [p], w)
            nxt = x.seq[p] if w is x.current else 0
            y = self.r.random()
            seq = nxt if y < 0.7 else (max(nxt - self.r.choice([1, 2]), 0) if y < 0.85 else nxt + self.r.choice([1, 3]))
            values = [f"v{self.values + i}" for i in range(self.r.choice([1, 1, 2, 3]))]
            self.values += len(values)
            if w is x.current and seq == nxt:
                x.seq[p] += len(values)
                if self.tv == 2:
                    x.ongoing = True
            self.sent.append((x, w, p, seq, values))
        v = 12 if self.tv == 2 and self.r.random() < 0.8 else 9
        y = self.r.random()
        # mostly as a client sends it; sometimes a transactional batch without the transactional id,
        # or the producer's batch without the transactional flag
        txn, flag = (x.tid, True) if y < 0.9 else ((None, True) if y < 0.95 else (x.tid, False))
        one = batch(None, values, seq, transactional=flag, pid=w.pid, epoch=w.epoch)
        if self.r.random() < 0.15:
            # the same producer's next batch to the other partition in the same request
            q = 1 - p
            other = batch(None, [f"w{self.values}"], x.seq[q] if w is x.current else 0, transactional=flag,
                          pid=w.pid, epoch=w.epoch)
            self.values += 1
            if w is x.current and (self.tv == 2 or q in x.added):
                x.seq[q] += 1
            self.steps.append(produce_parts([("{t}", p, one), ("{t}", q, other)], txn=txn, v=v))
        else:
            self.steps.append(produce(one, "{t}", p, txn=txn, v=v))

    def idempotent(self) -> None:
        """A non-transactional idempotent producer writing to the same partitions."""
        if self.idem is None:
            self.idem = self.name("p")
            self.idem_seq = [0] * PARTITIONS
            self.steps.append(init_pid(self.idem, None))
        p = self.r.randrange(PARTITIONS)
        n = self.r.choice([1, 2])
        seq = self.idem_seq[p] if self.r.random() < 0.85 else max(self.idem_seq[p] - n, 0)
        self.idem_seq[p] = max(self.idem_seq[p], seq + n)
        self.steps.append(produce(batch(self.idem, [f"n{self.values + i}" for i in range(n)], seq), "{t}", p))
        self.values += n

    def delete(self) -> None:
        """DeleteRecords up to an offset that may fall inside an open transaction (or past the end)."""
        self.steps.append(delete_records(self.r.choice([1, 2, 3, 5]), "{t}", self.r.randrange(PARTITIONS)))
        self.deleted = True

    def end(self) -> None:
        ongoing = [t for t in self.txns if t.ongoing]
        x = self.r.choice(ongoing) if ongoing and self.r.random() < 0.8 else self.pick()
        w = self.who(x)
        commit = self.r.random() < 0.6
        v = 5 if self.tv == 2 and self.r.random() < 0.85 else self.r.choice([3, 4])
        save = self.name("e")
        self.steps.append(end_txn(None, commit, x.tid, v=v, pid=w.pid, epoch=w.epoch, save=save))
        self.settle(x)
        if w is x.current and (x.ongoing or (v == 5 and not commit)):
            if v == 5 and self.tv == 2:
                x.bump(save)            # EndTxn v5 answers the epoch to go on with
            else:
                x.ongoing, x.added = False, set()
        if self.r.random() < 0.2:          # a retry of the same EndTxn (its answer was "lost")
            self.steps.append(end_txn(None, commit, x.tid, v=v, pid=w.pid, epoch=w.epoch))
            self.settle(x)

    def offsets(self) -> None:
        x = self.pick()
        w = self.who(x)
        if self.tv == 1 or self.r.random() < 0.5:
            self.steps.append(add_offsets(None, txn=x.tid, v=4 if self.tv == 2 else 3, pid=w.pid, epoch=w.epoch))
        v = 5 if self.tv == 2 and self.r.random() < 0.8 else 3
        self.steps.append(txn_offset_commit(None, {("{t}", self.r.randrange(PARTITIONS)): self.r.randrange(10)},
                                            txn=x.tid, v=v, pid=w.pid, epoch=w.epoch))
        if w is x.current:
            x.ongoing = True

    def observe(self) -> None:
        p = self.r.randrange(PARTITIONS)
        off = self.r.choice([0, 0, 0, 1, 2, 4])
        small = self.r.choice([1 << 20] * 3 + [80, 150])   # a limit that cuts a batch
        kind = self.r.choice(["fetch_rc", "fetch_rc", "fetch_rc", "fetch_ru", "lso", "describe", "producers",
                              "offsets"])
        self.steps.append({
            "fetch_rc": lambda: fetch("{t}", p, offset=off, isolation=1, partition_max_bytes=small),
            "fetch_ru": lambda: fetch("{t}", p, offset=off, isolation=0, partition_max_bytes=small),
            "lso": lambda: list_offsets("{t}", p, timestamp=self.r.choice([-1, -1, -2, -3]),
                                        isolation=self.r.choice([0, 1, 1])),
            "describe": lambda: describe_txn(self.r.choice(self.txns).tid),
            "producers": lambda: describe_producers("{t}", p),
            "offsets": lambda: offset_fetch(parts=[("{t}", 0), ("{t}", 1)], require_stable=True),
        }[kind]())

    def do_restart(self) -> None:
        self.restarted = True
        # after a DeleteRecords a kill -9 is a declared difference (Kafka has not checkpointed the
        # log start offset yet and serves the deleted records again: DIFFERENCES.md,
        # log-start-offset-survives-kill, recorded in log_start/kill_after_delete_records), so the
        # restart is clean; the draw stays, so every other sequence of a seed is what it was
        kill = self.r.random() < 0.5
        self.steps.append(restart(kill=kill and not self.deleted))


def generate(seed: int, index: int, restarts: float = 0.15, max_steps: int = 15) -> Scenario:
    r = random.Random(f"{seed}/{index}")
    tv = r.choice([1, 2])
    timeouts = r.random() < 0.3
    g = Gen(r, tv, ids=r.choice([1, 1, 2]), timeouts=timeouts)
    for x in g.txns:
        g.init(x)
    length = r.randint(5, max_steps)
    while len([s for s in g.steps if getattr(s, "until", None) is None]) < length:
        y = r.random()
        if y < 0.07:
            g.init()
        elif y < 0.17 and tv == 1 or y < 0.10:
            g.add()
        elif y < 0.47:
            g.produce()
        elif y < 0.62:
            g.end()
        elif y < 0.70:
            g.offsets()
        elif y < 0.75:
            g.idempotent()
        elif y < 0.77:
            g.delete()
        elif y < 0.80 and timeouts:
            g.expire()
        elif y < 0.96 or g.restarted or timeouts or r.random() > restarts * 6:
            g.observe()
        else:
            g.do_restart()
    # finish by looking at everything a client could read
    for p in range(PARTITIONS):
        g.steps.append(fetch("{t}", p, isolation=1))
        g.steps.append(fetch("{t}", p, isolation=0))
    for x in g.txns:
        g.steps.append(describe_txn(x.tid))
    return Scenario(f"fuzz/s{seed}/n{index}", f"generated: seed {seed}, sequence {index}, transaction.version={tv}, "
                    f"{len(g.txns)} transactional id(s){', timeouts' if timeouts else ''}",
                    steps=g.steps, topics={"t": Topic(partitions=PARTITIONS)}, broker=TIMEOUT_BROKER if timeouts else {},
                    features=TV2 if tv == 2 else {"transaction.version": 1})


# ------------------------------------------------------------------------------------ running

def groups(scenarios) -> dict[tuple, list]:
    out: dict[tuple, list] = {}
    for s in scenarios:
        out.setdefault(s.config_key, []).append(s)
    return out


def run_group(scenarios, start_target, results: dict, label: str) -> None:
    target, close = start_target(scenarios[0])
    try:
        for s in scenarios:
            t0 = time.monotonic()
            run = Run(s, target, uuid.uuid4().hex[:8])
            try:
                results[s.name] = run.run()
            except Exception as e:   # noqa: BLE001 (a failed run is a finding, not a crash)
                results[s.name] = {"error": f"{type(e).__name__}: {e}", "partial": run.transcript}
            print(f"  {label} {s.name} ({time.monotonic() - t0:.1f} s)"
                  f"{'  ERROR ' + results[s.name]['error'][:200] if isinstance(results[s.name], dict) else ''}",
                  flush=True)
    finally:
        close()


def kafka_target(s: Scenario):
    from conformance.kafka_reference import KafkaCluster
    from conformance.record import KafkaTarget
    cluster = KafkaCluster(s.broker, features=golden.feature_args(s.features))
    try:
        cluster.start()
        warm_up(cluster.bootstrap)
    except BaseException:
        cluster.close()
        raise
    return KafkaTarget(cluster), cluster.close


def minikafka_target(s: Scenario):
    from harness import BrokerProcess
    from conformance.test_conformance import MinikafkaTarget
    tmp = Path(tempfile.mkdtemp(prefix="minikafka-fuzz-"))
    b = BrokerProcess(tmp / "data", overrides=dict(s.broker), env={"MINIKAFKA_FAULT_HOLD_MARKERS": golden.HELD_PREFIX},
                      name="fuzz", features=s.features)

    def close() -> None:  # the broker's data dir goes with it (as the Kafka cluster's does)
        try:
            b.close()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    try:
        b.start()
        warm_up(b.bootstrap, timeout=30)
    except BaseException:
        close()
        raise
    return MinikafkaTarget(b), close


def first_difference(s: Scenario, kafka, ours) -> str | None:
    if isinstance(kafka, dict):
        if not isinstance(ours, dict):
            return f"Kafka's run failed (generator?), ours did not: {kafka['error']}"
        # both stopped (a wait the generator expected to end, such as a settle after an EndTxn
        # whose marker Kafka cannot write): the same answers up to the same step and the same
        # last answer (both normalized) are the same behaviour
        diffs = golden.compare(s, kafka["partial"], ours["partial"], differences)
        if diffs:
            return diffs[0]
        if kafka["error"] != ours["error"]:
            return f"both runs failed, differently: Kafka: {kafka['error']}; minikafka: {ours['error']}"
        return None
    if isinstance(ours, dict):
        diffs = golden.compare(s, kafka, ours["partial"], differences)
        if diffs:
            return diffs[0]
        return f"minikafka's run failed after step {len(ours['partial'])}: {ours['error']}"
    diffs = golden.compare(s, kafka, ours, differences)
    return diffs[0] if diffs else None


def show(s: Scenario) -> None:
    from minikafka.protocol.schema import API_NAMES
    print(f"{s.name}: {s.doc}")
    for i, step in enumerate(s.steps, 1):
        if not hasattr(step, "api"):
            print(f"  {i:2} {step}")
            continue
        body = {k: v for k, v in step.body.items() if v not in ("{tx}", 30000, -1, "") and k != "topic_data"}
        for t in step.body.get("topic_data", ()):
            for pd in t["partition_data"]:
                b = pd["records"]
                body[f"p{pd['index']}"] = f"pid={b.pid!r} epoch={b.epoch!r} seq={b.seq} values={b.values}"
        extra = "".join(f" {k}={getattr(step, k)!r}" for k in ("save", "until", "retry_while") if getattr(step, k))
        print(f"  {i:2} {API_NAMES[step.api]} v{step.version} {body}{extra}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=20)
    ap.add_argument("--first", type=int, default=0, help="index of the first sequence (default 0)")
    ap.add_argument("--only", type=int, nargs="*", help="run only these sequence indexes")
    ap.add_argument("--restarts", type=float, default=0.15, help="share of sequences with a restart (about)")
    ap.add_argument("--max-steps", type=int, default=15, help="requests per sequence: 5 to this (waits not counted)")
    ap.add_argument("--out", help="keep Kafka's transcripts here (reused when present)")
    ap.add_argument("--show", type=int, help="print the steps of this sequence and exit")
    args = ap.parse_args(argv)
    if args.show is not None:
        show(generate(args.seed, args.show, args.restarts, args.max_steps))
        return 0
    indexes = args.only if args.only else range(args.first, args.first + args.count)
    scenarios = [generate(args.seed, i, args.restarts, args.max_steps) for i in indexes]
    out = Path(args.out or tempfile.mkdtemp(prefix="minikafka-fuzz-kafka-"))
    out.mkdir(parents=True, exist_ok=True)
    kafka: dict = {}
    for s in scenarios:
        f = out / (s.name.replace("/", "_") + ".json")
        if f.exists():
            kafka[s.name] = json.loads(f.read_text())
    todo = [s for s in scenarios if s.name not in kafka]
    if todo:
        from conformance.kafka_reference import unavailable_reason
        reason = unavailable_reason()
        if reason:
            print(f"fuzz: {reason}", file=sys.stderr)
            return 2
    t0 = time.monotonic()
    for key, group in groups(todo).items():
        print(f"Kafka: {len(group)} sequence(s), {group[0].features}{' (own broker)' if group[0].own_broker else ''}",
              flush=True)
        got: dict = {}
        try:
            run_group(group, kafka_target, got, "kafka")
        except Exception:
            traceback.print_exc()
        for name, transcript in got.items():
            kafka[name] = transcript
            (out / (name.replace("/", "_") + ".json")).write_text(json.dumps(transcript, indent=1))
    ours: dict = {}
    for key, group in groups(scenarios).items():
        print(f"minikafka: {len(group)} sequence(s), {group[0].features}", flush=True)
        run_group([s for s in group if s.name in kafka], minikafka_target, ours, "minikafka")
    print(f"\n{len(scenarios)} sequences (seed {args.seed}) in {time.monotonic() - t0:.0f} s; Kafka's answers in {out}")
    differ = 0
    for s in scenarios:
        if s.name not in kafka or s.name not in ours:
            print(f"{s.name}: not run")
            differ += 1
            continue
        d = first_difference(s, kafka[s.name], ours[s.name])
        differ += d is not None
        print(f"{s.name}: {'same' if d is None else 'DIFFERS ' + d}")
    print(f"{differ} of {len(scenarios)} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
