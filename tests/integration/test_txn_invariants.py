"""Transaction invariants under randomized interleavings (issue 13, section 2).

A hypothesis ``RuleBasedStateMachine`` drives one real broker with raw requests:
3 producer slots share 2 transactional ids (InitProducerId fences whichever
instance held the id before), an admin describes producers, aborts open
transactions as ``minikafka transactions abort`` does (DescribeProducers, then
WriteTxnMarkers(ABORT) with the producer's latest coordinator epoch, 0 if none)
and deletes records, and the broker restarts cleanly or by ``kill -9``, or with
``MINIKAFKA_FAULT`` armed so that it exits at a point of the next EndTxn; produce
and EndTxn requests are also retried late, as after a lost answer. After every step:

* no record is appended twice, and every acknowledged append is at its offset
  (above the log start offset, which is exactly what DeleteRecords answered);
* read_committed (with the Java consumer's filtering of aborted transactions)
  never delivers a record of an aborted, admin-aborted or undecided transaction,
  nor twice the same record, nor a torn transaction (one whose commit answer was
  lost is all or nothing);
* every record of an acknowledged commit below the LSO is delivered;
* LSO <= high watermark, and the LSO is the start offset of the first open
  transaction DescribeProducers reports (the high watermark if none; if that
  start was deleted, the log start, or the base of the batch holding it when
  DeleteRecords cut a batch, as Kafka 4.1 answers); every open transaction the
  model knows is reported, and every one reported is known;
* a fenced instance never writes again: its Produce, AddPartitionsToTxn and EndTxn
  fail and none of its records reaches the log;
* a late produce retry gets the first append's offset (or an error once the
  transaction is over) and a late EndTxn the same answer (INVALID_TXN_STATE for
  the opposite result).

The teardown of each example fences every transactional id, waits until the
LSO reaches the high watermark and checks that every acknowledged committed
record is there exactly once.

CI runs a derandomized, database-less profile (the same 20 examples of up to 40
steps every run, about 50 s). Longer local runs, with random examples (``-s``
prints what the examples did):

    MINIKAFKA_INVARIANT_EXAMPLES=300 MINIKAFKA_INVARIANT_STEPS=60 \\
        .venv/bin/python -m pytest -s tests/integration/test_txn_invariants.py
"""
from __future__ import annotations

import os
import uuid
from collections import Counter
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (RuleBasedStateMachine, initialize, invariant, precondition, rule,
                                 run_state_machine_as_test)

from harness import BrokerError, wait_until
from minikafka.protocol.errors import ErrorCode as E
from rawclient import RawClient, make_batch

FAULTS = ("txn.before_prepare", "txn.after_prepare", "txn.after_first_marker", "txn.after_markers")
FAULT_EXIT = 86  # the broker's exit code at a fault point
PARTITIONS = 3
TIDS = 2
SLOTS = 3
TXN_TIMEOUT_MS = 600_000  # never expires within an example
# Steps per example for the rules that need no transaction to act on (a restart also costs a
# broker start): the rest of the steps produce, end transactions and fence (hypothesis draws
# rules uniformly, and each example enables a random subset of them)
BUDGET = {"restart": 4, "zombie": 3, "delete": 3, "late": 3}

_EXAMPLES = int(os.environ.get("MINIKAFKA_INVARIANT_EXAMPLES", "0"))
SETTINGS = settings(
    max_examples=_EXAMPLES or 20,
    stateful_step_count=int(os.environ.get("MINIKAFKA_INVARIANT_STEPS", "40")),
    derandomize=not _EXAMPLES,     # CI: the same examples every run
    database=None,                 # and nothing remembered between runs
    deadline=None,
    print_blob=True,
    report_multiple_bugs=False,
    suppress_health_check=list(HealthCheck),
)

# what the examples did, printed at the end (pytest -s): a run that never crashed at a fault
# point or never aborted as an admin would prove little
COVERAGE: Counter = Counter()

