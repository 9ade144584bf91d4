"""The transaction coordinator (KIP-98), one node, TV1 semantics.

Every transition is prepared under `pending_state` (concurrent requests for the
same transactional id get CONCURRENT_TRANSACTIONS, as in Kafka), appended to
`__transaction_state` and flushed, and only then applied to the in-memory
metadata. PREPARE_COMMIT / PREPARE_ABORT is the commit point: after it is
durable the markers are written to every partition of the transaction and
COMPLETE_* is appended. On start, PREPARE_* states found in the log are driven
to completion.

All I/O goes through a `TxnIO` the broker provides, so this module knows no
sockets, files or event loop.
"""
from __future__ import annotations

import logging
from typing import Iterable, Protocol

from protocol.errors import ErrorCode
from ..hashing import partition_for
from .state import (MAX_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, VALID_PREVIOUS, TransactionMetadata, TxnState,
                    decode_key, decode_value, encode_key, encode_value)

log = logging.getLogger("minikafka.txn")

S = TxnState
E = ErrorCode
OFFSETS_TOPIC = "__consumer_offsets"


class TxnIO(Protocol):
    def now_ms(self) -> int: ...
    def allocate_producer_id(self) -> int: ...
    async def append_state(self, partition: int, key: bytes, value: bytes | None, durable: bool) -> None: ...
    async def write_marker(self, topic: str, partition: int, producer_id: int, producer_epoch: int,
                           commit: bool, coordinator_epoch: int) -> int: ...
    def read_state(self) -> Iterable[tuple[bytes, bytes | None]]: ...
    def partition_exists(self, topic: str, partition: int) -> bool: ...
    def coordinator_epoch(self, state_partition: int) -> int: ...
    def fault(self, point: str) -> None: ...


class TxnError(Exception):
    def __init__(self, code: ErrorCode, message: str | None = None):
        super().__init__(message or code.name)
        self.code = code


