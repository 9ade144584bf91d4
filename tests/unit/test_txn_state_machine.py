"""The transaction coordinator as pure code, its results run in memory: the paths an
integration test cannot reach cheaply -- epoch exhaustion (Kafka's prepareProducerIdRotation
and prepareFenceProducerEpoch) and marker write answers (TransactionMarkerRequestCompletionHandler)."""
from __future__ import annotations

import trio

from minikafka.coordinator.transaction.coordinator import MARKER_RETRY_FIRST_S, TransactionCoordinator, TxnError
from minikafka.coordinator.transaction.state import MAX_EPOCH, TxnState, decode_key, decode_value
from minikafka.protocol.errors import ErrorCode as E

NOW = 1_000


class MemoryIO:
    """The log, the fsync and the marker answers the runtime would use, in memory."""

    def __init__(self, transaction_version: int = 1, flush_messages: int | None = None):
        self.tv = transaction_version  # the finalized transaction.version
        self.records: list[tuple[bytes, bytes | None]] = []
        self.flush_messages = flush_messages  # __transaction_state's flush.messages (None: never)
        self.flushed = 0
        self.next_pid = 100
        self.marker_answer: dict[tuple[str, int], int] = {}
        self.markers: list[tuple[str, int, int, int, bool]] = []

    def next_id(self) -> int:
        self.next_pid += 1
        return self.next_pid

    async def flush_state(self) -> None:
        self.flushed = len(self.records)

    def write_markers(self, markers) -> list[int]:
        codes = []
        for m in markers:
            code = self.marker_answer.get((m.topic, m.partition), 0)
            if code == 0:
                self.markers.append((m.topic, m.partition, m.producer_id, m.producer_epoch, m.commit))
            codes.append(code)
        return codes


class Coordinator:
    """A TransactionCoordinator with what broker/transaction_runtime.py does around it: each
    result's records appended to ``io.records``, a commit point flushed when flush.messages
    asks, then applied; marker rounds answered by ``io``."""

    def __init__(self, io: MemoryIO):
        self.io = io
        self.c = TransactionCoordinator(io, transaction_version=io.tv)

    @property
    def txns(self):
        return self.c.txns

    def load(self) -> None:
        self.c.load(list(self.io.records))

    async def _run(self, result):
        self.io.records.extend((key, value) for _, key, value in result.records)
        try:
            if result.commit_point and self.io.flush_messages is not None and \
                    len(self.io.records) - self.io.flushed >= self.io.flush_messages:
                await self.io.flush_state()
        except BaseException:
            self.c.abandon(result)
            raise
        self.c.apply(result)
        if result.error is not None:
            raise TxnError(result.error)
        return result.producer_id, result.producer_epoch

    async def init_producer_id(self, tid, timeout, pid=-1, epoch=-1):
        return await self._run(self.c.init_producer_id(tid, timeout, NOW, pid, epoch))

    async def end_txn(self, tid, pid, epoch, commit, v2=False):
        return await self._run(self.c.end_txn(tid, pid, epoch, commit, NOW, v2=v2))

    def add_partitions(self, tid, pid, epoch, partitions):
        trio.run(self._run, self.c.add_partitions(tid, pid, epoch, partitions, NOW))

    def write_markers(self):
        """A marker round: the delay it returns."""
        rnd = self.c.start_marker_round(NOW)
        while wave := rnd.next_wave():
            rnd.answered(self.io.write_markers(wave))
        result, delay = rnd.finish()
        trio.run(self._run, result)
        return delay

    def write_untried_markers(self):
        """What a request that decided a transaction waits for after its answer."""
        if self.c.has_untried_markers():
            self.write_markers()