OPEN, COMMITTING, COMMITTED, ABORTED = "open", "committing", "committed", "aborted"
# COMMITTING: EndTxn(commit) was sent, the broker died before answering, and nobody retried:
# the transaction commits or aborts depending on whether PrepareCommit was durable. Either way
# it must be all or nothing.


class BrokerDied(Exception):
    """The broker exited at an armed fault point during a request; it has been restarted."""


@dataclass(eq=False)
class Instance:
    """One InitProducerId answer, as a producer process holds it."""
    name: str
    tid: str
    pid: int
    epoch: int
    seq: dict = field(default_factory=dict)      # partition -> next sequence
    txn: "Txn | None" = None
    fenced: bool = False
    last_batch: dict = field(default_factory=dict)  # partition -> (batch bytes, base offset, Txn)
    last_end: "tuple[Txn, bool] | None" = None      # the last EndTxn answered, if no transaction since


@dataclass(eq=False)
class Txn:
    key: int
    inst: Instance
    partitions: set = field(default_factory=set)
    records: list = field(default_factory=list)
    fate: str = OPEN
    # partition -> offset where the broker's open transaction on it starts (first record
    # since the transaction began or since an admin aborted it there), None once closed
    open_start: dict = field(default_factory=dict)


@dataclass(eq=False)
class Rec:
    value: bytes
    partition: int
    offset: int
    txn: Txn
    admin: str = ""  # "aborted": an admin ABORT marker closed it; "maybe": one may have