class TransactionCoordinator:
    def __init__(self, io: TxnIO, *, num_partitions: int = 50, max_timeout_ms: int = 900000,
                 id_expiration_ms: int = 604800000, offsets_partitions: int = 50, two_phase_commit: bool = False):
        self.io = io
        self.num_partitions = num_partitions
        self.max_timeout_ms = max_timeout_ms
        self.id_expiration_ms = id_expiration_ms
        self.offsets_partitions = offsets_partitions
        self.two_phase_commit = two_phase_commit
        self.txns: dict[str, TransactionMetadata] = {}
        self.skip_marker_for: set[tuple[str, int]] = set()  # fault hook: markers never written (hanging txns)

    # ------------------------------------------------------------- loading
    def load(self) -> list[TransactionMetadata]:
        """Rebuild the cache from __transaction_state; returns transactions whose
        PREPARE_* must be driven to completion (call `complete_pending`)."""
        for key, value in self.io.read_state():
            tid = decode_key(key)
            if tid is None:
                continue
            md = decode_value(tid, value)
            if md is None:
                self.txns.pop(tid, None)
            else:
                self.txns[tid] = md
        pending = [md for md in self.txns.values() if md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT)]
        if self.txns:
            log.info("loaded %d transactional ids (%d with markers to finish)", len(self.txns), len(pending))
        return pending

    async def complete_pending(self, pending: list[TransactionMetadata]) -> None:
        for md in pending:
            md.pending_state = S.COMPLETE_COMMIT if md.state == S.PREPARE_COMMIT else S.COMPLETE_ABORT
            await self._write_markers_and_complete(md)

    def state_partition(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.num_partitions)

    # --------------------------------------------------------- transitions
    async def _persist(self, md: TransactionMetadata, new: dict) -> None:
        """Append the prospective metadata `new` (fields to change) and apply it once durable."""
        target = new.get("state", md.state)
        if md.state not in VALID_PREVIOUS[target]:
            raise TxnError(E.INVALID_TXN_STATE, f"{md.transactional_id}: illegal transition {md.state.display} -> {target.display}")
        candidate = TransactionMetadata(**{**md.copy_fields(), **new, "pending_state": None})
        candidate.txn_last_update_ms = new.get("txn_last_update_ms", self.io.now_ms())
        md.pending_state = target
        try:
            # Every record is written before the transition takes effect (which survives a
            # kill -9, as data appends do). PREPARE_* is the commit point, so it is also
            # fsynced: once a client is told "committed", even a power cut cannot undo it.
            await self.io.append_state(self.state_partition(md.transactional_id),
                                       encode_key(md.transactional_id), encode_value(candidate),
                                       durable=target in (S.PREPARE_COMMIT, S.PREPARE_ABORT))
        except BaseException:
            md.pending_state = None
            raise
        for k, v in candidate.copy_fields().items():
            setattr(md, k, v)
        md.pending_state = None
        log.debug("%s -> %s (pid %d epoch %d)", md.transactional_id, md.state.display, md.producer_id, md.producer_epoch)

    # ------------------------------------------------------ InitProducerId
    async def init_producer_id(self, transactional_id: str, txn_timeout_ms: int, expected_pid: int = -1,
                               expected_epoch: int = -1, keep_prepared: bool = False) -> tuple[int, int]:
        """-> (producer_id, epoch); raises TxnError."""
        if transactional_id == "":
            raise TxnError(E.INVALID_REQUEST, "transactional id must not be empty")
        if keep_prepared and not self.two_phase_commit:
            raise TxnError(E.INVALID_REQUEST,
                           "keepPreparedTxn requires transaction.two.phase.commit.enable")
        if txn_timeout_ms <= 0 or txn_timeout_ms > self.max_timeout_ms:
            raise TxnError(E.INVALID_TRANSACTION_TIMEOUT)
        md = self.txns.get(transactional_id)
        if md is None:
            md = TransactionMetadata(transactional_id, self.io.allocate_producer_id(), txn_timeout_ms=txn_timeout_ms)
            self.txns[transactional_id] = md
        if md.pending_state is not None:
            raise TxnError(E.CONCURRENT_TRANSACTIONS)
        if expected_pid != NO_PRODUCER_ID and not self._valid_expected(md, expected_pid, expected_epoch):
            raise TxnError(E.PRODUCER_FENCED)
        if md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT, S.PREPARE_EPOCH_FENCE):
            raise TxnError(E.CONCURRENT_TRANSACTIONS)
        if md.state == S.ONGOING:
            # A live transaction from an older incarnation: fence its epoch and abort
            # it; the client retries on CONCURRENT_TRANSACTIONS and then gets a new epoch.
            await self._fence_and_abort(md)
            raise TxnError(E.CONCURRENT_TRANSACTIONS)
        # EMPTY / COMPLETE_*: a retry of the same call returns the same epoch
        if (expected_pid == md.producer_id and expected_epoch == md.last_producer_epoch
                and md.producer_epoch != NO_PRODUCER_EPOCH and md.state == S.EMPTY and expected_epoch != NO_PRODUCER_EPOCH):
            return md.producer_id, md.producer_epoch
        if md.producer_epoch >= MAX_EPOCH - 1:
            # epoch exhausted: rotate to a fresh producer id
            new = dict(prev_producer_id=md.producer_id, producer_id=self.io.allocate_producer_id(),
                       producer_epoch=0, last_producer_epoch=NO_PRODUCER_EPOCH)
        else:
            new = dict(producer_epoch=md.producer_epoch + 1, last_producer_epoch=md.producer_epoch)
        new.update(state=S.EMPTY, partitions=set(), txn_start_ms=-1, txn_timeout_ms=txn_timeout_ms)
        await self._persist(md, new)
        return md.producer_id, md.producer_epoch

    @staticmethod
    def _valid_expected(md: TransactionMetadata, pid: int, epoch: int) -> bool:
        if pid == md.producer_id:
            return epoch in (md.producer_epoch, md.last_producer_epoch) or md.producer_epoch == NO_PRODUCER_EPOCH
        return pid == md.prev_producer_id

    # --------------------------------------------------------- validation
    def _checked(self, transactional_id: str, pid: int, epoch: int) -> TransactionMetadata:
        md = self.txns.get(transactional_id)
        if md is None:
            raise TxnError(E.INVALID_PRODUCER_ID_MAPPING)
        if md.producer_id != pid:
            raise TxnError(E.INVALID_PRODUCER_ID_MAPPING)
        if md.producer_epoch != epoch:
            raise TxnError(E.PRODUCER_FENCED)
        if md.pending_state is not None or md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            raise TxnError(E.CONCURRENT_TRANSACTIONS)
        return md

    # ---------------------------------------------------- AddPartitionsToTxn
    async def add_partitions(self, transactional_id: str, pid: int, epoch: int,
                             partitions: Iterable[tuple[str, int]]) -> None:
        md = self._checked(transactional_id, pid, epoch)
        if md.state == S.PREPARE_EPOCH_FENCE:
            raise TxnError(E.CONCURRENT_TRANSACTIONS)
        parts = set(partitions)
        if md.state == S.ONGOING and parts <= md.partitions:
            return
        now = self.io.now_ms()
        new = dict(state=S.ONGOING, partitions=(md.partitions | parts) if md.state == S.ONGOING else parts)
        if md.state != S.ONGOING:
            new["txn_start_ms"] = now
        await self._persist(md, new)

    def verify_partitions(self, transactional_id: str, pid: int, epoch: int,
                          partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], ErrorCode]:
        """AddPartitionsToTxn verifyOnly / produce-path verification: is each partition in
        this producer's ongoing transaction?"""
        md = self.txns.get(transactional_id)
        out = {}
        for tp in partitions:
            if md is None or md.producer_id != pid:
                out[tp] = E.INVALID_PRODUCER_ID_MAPPING
            elif md.producer_epoch != epoch:
                out[tp] = E.PRODUCER_FENCED
            elif md.state != S.ONGOING or tp not in md.partitions:
                out[tp] = E.INVALID_TXN_STATE
            else:
                out[tp] = E.NONE
        return out

    def verify_offsets_partition(self, transactional_id: str, pid: int, epoch: int, group_id: str) -> ErrorCode:
        tp = (OFFSETS_TOPIC, partition_for(group_id, self.offsets_partitions))
        return self.verify_partitions(transactional_id, pid, epoch, [tp])[tp]

    async def add_offsets(self, transactional_id: str, pid: int, epoch: int, group_id: str) -> None:
        await self.add_partitions(transactional_id, pid, epoch,
                                  [(OFFSETS_TOPIC, partition_for(group_id, self.offsets_partitions))])

    # --------------------------------------------------------------- EndTxn
    async def end_txn(self, transactional_id: str, pid: int, epoch: int, commit: bool) -> tuple[int, int]:
        md = self.txns.get(transactional_id)
        if md is None or md.producer_id != pid:
            raise TxnError(E.INVALID_PRODUCER_ID_MAPPING)
        if md.producer_epoch != epoch:
            raise TxnError(E.PRODUCER_FENCED)
        if md.pending_state is not None:
            raise TxnError(E.CONCURRENT_TRANSACTIONS)
        done, prep = (S.COMPLETE_COMMIT, S.PREPARE_COMMIT) if commit else (S.COMPLETE_ABORT, S.PREPARE_ABORT)
        if md.state == done:
            return md.producer_id, md.producer_epoch  # a retry of an EndTxn that completed
        if md.state == prep:
            raise TxnError(E.CONCURRENT_TRANSACTIONS)
        if md.state != S.ONGOING:
            raise TxnError(E.INVALID_TXN_STATE,
                           f"EndTxn({'commit' if commit else 'abort'}) in state {md.state.display}")
        await self._prepare_and_complete(md, commit)
        return md.producer_id, md.producer_epoch

    async def _prepare_and_complete(self, md: TransactionMetadata, commit: bool, extra: dict | None = None) -> None:
        self.io.fault("txn.before_prepare")
        await self._persist(md, dict(extra or {}, state=S.PREPARE_COMMIT if commit else S.PREPARE_ABORT))
        self.io.fault("txn.after_prepare")
        md.pending_state = S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT
        await self._write_markers_and_complete(md)

    async def _write_markers_and_complete(self, md: TransactionMetadata) -> None:
        commit = md.state == S.PREPARE_COMMIT
        for i, (topic, part) in enumerate(md.sorted_partitions()):
            if i == 1:
                self.io.fault("txn.after_first_marker")
            if (topic, part) in self.skip_marker_for:
                log.warning("fault injection: skipping %s marker for %s-%d of %s",
                            "COMMIT" if commit else "ABORT", topic, part, md.transactional_id)
                continue
            if not self.io.partition_exists(topic, part):
                continue  # deleted meanwhile: Kafka drops it from the set too
            # Kafka's coordinator epoch: the leader epoch of the transactional id's state partition
            coordinator_epoch = self.io.coordinator_epoch(self.state_partition(md.transactional_id))
            err = await self.io.write_marker(topic, part, md.producer_id, md.producer_epoch, commit, coordinator_epoch)
            if err:
                log.error("marker for %s-%d of %s failed with %s", topic, part, md.transactional_id, ErrorCode(err).name)
        self.io.fault("txn.after_markers")
        md.pending_state = None
        # as Kafka's prepareComplete: a finished transaction holds no partitions
        await self._persist(md, dict(state=S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT, partitions=set()))

    async def _fence_and_abort(self, md: TransactionMetadata) -> None:
        """Bump the epoch (fencing the current producer) and abort its open transaction."""
        if md.producer_epoch >= MAX_EPOCH - 1:
            # no epoch left to fence with: abort with the current one (Kafka logs the same)
            extra = {}
        else:
            extra = dict(producer_epoch=md.producer_epoch + 1, last_producer_epoch=md.producer_epoch)
        await self._prepare_and_complete(md, commit=False, extra=extra)

    # ------------------------------------------------------- background work
    async def abort_timed_out(self) -> int:
        now = self.io.now_ms()
        n = 0
        for md in list(self.txns.values()):
            if (md.state == S.ONGOING and md.pending_state is None
                    and md.txn_start_ms >= 0 and now > md.txn_start_ms + md.txn_timeout_ms):
                log.info("aborting transaction of %s (pid %d epoch %d): timed out after %d ms",
                         md.transactional_id, md.producer_id, md.producer_epoch, md.txn_timeout_ms)
                try:
                    await self._fence_and_abort(md)
                    n += 1
                except TxnError as e:
                    log.warning("timed-out abort of %s failed: %s", md.transactional_id, e)
        return n

    async def expire_transactional_ids(self) -> int:
        now = self.io.now_ms()
        n = 0
        for md in list(self.txns.values()):
            if (md.state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT) and md.pending_state is None
                    and md.txn_last_update_ms + self.id_expiration_ms <= now):
                md.pending_state = S.DEAD
                try:
                    await self.io.append_state(self.state_partition(md.transactional_id),
                                               encode_key(md.transactional_id), None, durable=False)
                finally:
                    md.pending_state = None
                self.txns.pop(md.transactional_id, None)
                log.info("expired transactional id %s", md.transactional_id)
                n += 1
        return n

    # ---------------------------------------------------------------- views
    def list_transactions(self, states: set[str] | None = None, pids: set[int] | None = None,
                          min_duration_ms: int = -1):
        now = self.io.now_ms()
        for md in self.txns.values():
            if states and md.state.display not in states:
                continue
            if pids and md.producer_id not in pids:
                continue
            if min_duration_ms >= 0 and (md.state != S.ONGOING or now - md.txn_start_ms < min_duration_ms):
                continue
            yield md
