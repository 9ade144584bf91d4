"""The transaction coordinator's runtime: it runs what the coordinator returns.

The coordinator (coordinator/transaction) decides and returns a `TxnResult`; this runtime
appends its `__transaction_state` records, makes a commit point durable through the fsync
batcher when the partition's flush settings ask for it, and hands the result back to
`apply`; then the transaction's markers are due. The marker writer (Kafka's
TransactionMarkerChannelManager) is a task of its own: woken when a transaction is
decided, it runs a marker round, and again after the round's backoff while a marker write
keeps failing. A request that decided a transaction (EndTxn, an InitProducerId that fenced
one) waits, after its answer is sent and before its connection's next request is read,
until the writer has tried its markers: the producer's next transaction, or a
read_committed read, then finds them written, however the event loop orders its tasks.

Fault injection (docs/operations.md, "Fault injection"): MINIKAFKA_FAULT exits as kill -9 at a named
point (txn.before_prepare, txn.after_prepare, txn.after_first_marker, txn.after_markers);
MINIKAFKA_FAULT_SKIP_MARKER=topic:partition never writes markers there (answering as if it
had: a hanging transaction); MINIKAFKA_FAULT_HOLD_MARKERS=prefix fails the markers of
topics with that prefix retriably.
"""
from __future__ import annotations

import logging
import os
import time

import trio

from minikafka.coordinator.internal_topics import TRANSACTION_TOPIC
from minikafka.coordinator.transaction import Marker, TransactionCoordinator, TxnError, TxnResult
from minikafka.protocol import records as rec
from minikafka.protocol.errors import ErrorCode

from .fsync_batcher import FsyncBatcher
from .replica_manager import ReplicaManager
from .topics import TopicManager

log = logging.getLogger("minikafka.txn")

MARKER_WRITER_FAILED_RETRY_S = 1.0  # after an unexpected error in a round


def now_ms() -> int:
    return int(time.time() * 1000)