class TxnInvariants(RuleBasedStateMachine):
    broker = None  # set by the test

    def __init__(self):
        super().__init__()
        self.b = type(self).broker
        self.c: RawClient | None = None
        self.fault: str | None = None
        self.crashes = 0
        self.spent: Counter = Counter()  # steps taken per BUDGET key
        run = uuid.uuid4().hex[:8]
        self.topic = f"inv-{run}"
        self.tids = [f"inv-{run}-t{i}" for i in range(TIDS)]
        self.slots: list[Instance | None] = [None] * SLOTS
        self.current: dict[str, Instance] = {}       # tid -> the instance holding its latest epoch
        self.by_pid_epoch: dict[tuple[int, int], Instance] = {}
        self.txns: list[Txn] = []
        self.recs: dict[bytes, Rec] = {}
        self.zombie_values: set[bytes] = set()
        self.log_start = [0] * PARTITIONS
        self.counter = 0
        self.visible_below_lso: dict[int, tuple[int, int, dict]] = {}  # partition -> (log start, LSO, visible)
        assert self.call(lambda c: c.create_topic(self.topic, PARTITIONS)) == 0
        COVERAGE["examples"] += 1

    # ------------------------------------------------------------ plumbing
    def client(self) -> RawClient:
        if self.c is None:
            self.c = RawClient.to(self.b.bootstrap, timeout=30)
        return self.c

    def drop_client(self) -> None:
        if self.c is not None:
            self.c.close()
            self.c = None

    def start(self, fault: str | None) -> None:
        """Start the broker, `fault` armed; if it exits at that point while loading (a PREPARE_*
        left to finish), that is a crash too: start it again unarmed."""
        self.fault = fault
        if fault:
            self.b.extra_env["MINIKAFKA_FAULT"] = fault
        else:
            self.b.extra_env.pop("MINIKAFKA_FAULT", None)
        try:
            self.b.start(timeout=60)
        except BrokerError:
            if not fault or self.b.last_exit != FAULT_EXIT:
                raise
            self.crashes += 1
            self.start(None)

    def call(self, fn):
        """fn(client); if the connection breaks, the broker must have exited at the armed
        fault point: restart it unarmed and raise BrokerDied (callers decide what a client
        would do: retry, or give up)."""
        try:
            return fn(self.client())
        except ConnectionError as exc:  # refused, reset, closed (a timeout is a hang: it fails the test)
            self.drop_client()
            try:
                code = self.b.wait_exit(10)
            except TimeoutError:
                raise AssertionError(f"request failed ({exc!r}) but the broker is still running"
                                     + self.b.describe()) from None
            assert self.fault and code == FAULT_EXIT, \
                f"broker died (exit {code}, fault armed: {self.fault})" + self.b.describe()
            self.crashes += 1
            COVERAGE[f"broker exited at {self.fault}"] += 1
            self.start(None)
            raise BrokerDied(self.fault) from None

    def retrying(self, fn, attempts: int = 4):
        """fn(client), retried after each fault-point crash (what a client does after a reconnect)."""
        for _ in range(attempts - 1):
            try:
                return self.call(fn)
            except BrokerDied:
                continue
        return self.call(fn)

    def retry_while_concurrent(self, fn, timeout: float = 15):
        """fn(client) -> error code; retried on CONCURRENT_TRANSACTIONS (markers still being written)
        and after crashes; returns the first other code."""
        codes = []

        def attempt():
            code = self.retrying(fn)
            codes.append(code)
            return code != E.CONCURRENT_TRANSACTIONS

        wait_until(attempt, timeout, message=lambda: f"still CONCURRENT_TRANSACTIONS: {codes[-5:]}")
        return codes[-1]

    def value(self, kind: str) -> bytes:
        self.counter += 1
        return f"{kind}:{self.topic}:{self.counter}".encode()

    # --------------------------------------------------------------- model
    def live_slots(self) -> list[int]:
        return [i for i, inst in enumerate(self.slots) if inst is not None]

    def ending_slots(self) -> list[int]:
        return [i for i, inst in enumerate(self.slots)
                if inst is not None and inst.txn is not None and inst.txn.partitions]

    def zombies(self) -> list[Instance]:
        return [inst for inst in self.by_pid_epoch.values() if inst.fenced]

    def init(self, tid: str) -> Instance:
        """InitProducerId until it answers (the broker fences and aborts an open transaction first)."""
        resp = []

        def attempt():
            r = self.retrying(lambda c: c.init_producer_id(tid, timeout_ms=TXN_TIMEOUT_MS))
            resp.append(r)
            assert r.error_code in (0, E.CONCURRENT_TRANSACTIONS), r
            return r.error_code == 0

        wait_until(attempt, 15, message=lambda: f"InitProducerId({tid}) kept failing: {resp[-1]}")
        r = resp[-1]
        prev = self.current.get(tid)
        if prev is not None:
            assert (r.producer_id, r.producer_epoch) != (prev.pid, prev.epoch), "InitProducerId kept the epoch"
            prev.fenced = True  # a zombie now: only zombie_writes uses it
            self.slots = [None if s is prev else s for s in self.slots]
            if prev.txn is not None and prev.txn.fate == OPEN:
                self.close_txn(prev.txn, ABORTED)
            prev.txn = None
        self.counter += 1
        inst = Instance(f"i{self.counter}", tid, r.producer_id, r.producer_epoch)
        self.current[tid] = inst
        self.by_pid_epoch[(inst.pid, inst.epoch)] = inst
        return inst

    def close_txn(self, txn: Txn, fate: str) -> None:
        txn.fate = fate
        txn.open_start.clear()

    def txn_of(self, inst: Instance) -> Txn:
        if inst.txn is None or inst.txn.fate != OPEN:
            self.counter += 1
            inst.txn = Txn(self.counter, inst)
            inst.last_end = None
            self.txns.append(inst.txn)
        return inst.txn

    def add(self, inst: Instance, partitions: list[int]) -> None:
        txn = self.txn_of(inst)
        todo = sorted(set(partitions) - txn.partitions)
        if not todo:
            return
        errs = self.retrying(lambda c: c.add_partitions_to_txn(inst.tid, inst.pid, inst.epoch, self.topic, todo))
        assert errs == {p: 0 for p in todo}, f"AddPartitionsToTxn {todo}: {errs}"
        txn.partitions |= set(todo)

    def has_open_segment(self) -> bool:
        return any(t.fate == OPEN and any(s is not None for s in t.open_start.values()) for t in self.txns)

    def has_records_above_log_start(self) -> bool:
        return any(r.offset >= self.log_start[r.partition] for r in self.recs.values())

    # --------------------------------------------------------------- rules
    @initialize()
    def start_producers(self):
        """Every example starts with producers in each slot; the third one's id is the first's,
        so the first is a zombie from the start."""
        for slot in range(SLOTS):
            self.slots[slot] = self.init(self.tids[slot % TIDS])

    @rule(slot=st.integers(0, SLOTS - 1), tid=st.integers(0, TIDS - 1))
    def init_producer(self, slot, tid):
        """A producer (re)starts with a transactional id; its previous instance, if any, is gone."""
        self.slots[slot] = self.init(self.tids[tid])

    @precondition(lambda self: self.live_slots())
    @rule(data=st.data(), partitions=st.lists(st.integers(0, PARTITIONS - 1), min_size=1, max_size=PARTITIONS))
    def add_partitions(self, data, partitions):
        inst = self.slots[data.draw(st.sampled_from(self.live_slots()), label="slot")]
        self.add(inst, partitions)

    @precondition(lambda self: self.live_slots())
    @rule(data=st.data(), partition=st.integers(0, PARTITIONS - 1), n=st.integers(1, 3))
    def produce(self, data, partition, n):
        inst = self.slots[data.draw(st.sampled_from(self.live_slots()), label="slot")]
        self.add(inst, [partition])
        txn = inst.txn
        seq = inst.seq.get(partition, 0)
        values = [self.value("r") for _ in range(n)]
        batch = make_batch(values, producer_id=inst.pid, producer_epoch=inst.epoch, base_sequence=seq,
                           transactional=True)
        # a retry after a crash resends the same batch: the broker must deduplicate it
        r = self.retrying(lambda c: c.produce(self.topic, partition, batch, transactional_id=inst.tid))
        assert r.error_code == 0, f"produce by {inst}: {r}"
        inst.seq[partition] = seq + n
        inst.last_batch[partition] = (batch, r.base_offset, txn)
        COVERAGE["produced batches"] += 1
        if txn.open_start.get(partition) is None:
            txn.open_start[partition] = r.base_offset
        for i, v in enumerate(values):
            rec = Rec(v, partition, r.base_offset + i, txn)
            self.recs[v] = rec
            txn.records.append(rec)

    @precondition(lambda self: self.ending_slots())
    @rule(data=st.data(), commit=st.booleans(), retry=st.booleans())
    def end_txn(self, data, commit, retry):
        """EndTxn; if the broker dies before answering, the producer either retries (as clients
        do) or dies too, leaving the outcome to the commit point."""
        slot = data.draw(st.sampled_from(self.ending_slots()), label="slot")
        inst = self.slots[slot]
        txn = inst.txn
        try:
            code = self.call(lambda c: c.end_txn(inst.tid, inst.pid, inst.epoch, commit))
        except BrokerDied:
            COVERAGE[f"EndTxn unanswered, {'retried' if retry else 'abandoned'}"] += 1
            if not retry:
                self.close_txn(txn, COMMITTING if commit else ABORTED)
                self.slots[slot] = None  # the producer died with the broker; its successor fences it
                return
            code = self.retry_while_concurrent(lambda c: c.end_txn(inst.tid, inst.pid, inst.epoch, commit))
        assert code == 0, f"EndTxn({'commit' if commit else 'abort'}) by {inst}: {E(code).name}"
        self.close_txn(txn, COMMITTED if commit else ABORTED)
        COVERAGE["committed" if commit else "aborted"] += 1
        inst.txn = None
        inst.last_end = (txn, commit)

    # Rules are drawn uniformly: producing and ending transactions, the steps everything else
    # acts on, are listed again so that they make up about a third of the steps.
    produce_more = produce
    produce_again = produce
    end_txn_more = end_txn

    @precondition(lambda self: any(i is not None and i.last_batch for i in self.slots)
                  and self.spent["late"] < BUDGET["late"])
    @rule(data=st.data())
    def late_produce_retry(self, data):
        """A produce retried after its answer was lost: the broker answers the first append's
        offset and never appends it twice. If the producer has no transaction open on the
        partition any more (it ended, or an admin aborted it there), the retry goes through
        partition verification: answered as a duplicate if the coordinator has the partition in the
        producer's open (maybe newer) transaction, else INVALID_TXN_STATE; either way, as Kafka 4.1 answers
        (probed), the verification entry it leaves makes the producer's next sequence there
        OUT_OF_ORDER_SEQUENCE_NUMBER: that producer has to re-initialise."""
        inst = data.draw(st.sampled_from([i for i in self.slots if i is not None and i.last_batch]), label="slot")
        partition = data.draw(st.sampled_from(sorted(inst.last_batch)), label="partition")
        batch, offset, _ = inst.last_batch[partition]
        self.spent["late"] += 1
        COVERAGE["late produce retry"] += 1
        r = self.retrying(lambda c: c.produce(self.topic, partition, batch, transactional_id=inst.tid))
        current = inst.txn if inst.txn is not None and inst.txn.fate == OPEN else None
        if current is not None and current.open_start.get(partition) is not None:
            # the partition has the producer's transaction open: a plain duplicate
            assert (r.error_code, r.base_offset) == (0, offset), f"retry of {partition}@{offset}: {r}"
            return
        if current is not None and partition in current.partitions:
            # verified: the coordinator has the partition in the producer's (maybe newer) transaction
            assert (r.error_code, r.base_offset) == (0, offset), f"verified retry of {partition}@{offset}: {r}"
        else:
            assert r.error_code == E.INVALID_TXN_STATE, f"retry of {partition}@{offset} outside a transaction: {r}"
        COVERAGE["late produce retry verified again"] += 1
        self.add(inst, [partition])
        seq = inst.seq[partition]
        v = self.value("blocked")
        self.zombie_values.add(v)  # must never reach the log
        nxt = make_batch([v], producer_id=inst.pid, producer_epoch=inst.epoch, base_sequence=seq, transactional=True)
        r = self.retrying(lambda c: c.produce(self.topic, partition, nxt, transactional_id=inst.tid))
        assert r.error_code == E.OUT_OF_ORDER_SEQUENCE_NUMBER, f"sequence {seq} after a verified late retry: {r}"
        self.slots = [None if x is inst else x for x in self.slots]  # it re-initialises later

    @precondition(lambda self: any(i is not None and i.last_end and i.txn is None for i in self.slots)
                  and self.spent["late"] < BUDGET["late"])
    @rule(data=st.data(), same=st.booleans())
    def late_end_txn_retry(self, data, same):
        """EndTxn retried after its answer was lost: the same result is answered again; the
        opposite one is INVALID_TXN_STATE (Kafka's TV1 answers). Nothing changes."""
        inst = data.draw(st.sampled_from([i for i in self.slots if i is not None and i.last_end and i.txn is None]),
                         label="slot")
        txn, commit = inst.last_end
        self.spent["late"] += 1
        COVERAGE["late EndTxn retry"] += 1
        code = self.retry_while_concurrent(lambda c: c.end_txn(inst.tid, inst.pid, inst.epoch,
                                                                commit if same else not commit))
        assert code == (0 if same else E.INVALID_TXN_STATE), \
            f"late EndTxn({'same' if same else 'opposite'}) after {'commit' if commit else 'abort'}: {E(code).name}"

    @precondition(lambda self: self.live_slots())
    @rule(data=st.data())
    def producer_dies(self, data):
        """The producer process is gone; its open transaction stays open until its id is re-initialised."""
        self.slots[data.draw(st.sampled_from(self.live_slots()), label="slot")] = None

    @precondition(lambda self: self.zombies() and self.spent["zombie"] < BUDGET["zombie"])
    @rule(data=st.data(), partition=st.integers(0, PARTITIONS - 1), commit=st.booleans())
    def zombie_writes(self, data, partition, commit):
        """A fenced instance tries to write (Produce, AddPartitionsToTxn, EndTxn): every attempt
        fails and nothing reaches the log."""
        self.spent["zombie"] += 1
        z = data.draw(st.sampled_from(self.zombies()), label="zombie")
        COVERAGE["fenced instance tried to write"] += 1
        v = self.value("zombie")
        self.zombie_values.add(v)
        batch = make_batch([v], producer_id=z.pid, producer_epoch=z.epoch,
                           base_sequence=z.seq.get(partition, 0), transactional=True)
        r = self.retrying(lambda c: c.produce(self.topic, partition, batch, transactional_id=z.tid))
        assert r.error_code != 0, f"fenced {z} produced at offset {r.base_offset}"
        errs = self.retrying(lambda c: c.add_partitions_to_txn(z.tid, z.pid, z.epoch, self.topic, [partition]))
        assert errs[partition] != 0, f"fenced {z} added a partition"
        code = self.retrying(lambda c: c.end_txn(z.tid, z.pid, z.epoch, commit))
        assert code != 0, f"fenced {z} ended a transaction ({'commit' if commit else 'abort'})"

    @precondition(lambda self: self.has_open_segment())
    @rule(data=st.data(), partition=st.integers(0, PARTITIONS - 1))
    def admin_abort(self, data, partition):
        """`minikafka transactions abort --start-offset`: DescribeProducers, then WriteTxnMarkers(ABORT)
        for the producer whose transaction starts there, with the latest coordinator epoch the
        partition saw for it (0 if none), as kafka-transactions.sh sends it."""
        d = self.retrying(lambda c: c.describe_producers(self.topic, partition))
        assert d.error_code == 0, d
        open_txns = [p for p in d.active_producers if p.current_txn_start_offset >= 0]
        if not open_txns:
            return
        COVERAGE["admin abort of an open transaction"] += 1
        p = data.draw(st.sampled_from(open_txns), label="producer")
        inst = self.by_pid_epoch.get((p.producer_id, p.producer_epoch))
        assert inst is not None, f"DescribeProducers reports an unknown producer {p}"
        start = p.current_txn_start_offset
        txn = next((t for t in self.txns if t.inst is inst
                    and any(r.partition == partition and r.offset == start for r in t.records)), None)
        assert txn is not None, f"no transaction of {inst} starts at {partition}@{start}: {p}"
        affected = [r for r in txn.records if r.partition == partition and r.offset >= start]
        try:
            code = self.call(lambda c: c.write_txn_marker(self.topic, partition, p.producer_id, p.producer_epoch,
                                                           False, max(p.coordinator_epoch, 0)))
        except BrokerDied:
            code = None
        if code is None or txn.fate != OPEN:
            # unanswered, or the coordinator's own marker may be on its way (markers are written
            # after EndTxn answers): either marker may close the transaction here
            for r in affected:
                r.admin = r.admin or "maybe"
        else:
            assert code == 0, f"admin abort of {p}: {E(code).name}"
            for r in affected:
                r.admin = "aborted"
        if txn.fate == OPEN:
            txn.open_start[partition] = None  # later records open a new transaction there

    @precondition(lambda self: self.has_records_above_log_start() and self.spent["delete"] < BUDGET["delete"])
    @rule(partition=st.integers(0, PARTITIONS - 1), where=st.sampled_from([0.5, 1.0, "hw"]))
    def delete_records(self, partition, where):
        self.spent["delete"] += 1
        hw = self.retrying(lambda c: c.list_offset(self.topic, partition, -1))
        lo = self.log_start[partition]
        target = -1 if where == "hw" else lo + int((hw - lo) * where)
        code, low = self.retrying(lambda c: c.delete_records(self.topic, partition, target))
        assert code == 0, f"DeleteRecords({partition}, {target}): {E(code).name}"
        assert low == (hw if target == -1 else target), (low, target, hw)
        COVERAGE["DeleteRecords moved the log start" if low > lo else "DeleteRecords at the log start"] += 1
        self.log_start[partition] = max(lo, low)

    @precondition(lambda self: self.spent["restart"] < BUDGET["restart"])
    @rule(kill=st.booleans(), fault=st.sampled_from((None,) + FAULTS))
    def restart(self, kill, fault):
        """Clean restart or kill -9, optionally arming a fault point for the next EndTxn."""
        self.spent["restart"] += 1
        self.drop_client()
        self.b.kill() if kill else self.b.stop(timeout=30)
        if kill:
            self.crashes += 1
        COVERAGE[f"{'kill -9' if kill else 'clean restart'}{', armed' if fault else ''}"] += 1
        self.start(fault)

    # ---------------------------------------------------------- invariants
    @invariant()
    def invariants(self):
        COVERAGE["checks"] += 1
        self.spent["checks"] += 1
        self.check(batch_by_batch=self.spent["checks"] % 4 == 0)  # every 4th: one fetch per batch too

    def check(self, batch_by_batch: bool = False) -> None:
        for p in range(PARTITIONS):
            self.retrying(lambda c: self.check_partition(c, p, batch_by_batch))
        self.check_atomicity()

    def check_partition(self, c: RawClient, p: int, batch_by_batch: bool = False) -> None:
        t = self.topic
        # -- the log as appended
        raw = c.read_partition(t, p, isolation=0)
        assert raw.error_code == 0, raw.error_code
        assert raw.log_start_offset == self.log_start[p], \
            f"{t}-{p}: log start {raw.log_start_offset}, DeleteRecords answered {self.log_start[p]}"
        seen: dict[bytes, int] = {}
        for off, v, h in raw.records:
            assert v not in seen, f"{t}-{p}: {v!r} appended twice (offsets {seen[v]} and {off})"
            assert v not in self.zombie_values, f"{t}-{p}: a fenced producer's record {v!r} at {off}"
            assert v in self.recs, f"{t}-{p}: unknown record {v!r} at {off}"
            seen[v] = off
        for v, r in self.recs.items():
            if r.partition == p and r.offset >= self.log_start[p]:
                assert seen.get(v) == r.offset, f"{t}-{p}: acknowledged {v!r} at {r.offset}, log has {seen.get(v)}"

        # -- what read_committed delivers
        com = c.read_partition(t, p, isolation=1)
        assert com.error_code == 0, com.error_code
        lso, hw, start = com.last_stable_offset, com.high_watermark, com.log_start_offset
        # An open transaction whose start was deleted is unstable from the batch holding the log
        # start (Kafka's offset metadata): below the log start if DeleteRecords cut that batch.
        start_batch = raw.batches[0][0].base_offset if raw.batches else start
        assert min(start, start_batch) <= lso <= hw, \
            f"{t}-{p}: log start {start} (in a batch from {start_batch}), LSO {lso}, high watermark {hw}"
        for h, _ in com.batches:
            assert h.last_offset < lso, f"{t}-{p}: read_committed got batch {h.base_offset}-{h.last_offset}, LSO {lso}"
        visible: dict[bytes, int] = {}
        for off, v, h in com.records:
            assert v not in visible, f"{t}-{p}: read_committed delivered {v!r} twice"
            visible[v] = off
            r = self.recs[v]
            assert r.admin != "aborted", f"{t}-{p}: {v!r} at {off} visible after an admin abort"
            assert r.txn.fate not in (OPEN, ABORTED), \
                f"{t}-{p}: {v!r} at {off} of an {r.txn.fate} transaction is visible (LSO {lso})"
        for v, r in self.recs.items():
            if (r.partition == p and start <= r.offset < lso and r.txn.fate == COMMITTED
                    and not r.admin):
                assert v in visible, f"{t}-{p}: committed {v!r} at {r.offset} < LSO {lso} not delivered"
        if batch_by_batch:
            # one batch per fetch: each answer must list the aborted transactions its range overlaps
            # (one may have begun before the fetch offset)
            small = c.read_partition(t, p, isolation=1, max_bytes=1)
            if small.last_stable_offset == lso:
                assert [v for _, v, _ in small.records] == [v for _, v, _ in com.records], \
                    f"{t}-{p}: read_committed one batch at a time delivers other records"
        self.visible_below_lso[p] = (start, lso, visible)

        # -- the LSO is the first open transaction's start; the open transactions are the model's
        def lso_matches_open_transactions():
            d = c.describe_producers(t, p)
            assert d.error_code == 0, d
            reported = {(x.producer_id, x.current_txn_start_offset) for x in d.active_producers
                        if x.current_txn_start_offset >= 0}
            expected = {(txn.inst.pid, s) for txn in self.txns if txn.fate == OPEN
                        for q, s in txn.open_start.items() if q == p and s is not None}
            assert expected <= reported, f"{t}-{p}: open transactions {expected - reported} not reported: {reported}"
            known = {(r.txn.inst.pid, r.offset) for r in self.recs.values() if r.partition == p}
            assert reported <= known, f"{t}-{p}: DescribeProducers reports unknown open transactions {reported - known}"
            lso_now = c.list_offset(t, p, -1, isolation=1)
            hw_now = c.list_offset(t, p, -1)
            first_open = min(s for _, s in reported) if reported else hw_now
            if first_open < self.log_start[p]:
                first_open = start_batch
            return lso_now == min(first_open, hw_now) or (reported, lso_now, hw_now)

        got = []
        wait_until(lambda: got.append(lso_matches_open_transactions()) or got[-1] is True, 10,
                   message=lambda: f"{t}-{p}: LSO is not the first open transaction's start"
                                   f" (reported, LSO, HW) = {got[-1]}")

    def check_atomicity(self) -> None:
        """A transaction whose outcome the producer never learnt is all or nothing (below the LSO)."""
        for txn in self.txns:
            if txn.fate != COMMITTING:
                continue
            decided = [r for r in txn.records if not r.admin
                       and self.visible_below_lso[r.partition][0] <= r.offset < self.visible_below_lso[r.partition][1]]
            shown = [r for r in decided if r.value in self.visible_below_lso[r.partition][2]]
            assert not shown or len(shown) == len(decided), \
                f"torn transaction {txn.key}: {len(shown)} of {len(decided)} decided records visible"

    def teardown(self):
        try:
            # Fence every transactional id (aborting what is open), wait until nothing is
            # undecided, then every acknowledged commit must be there exactly once.
            for tid in self.tids:
                self.init(tid)
            for p in range(PARTITIONS):
                wait_until(lambda: self.retrying(lambda c: c.list_offset(self.topic, p, -1, isolation=1)
                                                 == c.list_offset(self.topic, p, -1)), 15,
                           message=f"{self.topic}-{p}: LSO never reached the high watermark")
            self.check(batch_by_batch=True)
            for txn in self.txns:
                if txn.fate == COMMITTED:
                    for r in txn.records:
                        if not r.admin and r.offset >= self.log_start[r.partition]:
                            assert r.value in self.visible_below_lso[r.partition][2], f"lost {r.value!r}"
        finally:
            self.drop_client()
            if not self.b.running:
                self.start(None)
            elif self.fault:
                self.b.stop(timeout=30)
                self.start(None)


@pytest.mark.timeout(0 if _EXAMPLES else 600)  # long local runs take what they take
def test_transaction_invariants(broker_factory):
    TxnInvariants.broker = broker_factory(overrides={"num.partitions": PARTITIONS})
    COVERAGE.clear()
    run_state_machine_as_test(TxnInvariants, settings=SETTINGS)
    print("coverage:", dict(sorted(COVERAGE.items())))