def test_exhausted_epoch_rotates_the_producer_id():
    io = MemoryIO()
    c = Coordinator(io)
    pid, epoch = trio.run(c.init_producer_id, "t", 60000)
    md = c.txns["t"]
    md.producer_epoch = MAX_EPOCH - 2  # as if reached by many InitProducerIds
    pid1, e1 = trio.run(c.init_producer_id, "t", 60000)
    assert (pid1, e1) == (pid, MAX_EPOCH - 1)  # the last usable epoch
    # a KIP-360 recovery at the exhausted epoch gets a fresh producer id, epoch 0 ...
    pid2, e2 = trio.run(c.init_producer_id, "t", 60000, pid1, e1)
    assert pid2 != pid1 and e2 == 0 and md.last_producer_epoch == MAX_EPOCH - 1
    # ... and its retry (the response was lost) the same one: previous id, exhausted epoch
    assert trio.run(c.init_producer_id, "t", 60000, pid1, e1) == (pid2, 0)
    # after the next transition the previous id is the current one: the old id is fenced
    c.add_partitions("t", pid2, 0, [("x", 0)])
    try:
        trio.run(c.init_producer_id, "t", 60000, pid1, e1)
        raise AssertionError("not fenced")
    except TxnError as e:
        assert e.code == E.PRODUCER_FENCED


def test_fence_at_the_last_epoch_uses_max_and_the_retry_rotates():
    io = MemoryIO()
    c = Coordinator(io)
    pid, _ = trio.run(c.init_producer_id, "t", 60000)
    md = c.txns["t"]
    md.producer_epoch = MAX_EPOCH - 1
    c.add_partitions("t", pid, MAX_EPOCH - 1, [("x", 0)])
    try:
        trio.run(c.init_producer_id, "t", 60000)
        raise AssertionError("expected CONCURRENT_TRANSACTIONS")
    except TxnError as e:
        assert e.code == E.CONCURRENT_TRANSACTIONS
    assert md.state == TxnState.PREPARE_ABORT and md.producer_epoch == MAX_EPOCH
    assert c.write_markers() is None
    assert io.markers == [("x", 0, pid, MAX_EPOCH, False)]
    assert md.state == TxnState.COMPLETE_ABORT
    pid2, e2 = trio.run(c.init_producer_id, "t", 60000)
    assert pid2 != pid and e2 == 0 and md.last_producer_epoch == -1


def test_marker_answers():
    io = MemoryIO()
    c = Coordinator(io)
    pid, epoch = trio.run(c.init_producer_id, "t", 60000)
    c.add_partitions("t", pid, epoch, [("a", 0), ("b", 0), ("c", 0)])
    io.marker_answer = {("a", 0): int(E.NOT_LEADER_OR_FOLLOWER), ("b", 0): int(E.UNSUPPORTED_FOR_MESSAGE_FORMAT)}
    trio.run(c.end_txn, "t", pid, epoch, True)
    assert io.flushed == 0  # as in Kafka, no fsync unless the flush settings ask for one
    md = c.txns["t"]
    # retriable: stays PrepareCommit, the partitions still waiting are the only ones left
    assert c.write_markers() == MARKER_RETRY_FIRST_S
    assert md.state == TxnState.PREPARE_COMMIT and md.partitions == {("a", 0)}
    assert c.write_markers() == 2 * MARKER_RETRY_FIRST_S  # backoff doubles
    io.marker_answer = {}
    assert c.write_markers() is None
    assert md.state == TxnState.COMPLETE_COMMIT and md.pending_state is None and md.partitions == set()
    states = [decode_value("t", v).state for k, v in io.records if decode_key(k) == "t"]
    assert states[-2:] == [TxnState.PREPARE_COMMIT, TxnState.COMPLETE_COMMIT]
    assert c.write_markers() is None  # the backoff starts over

    # the producer's epoch moved on at the partition: Kafka stops sending, the id stays pending
    pid, epoch = trio.run(c.init_producer_id, "u", 60000)
    c.add_partitions("u", pid, epoch, [("a", 0)])
    io.marker_answer = {("a", 0): int(E.INVALID_PRODUCER_EPOCH)}
    trio.run(c.end_txn, "u", pid, epoch, False)
    assert c.write_markers() is None
    assert c.txns["u"].state == TxnState.PREPARE_ABORT
    try:
        trio.run(c.init_producer_id, "u", 60000)
        raise AssertionError("expected CONCURRENT_TRANSACTIONS")
    except TxnError as e:
        assert e.code == E.CONCURRENT_TRANSACTIONS