class TransactionRuntime:
    def __init__(self, coordinator: TransactionCoordinator, replicas: ReplicaManager, topics: TopicManager):
        self.coordinator = coordinator
        self.replicas = replicas
        self.topics = topics
        self.fsync = FsyncBatcher(replicas.log_dir_failed)
        self._markers_due = trio.Event()  # set: a transaction was decided (the writer wakes)
        self._round_done = trio.Event()  # set (and replaced) at the end of each marker round
        skip = os.environ.get("MINIKAFKA_FAULT_SKIP_MARKER")
        self.skip_marker_for: set[tuple[str, int]] = set()
        if skip:
            topic, _, part = skip.rpartition(":")
            self.skip_marker_for.add((topic, int(part)))
        self.hold_markers_prefix = os.environ.get("MINIKAFKA_FAULT_HOLD_MARKERS") or None
        self.fault_point = os.environ.get("MINIKAFKA_FAULT") or None

    def load(self) -> None:
        self.coordinator.load((r.key, r.value) for _, _, r in self.replicas.internal_records(TRANSACTION_TOPIC)
                              if r.key is not None)

    # ------------------------------------------------------------ requests
    async def init_producer_id(self, transactional_id: str, txn_timeout_ms: int, expected_pid: int,
                               expected_epoch: int, enable_2pc: bool, keep_prepared_txn: bool) -> tuple[int, int]:
        """(producer id, epoch); raises TxnError."""
        result = self.coordinator.init_producer_id(transactional_id, txn_timeout_ms, now_ms(), expected_pid,
                                                   expected_epoch, enable_2pc, keep_prepared_txn)
        await self.run(result)
        return result.producer_id, result.producer_epoch

    async def end_txn(self, transactional_id: str, pid: int, epoch: int, commit: bool, v2: bool) -> tuple[int, int]:
        """The answer's producer id and epoch; raises TxnError."""
        result = self.coordinator.end_txn(transactional_id, pid, epoch, commit, now_ms(), v2=v2)
        await self.run(result)
        return result.producer_id, result.producer_epoch

    def add_partitions(self, transactional_id: str, pid: int, epoch: int, partitions, client_txn_version: int) -> None:
        """Raises TxnError. Checked, appended and applied in one synchronous step."""
        self.run_now(self.coordinator.add_partitions(transactional_id, pid, epoch, partitions, now_ms(),
                                                     client_txn_version))

    def add_offsets(self, transactional_id: str, pid: int, epoch: int, group_id: str) -> None:
        self.run_now(self.coordinator.add_offsets(transactional_id, pid, epoch, group_id, now_ms()))

    # --------------------------------------------------------- applying results
    async def run(self, result: TxnResult) -> None:
        """Append, make a commit point durable if the flush settings ask, apply; raises the
        result's TxnError once applied."""
        if result.commit_point:
            self.fault("txn.before_prepare")
        try:
            flush = self._append(result.records)
            if result.commit_point and flush:
                lg = flush[0]
                await self.fsync.flush(lg, lg.log_end_offset)
        except BaseException:
            self.coordinator.abandon(result)
            raise
        self._apply(result)

    def run_now(self, result: TxnResult) -> None:
        """A result that is no commit point: appended and applied with no await between."""
        try:
            self._append(result.records)
        except BaseException:
            self.coordinator.abandon(result)
            raise
        self._apply(result)

    def _apply(self, result: TxnResult) -> None:
        self.coordinator.apply(result)
        if result.decided:
            self._markers_due.set()
            self.fault("txn.after_prepare")
        if result.error is not None:
            raise TxnError(result.error)

    def _append(self, records: list[tuple[int, bytes, bytes | None]]) -> list:
        """Each record its own batch, as Kafka writes them, one append per partition; the logs
        whose append reached their flush.messages (an fsync is due)."""
        ts = now_ms()
        by_partition: dict[int, list[bytes]] = {}
        for partition, key, value in records:
            by_partition.setdefault(partition, []).append(rec.build_record_batch(key, value, ts))
        flush = []
        for partition, batches in by_partition.items():
            if self.replicas.append_internal(TRANSACTION_TOPIC, partition, b"".join(batches)).flush_needed:
                flush.append(self.replicas.get_log(TRANSACTION_TOPIC, partition))
        return flush

    # ---------------------------------------------------------- background work
    async def abort_timed_out(self) -> None:
        """transaction.abort.timed.out.transaction.cleanup.interval.ms: fence and abort every
        Ongoing transaction past its timeout (each checked again when its turn comes)."""
        now = now_ms()
        for tid in list(self.coordinator.txns):
            result = self.coordinator.timed_out(tid, now)
            if result is not None:
                await self.run(result)

    async def expire_transactional_ids(self) -> None:
        self.run_now(self.coordinator.expire_transactional_ids(now_ms()))

    # ------------------------------------------------------------ markers
    async def write_markers_forever(self) -> None:
        """The marker writer: a round whenever a transaction is decided, and again after the
        round's backoff while a marker write keeps failing."""
        while True:
            due = self._markers_due = trio.Event()
            try:
                delay = self.marker_round()
            except Exception:
                log.exception("writing transaction markers failed")
                delay = MARKER_WRITER_FAILED_RETRY_S
            finally:
                done, self._round_done = self._round_done, trio.Event()
                done.set()
            if delay is None:
                # no deadline, no cancel scope: this wait comes round for each decided
                # transaction, and entering and leaving a scope costs more than the wake-up
                await due.wait()
                continue
            with trio.move_on_after(delay):
                await due.wait()

    async def markers_tried(self) -> None:
        """After the answer of a request that decided a transaction: return once the writer
        has tried the markers decided since its last round (at once while a failing marker
        holds its backoff)."""
        while self.coordinator.has_untried_markers():
            self._markers_due.set()
            await self._round_done.wait()

    def marker_round(self) -> float | None:
        """One round: every marker due, in waves, then Complete* for the transactions whose
        markers are all written. The seconds after which to try again, or None."""
        coordinator = self.coordinator
        gone = {tp for tp in coordinator.awaiting_markers() if self.replicas.get_log(*tp) is None}
        rnd = coordinator.start_marker_round(now_ms(), gone)
        while True:
            wave = rnd.next_wave()
            if not wave:
                break
            if rnd.wave == 1:
                self.fault("txn.after_first_marker")
            rnd.answered(self._write_markers(wave))
        result, delay = rnd.finish()
        if result.records:
            self.fault("txn.after_markers")
            self.run_now(result)
        return delay

    def _write_markers(self, markers: list[Marker]) -> list[int]:
        """Each marker's error code; those bound for one partition are one append."""
        codes = [0] * len(markers)
        by_partition: dict[tuple[str, int], list[int]] = {}
        for i, m in enumerate(markers):
            if (m.topic, m.partition) in self.skip_marker_for:
                log.warning("fault injection: not writing the %s marker to %s-%d (pid %d)",
                            "COMMIT" if m.commit else "ABORT", m.topic, m.partition, m.producer_id)
                # codes[i] stays 0: the coordinator believes it was written, a hanging transaction
            elif self.hold_markers_prefix is not None and m.topic.startswith(self.hold_markers_prefix):
                codes[i] = int(ErrorCode.NOT_LEADER_OR_FOLLOWER)  # as if the partition had no leader
            else:
                by_partition.setdefault((m.topic, m.partition), []).append(i)
        for (topic, partition), indexes in by_partition.items():
            answers = self.replicas.write_markers(topic, partition, [
                (markers[i].producer_id, markers[i].producer_epoch, markers[i].commit,
                 self.coordinator_epoch(markers[i].state_partition)) for i in indexes])
            for i, code in zip(indexes, answers):
                codes[i] = code
        return codes

    def coordinator_epoch(self, state_partition: int) -> int:
        """The leader epoch of the ``__transaction_state`` partition (Kafka's TransactionStateManager
        loads each partition with its leader epoch as the coordinator epoch)."""
        return max(self.topics.leader_epoch(TRANSACTION_TOPIC, state_partition), 0)

    def fault(self, point: str) -> None:  # MINIKAFKA_FAULT: exit as kill -9 at that point
        if self.fault_point == point:
            log.error("fault injection: exiting at %s", point)
            os._exit(86)