def test_reload_finishes_prepared_transactions():
    io = MemoryIO()
    c = Coordinator(io)
    pid, epoch = trio.run(c.init_producer_id, "t", 60000)
    c.add_partitions("t", pid, epoch, [("a", 0)])
    io.marker_answer = {("a", 0): int(E.NOT_LEADER_OR_FOLLOWER)}
    trio.run(c.end_txn, "t", pid, epoch, True)
    assert c.write_markers() is not None
    again = Coordinator(io)  # a restart: the log says PrepareCommit
    again.load()
    assert again.txns["t"].state == TxnState.PREPARE_COMMIT and again.txns["t"].pending_state is not None
    io.marker_answer = {}
    assert again.write_markers() is None
    assert again.txns["t"].state == TxnState.COMPLETE_COMMIT


def test_reload_keeps_each_ids_last_record():
    """Load decodes only each id's last record: the state it ends in wins over earlier ones,
    a tombstone last removes the id, a record after a tombstone brings it back."""
    from minikafka.coordinator.transaction.state import encode_key
    io = MemoryIO()
    c = Coordinator(io)
    for tid in ("a", "b", "c"):
        pid, epoch = trio.run(c.init_producer_id, tid, 60000)
        c.add_partitions(tid, pid, epoch, [("t", 0)])
    pid_b = c.txns["b"].producer_id
    trio.run(c.end_txn, "a", c.txns["a"].producer_id, c.txns["a"].producer_epoch, True)
    c.write_markers()
    io.records.append((encode_key("b"), None))  # b expired: its tombstone
    io.records.append((encode_key("c"), None))
    c_last = next(v for k, v in reversed(io.records) if k == encode_key("c") and v is not None)
    io.records.append((encode_key("c"), c_last))  # c written again after its tombstone
    again = Coordinator(io)
    again.load()
    assert again.txns["a"].state == TxnState.COMPLETE_COMMIT and again.txns["a"].pending_state is None
    assert "b" not in again.txns and pid_b not in {md.producer_id for md in again.txns.values()}
    assert again.txns["c"].state == TxnState.ONGOING and again.txns["c"].partitions == {("t", 0)}


def test_state_record_value_is_what_the_schema_encodes():
    """encode_value is written by hand for the usual case (it runs on every transition): byte
    for byte Kafka's TransactionLogValue as the schema machinery builds it (null partitions
    for Empty; the producer ids of a rotation; version 0), and read back the same."""
    import random
    from minikafka.coordinator.transaction.state import (NO_PRODUCER_ID, TransactionMetadata, encode_value,
                                                         encode_value_by_schema)

    rnd = random.Random(17)
    cases = [TransactionMetadata("t", 0), TransactionMetadata("t", 2**63 - 1, MAX_EPOCH, state=TxnState.PREPARE_ABORT)]
    for _ in range(300):
        parts = {(rnd.choice(["a", "é" * rnd.randint(1, 70), "x" * rnd.randint(1, 300)]), rnd.randint(0, 2**31 - 1))
                 for _ in range(rnd.randint(0, 150))}
        pid = rnd.randint(-1, 2**63 - 1)
        cases.append(TransactionMetadata(
            "t", pid, rnd.randint(-1, MAX_EPOCH), txn_timeout_ms=rnd.randint(1, 2**31 - 1),
            state=rnd.choice(list(TxnState)), partitions=parts, txn_start_ms=rnd.choice([-1, rnd.randint(0, 2**62)]),
            txn_last_update_ms=rnd.randint(-1, 2**62), client_txn_version=rnd.choice([0, 1, 2, 300]),
            prev_producer_id=rnd.choice([NO_PRODUCER_ID, pid, rnd.randint(0, 2**62)]),
            next_producer_id=rnd.choice([NO_PRODUCER_ID, NO_PRODUCER_ID, rnd.randint(0, 2**62)])))
    for md in cases:
        for version in (1, 0):
            data = encode_value(md, version)
            assert data == encode_value_by_schema(md, version)
            back = decode_value("t", data)
            assert (back.state, back.partitions, back.producer_id) == \
                   (md.state, set() if md.state == TxnState.EMPTY else md.partitions, md.producer_id)
            if version == 1:
                assert (back.client_txn_version, back.next_producer_id) == (md.client_txn_version, md.next_producer_id)


def test_commit_point_made_durable_when_the_flush_settings_ask():
    """With flush.messages=1 on `__transaction_state`, Prepare* is fsynced before it takes
    effect: the flush has happened by the time EndTxn returns, and covers the Prepare record."""
    io = MemoryIO(flush_messages=1)
    c = Coordinator(io)
    pid, epoch = trio.run(c.init_producer_id, "t", 60000)
    c.add_partitions("t", pid, epoch, [("a", 0)])
    seen = []
    flush = io.flush_state

    async def flush_state():
        seen.append(c.txns["t"].state)  # not yet applied while its fsync runs
        await flush()
    io.flush_state = flush_state
    trio.run(c.end_txn, "t", pid, epoch, True)
    assert seen == [TxnState.ONGOING]
    assert decode_value("t", io.records[-1][1]).state == TxnState.PREPARE_COMMIT and io.flushed == len(io.records)
    assert c.txns["t"].state == TxnState.PREPARE_COMMIT


def test_untried_markers_are_written_on_demand():
    """Once the answer of a request that decided a transaction is out, the markers decided
    since the last round are written (has_untried_markers: the runtime's markers_tried waits
    for the writer's round), so the producer's next request finds its transaction complete."""
    io = MemoryIO()
    c = Coordinator(io)
    pid, epoch = trio.run(c.init_producer_id, "t", 60000)
    c.add_partitions("t", pid, epoch, [("a", 0)])
    trio.run(c.end_txn, "t", pid, epoch, True)
    assert io.markers == []  # the writer has not run
    c.write_untried_markers()
    assert io.markers == [("a", 0, pid, epoch, True)]
    c.write_untried_markers()  # nothing decided since: nothing written
    assert io.markers == [("a", 0, pid, epoch, True)]
    c.add_partitions("t", pid, epoch, [("a", 0)])
    assert c.txns["t"].state == TxnState.ONGOING


def test_failing_markers_keep_their_backoff():
    """A marker that failed waits for the writer's retry: requests meanwhile get
    CONCURRENT_TRANSACTIONS (as in Kafka), and later answers do not retry the marker."""
    io = MemoryIO()
    c = Coordinator(io)
    pid, epoch = trio.run(c.init_producer_id, "t", 60000)
    c.add_partitions("t", pid, epoch, [("a", 0)])
    io.marker_answer = {("a", 0): int(E.NOT_LEADER_OR_FOLLOWER)}
    tried = []
    write = io.write_markers
    io.write_markers = lambda markers: (tried.append(len(markers)), write(markers))[1]
    trio.run(c.end_txn, "t", pid, epoch, True)
    for _ in range(3):
        c.write_untried_markers()
        try:
            c.add_partitions("t", pid, epoch, [("a", 0)])
            raise AssertionError("added while the COMMIT marker is not written")
        except TxnError as e:
            assert e.code == E.CONCURRENT_TRANSACTIONS
    assert tried == [1]  # the first answer's round; then the writer's backoff stands
    io.marker_answer = {}
    assert c.write_markers() is None  # the writer's retry
    c.add_partitions("t", pid, epoch, [("a", 0)])
    assert c.txns["t"].state == TxnState.ONGOING
