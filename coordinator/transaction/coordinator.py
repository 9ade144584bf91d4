"""The transaction coordinator (KIP-98) of one node, with Kafka 4.1's semantics for both
transaction protocols side by side (Kafka's TransactionCoordinator, TransactionMetadata
and TransactionMarkerChannelManager).

Per transactional id: Empty/Complete* --AddPartitionsToTxn--> Ongoing --EndTxn--> Prepare*
--markers--> Complete*. Every transition is appended to `__transaction_state` before it
takes effect in memory.

Which protocol a request speaks follows from its version, as in Kafka: EndTxn v5 is
transactions V2 (KIP-890 part 2), older versions are V1; AddPartitionsToTxn v4+ (which a
partition leader sends for a Produce v12+ or TxnOffsetCommit v5+ that adds its partition
itself) records client transaction version 2, older ones 0. Under V2 every commit or
abort bumps the producer epoch (the Prepare* record already carries it, and so do the
markers), an abort needs no open transaction, and a commit or abort at an exhausted
epoch moves the id to a new producer id (``next_producer_id``) at epoch 0. What the
coordinator does on its own (a timed-out transaction's abort, the fence of an
InitProducerId) follows the finalized ``transaction.version`` (``TxnIO.transaction_version``),
which also decides the version of the records written.

There are no locks, because of one invariant: **a request's checks of the metadata and
the write they justify happen in one synchronous step, with no await between them**
(trio switches tasks only at an await, so nothing can change the metadata in between).
The one await inside a transition is the fsync of the commit point (Prepare*); from
then until Complete* is written, `pending_state` is set and every other request for
the id gets CONCURRENT_TRANSACTIONS, as Kafka answers while a transition is in flight.
The broker's produce path keeps the same rule: verification and the append it allows
are one synchronous step, so a marker can never land between them (KIP-890 part 1).

EndTxn answers once Prepare* is durable. The markers are written afterwards by
`write_markers`, which the broker runs whenever `TxnIO.markers_due` is signalled, and
again after the delay it returns while a marker write keeps failing: the transaction
stays Prepare* until every partition has its marker, and only then is Complete*
appended. After a restart, Prepare* states read back from the log are finished the
same way.

All I/O goes through a `TxnIO` the broker provides, so this module knows no sockets,
files or event loop.
"""
from __future__ import annotations

import logging
from typing import Iterable, Protocol

from minikafka.protocol.errors import ErrorCode
from ..hashing import partition_for
from .state import (MAX_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TV_0, TV_2, VALID_PREVIOUS, TransactionMetadata,
                    TxnState, decode_key, decode_value, encode_key, encode_value, epoch_exhausted, supports_epoch_bump,
                    value_version)

log = logging.getLogger("minikafka.txn")

S = TxnState
E = ErrorCode
OFFSETS_TOPIC = "__consumer_offsets"
PREPARED = (S.PREPARE_COMMIT, S.PREPARE_ABORT)
COMPLETE_OF = {S.PREPARE_COMMIT: S.COMPLETE_COMMIT, S.PREPARE_ABORT: S.COMPLETE_ABORT}

# How a marker write's answer is handled (Kafka's TransactionMarkerRequestCompletionHandler):
# retried until it succeeds (the transaction stays Prepare*) ...
RETRIABLE_MARKER_ERRORS = {E.UNKNOWN_TOPIC_OR_PARTITION, E.NOT_LEADER_OR_FOLLOWER, E.NOT_ENOUGH_REPLICAS,
                           E.NOT_ENOUGH_REPLICAS_AFTER_APPEND, E.REQUEST_TIMED_OUT, E.KAFKA_STORAGE_ERROR}
# ... the partition can never hold a marker (nor the producer's data): done with it ...
SKIPPED_MARKER_ERRORS = {E.UNSUPPORTED_FOR_MESSAGE_FORMAT, E.UNSUPPORTED_VERSION}
# ... the producer's or the coordinator's epoch moved on: stop sending this transaction's
# markers (it stays Prepare* until the state is reloaded, as in Kafka).
ABANDONING_MARKER_ERRORS = {E.INVALID_PRODUCER_EPOCH, E.TRANSACTION_COORDINATOR_FENCED}
MARKER_RETRY_FIRST_S = 0.05
MARKER_RETRY_MAX_S = 1.0
# KIP-939: a two-phase-commit transaction's timeout (never aborted by the coordinator)
TWO_PC_TIMEOUT_MS = 2**31 - 1


class TxnIO(Protocol):
    def now_ms(self) -> int: ...
    def allocate_producer_id(self) -> int: ...
    # -> whether the append reached the partition's flush.messages (an fsync is due)
    def append_state(self, partition: int, key: bytes, value: bytes | None) -> bool: ...
    def append_states(self, records: list[tuple[int, bytes, bytes | None]]) -> None: ...
    async def flush_state(self, partition: int) -> None: ...
    def write_markers(self, markers: list[tuple[str, int, int, int, bool, int]]) -> list[int]: ...
    def markers_due(self) -> None: ...
    def read_state(self) -> Iterable[tuple[bytes, bytes | None]]: ...
    def partition_exists(self, topic: str, partition: int) -> bool: ...
    def coordinator_epoch(self, state_partition: int) -> int: ...
    def transaction_version(self) -> int: ...
    def fault(self, point: str) -> None: ...


class TxnError(Exception):
    def __init__(self, code: ErrorCode, message: str | None = None):
        super().__init__(message or code.name)
        self.code = code


class TransactionCoordinator:
    def __init__(self, io: TxnIO, *, num_partitions: int = 50, max_timeout_ms: int = 900000,
                 id_expiration_ms: int = 604800000, offsets_partitions: int = 50, two_phase_commit: bool = False):
        self.io = io
        self.two_phase_commit = two_phase_commit  # transaction.two.phase.commit.enable (KIP-939)
        self.num_partitions = num_partitions
        self.max_timeout_ms = max_timeout_ms
        self.id_expiration_ms = id_expiration_ms
        self.offsets_partitions = offsets_partitions
        self.txns: dict[str, TransactionMetadata] = {}
        # Prepare* transactions whose markers are still to be written, in order of decision
        self._completing: dict[str, TransactionMetadata] = {}
        self._untried: set[str] = set()  # of those, decided since the last marker round
        self._retry_delay_s = MARKER_RETRY_FIRST_S
        self._warned: set[str] = set()  # transactional ids whose marker failure was logged
        # transactional id -> (its __transaction_state partition, its record key): computed once
        self._state_keys: dict[str, tuple[int, bytes]] = {}

    # ------------------------------------------------------------- loading
    def load(self) -> None:
        """Rebuild the cache from __transaction_state. A record holds its transactional id's
        whole state, so only the last one of each id counts (Kafka's loadTransactionMetadata
        keeps the last too) and only that one is decoded: a log of many transactions holds
        three records each, and decoding them all was most of a restart's time. A tombstone
        last removes the id. Transactions found in Prepare* are decided: their markers are
        (re)written by `write_markers`."""
        latest: dict[bytes, bytes | None] = {}
        for key, value in self.io.read_state():
            latest[key] = value  # (the same id's key is the same bytes: version 0 only)
        for key, value in latest.items():
            tid = decode_key(key)
            if tid is not None and value is not None:
                self.txns[tid] = decode_value(tid, value)
        for md in self.txns.values():
            if md.state in PREPARED:
                self._await_markers(md)
        if self.txns:
            log.info("loaded %d transactional ids (%d with markers to finish)", len(self.txns), len(self._completing))

    def state_partition(self, transactional_id: str) -> int:
        return self._state_key(transactional_id)[0]

    def _state_key(self, transactional_id: str) -> tuple[int, bytes]:
        key = self._state_keys.get(transactional_id)
        if key is None:
            key = self._state_keys[transactional_id] = (partition_for(transactional_id, self.num_partitions),
                                                        encode_key(transactional_id))
        return key

    # --------------------------------------------------------- transitions
    def _candidate(self, md: TransactionMetadata, changes: dict) -> TransactionMetadata:
        target = changes.get("state", md.state)
        if md.state not in VALID_PREVIOUS[target]:
            raise TxnError(E.INVALID_TXN_STATE, f"{md.transactional_id}: illegal transition {md.state.display} -> {target.display}")
        candidate = TransactionMetadata.__new__(TransactionMetadata)
        fields = candidate.__dict__
        fields.update(md.__dict__)
        fields["partitions"] = set(md.partitions)
        fields.update(changes)
        fields["pending_state"] = None
        fields["txn_last_update_ms"] = self.io.now_ms()
        # Kafka's TxnTransitMetadata: the previous producer id is the one before this transition
        # (InitProducerId accepts it from a producer retrying a producer id rotation)
        fields["prev_producer_id"] = md.producer_id
        return candidate

    def _append(self, md: TransactionMetadata, candidate: TransactionMetadata) -> bool:
        """-> whether the record reached its partition's flush.messages (an fsync is due)."""
        partition, key = self._state_key(md.transactional_id)
        return self.io.append_state(partition, key,
                                    encode_value(candidate, value_version(self.io.transaction_version())))

    @staticmethod
    def _apply(md: TransactionMetadata, candidate: TransactionMetadata) -> None:
        md.__dict__.update(candidate.__dict__)  # the candidate is dropped: its partition set becomes md's
        log.debug("%s -> %s (pid %d epoch %d)", md.transactional_id, md.state.display, md.producer_id, md.producer_epoch)

    def _transition(self, md: TransactionMetadata, **changes) -> None:
        """Append and apply a transition in one synchronous step (no fsync: the record is in
        the log before the transition takes effect, which survives a kill -9)."""
        candidate = self._candidate(md, changes)
        self._append(md, candidate)
        self._apply(md, candidate)

    async def _end(self, md: TransactionMetadata, commit: bool, **changes) -> None:
        """-> Prepare*, the commit point: appended, applied; the markers follow. As in Kafka,
        the record is not fsynced unless `__transaction_state`'s flush settings ask for it
        (a kill -9 keeps it, as every acknowledged write). When the append reaches the
        partition's `flush.messages` (1 with `log.flush.interval.messages=1`), it is made
        durable before it takes effect (group commit): before EndTxn is answered and before
        any marker is written, so not even a power cut undoes a decision a client was told
        about. ``changes``: what transactions V2 changes besides the state (the bumped
        epoch, ...)."""
        self.io.fault("txn.before_prepare")
        target = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
        candidate = self._candidate(md, {"state": target, **changes})
        md.pending_state = target
        try:
            if self._append(md, candidate):
                await self.io.flush_state(self.state_partition(md.transactional_id))
        except BaseException:
            md.pending_state = None
            raise
        self._apply(md, candidate)
        self._await_markers(md)
        self.io.fault("txn.after_prepare")

    def _await_markers(self, md: TransactionMetadata) -> None:
        md.pending_state = COMPLETE_OF[md.state]  # Kafka's prepareComplete: pending while markers are written
        self._completing[md.transactional_id] = md
        self._untried.add(md.transactional_id)
        self.io.markers_due()

    def write_untried_markers(self) -> None:
        """Run a marker round now if transactions were decided since the last one (the broker
        calls this once an answer is out, before the connection's next request: the producer's
        next transaction, or a read_committed read, then finds the markers written, however the
        event loop orders its tasks). While any marker waits for a retry, the writer's backoff
        stands, and requests for its id get CONCURRENT_TRANSACTIONS as in Kafka."""
        if self._untried and self._untried.issuperset(self._completing):
            self.write_markers()

    # ------------------------------------------------------ InitProducerId
    async def init_producer_id(self, transactional_id: str, txn_timeout_ms: int,
                               expected_pid: int = NO_PRODUCER_ID, expected_epoch: int = NO_PRODUCER_EPOCH,
                               enable_2pc: bool = False, keep_prepared_txn: bool = False) -> tuple[int, int]:
        """-> (producer_id, epoch); raises TxnError. `expected_*` are KIP-360's producer id and
        epoch of a producer recovering its own id (both given or neither: the handler checks).

        KIP-939 (InitProducerId v6), as far as Kafka 4.1 serves it: `enable_2pc` needs
        transaction.two.phase.commit.enable (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and
        gives the transaction no timeout (Integer.MAX_VALUE: never aborted by the coordinator);
        `keep_prepared_txn` (keeping a prepared transaction across the producer's restart) is
        refused with UNSUPPORTED_VERSION, as Kafka 4.1 refuses it."""
        if transactional_id == "":
            raise TxnError(E.INVALID_REQUEST, "transactional id must not be empty")
        if enable_2pc and not self.two_phase_commit:
            raise TxnError(E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        if keep_prepared_txn:
            raise TxnError(E.UNSUPPORTED_VERSION)
        if enable_2pc:
            txn_timeout_ms = TWO_PC_TIMEOUT_MS
        elif txn_timeout_ms <= 0 or txn_timeout_ms > self.max_timeout_ms:
            raise TxnError(E.INVALID_TRANSACTION_TIMEOUT)
        expected = expected_pid != NO_PRODUCER_ID
        md = self.txns.get(transactional_id)
        if md is None:
            md = TransactionMetadata(transactional_id, self.io.allocate_producer_id(), txn_timeout_ms=txn_timeout_ms,
                                     txn_last_update_ms=self.io.now_ms())
            self.txns[transactional_id] = md
        if md.pending_state is not None:  # also every Prepare*: its Complete* is pending
            raise TxnError(E.CONCURRENT_TRANSACTIONS)
        if expected and not (md.producer_epoch == NO_PRODUCER_EPOCH or expected_pid == md.producer_id
                             or (expected_pid == md.prev_producer_id and epoch_exhausted(expected_epoch))):
            raise TxnError(E.PRODUCER_FENCED)
        if md.state == S.ONGOING:
            # A live transaction of an older incarnation: fence its epoch and abort it. The
            # client retries on CONCURRENT_TRANSACTIONS and then gets a new epoch.
            await self._fence_and_abort(md)
            raise TxnError(E.CONCURRENT_TRANSACTIONS)
        now = self.io.now_ms()
        reset = dict(state=S.EMPTY, partitions=set(), txn_start_ms=-1, txn_timeout_ms=txn_timeout_ms)
        if epoch_exhausted(md.producer_epoch) and (not expected or expected_epoch == md.producer_epoch):
            # Kafka's prepareProducerIdRotation: a fresh producer id at epoch 0
            new = dict(reset, producer_id=self.io.allocate_producer_id(),
                       producer_epoch=0, last_producer_epoch=md.producer_epoch if expected else NO_PRODUCER_EPOCH)
        elif epoch_exhausted(md.producer_epoch):
            raise TxnError(E.UNKNOWN_SERVER_ERROR, f"no producer epoch left for producer id {md.producer_id}")
        elif not expected:
            # a plain init fences every earlier incarnation: nothing may claim the last epoch
            new = dict(reset, producer_epoch=md.producer_epoch + 1, last_producer_epoch=NO_PRODUCER_EPOCH)
        elif md.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == md.producer_epoch:
            # KIP-360: the current producer recovers; its epoch becomes the last one
            new = dict(reset, producer_epoch=md.producer_epoch + 1, last_producer_epoch=md.producer_epoch)
        elif expected_epoch == md.last_producer_epoch:
            # a retry of a recovery that succeeded: the same epoch again
            new = dict(reset, producer_epoch=md.producer_epoch, last_producer_epoch=md.last_producer_epoch)
        else:
            raise TxnError(E.PRODUCER_FENCED, f"expected epoch {expected_epoch} is neither the current "
                                              f"{md.producer_epoch} nor the last {md.last_producer_epoch}")
        new["txn_last_update_ms"] = now
        self._transition(md, **new)
        return md.producer_id, md.producer_epoch

    # ---------------------------------------------------- AddPartitionsToTxn
    def add_partitions(self, transactional_id: str, pid: int, epoch: int,
                       partitions: Iterable[tuple[str, int]], client_txn_version: int = TV_0) -> None:
        """AddPartitionsToTxn. ``client_txn_version``: 2 for v4+ (also what a partition leader
        sends to add a partition itself), 0 for v0-3, recorded with the transition (Kafka's
        transactionVersionForAddPartitionsToTxn)."""
        if not transactional_id:
            raise TxnError(E.INVALID_REQUEST)
        md = self.txns.get(transactional_id)
        if md is None:
            raise TxnError(E.INVALID_PRODUCER_ID_MAPPING)
        # Kafka 4.x checks a pending transition (a transition in flight, or markers still being
        # written: Complete* pending) before the producer id and epoch, so even a fenced or
        # unknown producer is told to retry until the transaction settles
        if md.pending_state is not None:
            raise TxnError(E.CONCURRENT_TRANSACTIONS)
        if md.producer_id != pid:
            raise TxnError(E.INVALID_PRODUCER_ID_MAPPING)
        if md.producer_epoch != epoch:
            raise TxnError(E.PRODUCER_FENCED)
        parts = set(partitions)
        if md.state == S.ONGOING:
            if parts <= md.partitions:
                return
            self._transition(md, partitions=md.partitions | parts, client_txn_version=client_txn_version)
        else:
            self._transition(md, state=S.ONGOING, partitions=parts, txn_start_ms=self.io.now_ms(),
                             client_txn_version=client_txn_version)

    def add_offsets(self, transactional_id: str, pid: int, epoch: int, group_id: str) -> None:
        self.add_partitions(transactional_id, pid, epoch, [self.offsets_partition(group_id)])

    def offsets_partition(self, group_id: str) -> tuple[str, int]:
        return OFFSETS_TOPIC, partition_for(group_id, self.offsets_partitions)

    def verify_partitions(self, transactional_id: str, pid: int, epoch: int,
                          partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], ErrorCode]:
        """AddPartitionsToTxn verifyOnly, as a partition leader asks it before a transactional
        append (Kafka's handleVerifyPartitionsInTransaction): is each partition in this
        producer's transaction? A transition in flight is not checked: the append that
        follows is checked by the partition itself."""
        parts = list(partitions)
        md = self.txns.get(transactional_id)
        if not transactional_id:
            err = E.INVALID_REQUEST
        elif md is None or md.producer_id != pid:
            err = E.INVALID_PRODUCER_ID_MAPPING
        elif md.producer_epoch != epoch:
            err = E.PRODUCER_FENCED
        elif md.state in PREPARED:
            err = E.CONCURRENT_TRANSACTIONS
        else:
            return {tp: E.NONE if tp in md.partitions else E.TRANSACTION_ABORTABLE for tp in parts}
        return {tp: err for tp in parts}

    # --------------------------------------------------------------- EndTxn
    async def end_txn(self, transactional_id: str, pid: int, epoch: int, commit: bool,
                      v2: bool = False) -> tuple[int, int]:
        """EndTxn from a client: answers once the decision is durable. ``v2``: EndTxn v5
        (transactions V2). Returns the producer id and epoch EndTxn v5 answers with (the
        bumped ones; -1 for the classic protocol, which keeps them)."""
        if v2:
            return await self._end_txn_v2(transactional_id, pid, epoch, commit)
        if not transactional_id:
            raise TxnError(E.INVALID_REQUEST)
        md = self.txns.get(transactional_id)
        if md is None or md.producer_id != pid:
            raise TxnError(E.INVALID_PRODUCER_ID_MAPPING)
        if md.producer_epoch != epoch:
            raise TxnError(E.PRODUCER_FENCED)
        if md.pending_state is not None:  # a transition in flight, or Prepare* (Complete* pending)
            raise TxnError(E.CONCURRENT_TRANSACTIONS)
        if md.state == S.ONGOING:
            # the classic protocol keeps the epoch (Kafka records client transaction version 0)
            await self._end(md, commit, client_txn_version=TV_0)
            return NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if md.state == (S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT):
            return NO_PRODUCER_ID, NO_PRODUCER_EPOCH  # a retry of an EndTxn that completed
        raise TxnError(E.INVALID_TXN_STATE, f"EndTxn({'commit' if commit else 'abort'}) in state {md.state.display}")

    async def _end_txn_v2(self, transactional_id: str, pid: int, epoch: int, commit: bool) -> tuple[int, int]:
        """EndTxn v5 (Kafka's endTransaction for transactions V2). The request's epoch is told
        apart from the current one: the producer's own epoch ends the transaction (bumping
        it); the epoch before the bump is a retry of an EndTxn that already ended it (answered
        NONE with the current producer id and epoch if its result matches, INVALID_TXN_STATE
        if not); so is the last epoch of the previous producer id right after a rotation.
        Anything else is PRODUCER_FENCED. An abort with no transaction open (Empty, Complete*)
        is a transaction of its own: no markers, but the epoch is bumped."""
        if not transactional_id:
            raise TxnError(E.INVALID_REQUEST)
        md = self.txns.get(transactional_id)
        if md is None:
            raise TxnError(E.INVALID_PRODUCER_ID_MAPPING)
        retry_on_overflow = (md.prev_producer_id == pid and epoch == MAX_EPOCH - 1 and md.producer_epoch == 0)
        retry_on_epoch_bump = md.producer_epoch == epoch + 1
        if md.state in (S.ONGOING, S.EMPTY):
            valid_epoch = epoch == md.producer_epoch
        elif md.state in PREPARED:
            valid_epoch = retry_on_epoch_bump
        else:
            valid_epoch = retry_on_epoch_bump or retry_on_overflow or epoch == md.producer_epoch
        is_retry = retry_on_epoch_bump or retry_on_overflow
        # Kafka 4.1 checks a transition in flight (markers being written included) first here
        if md.pending_state is not None:
            raise TxnError(E.CONCURRENT_TRANSACTIONS)
        if md.producer_id != pid and not retry_on_overflow:
            raise TxnError(E.INVALID_PRODUCER_ID_MAPPING)
        if not valid_epoch:
            raise TxnError(E.PRODUCER_FENCED)
        wrong = TxnError(E.INVALID_TXN_STATE, f"EndTxn({'commit' if commit else 'abort'}) in state {md.state.display}")
        if md.state == S.ONGOING:
            return await self._end_with_bump(md, commit, no_partition_added=False)
        if md.state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            done_commit = md.state == S.COMPLETE_COMMIT
            if is_retry:
                if commit != done_commit:
                    raise wrong
                return md.producer_id, md.producer_epoch  # a retry of the EndTxn that ended it
            if commit:
                raise wrong
            return await self._end_with_bump(md, False, no_partition_added=True)
        if md.state == S.EMPTY:
            if commit:
                raise wrong
            return await self._end_with_bump(md, False, no_partition_added=True)
        # Prepare* without a transition in flight: markers abandoned (the state waits for a reload)
        if commit == (md.state == S.PREPARE_COMMIT):
            raise TxnError(E.CONCURRENT_TRANSACTIONS)
        raise wrong

    async def _end_with_bump(self, md: TransactionMetadata, commit: bool, no_partition_added: bool,
                             fencing: bool = False) -> tuple[int, int]:
        """Kafka's prepareAbortOrCommit under transactions V2: Prepare* with the epoch bumped
        (never past Short.MAX_VALUE, which only an abort of a fenced producer reaches) and the
        previous epoch kept as the last one; at an exhausted epoch (not when fencing) a new
        producer id is allocated for the completion. Returns the producer id and epoch the
        transaction completes with, which EndTxn v5 answers."""
        now = self.io.now_ms()
        next_pid = NO_PRODUCER_ID
        if not fencing and epoch_exhausted(md.producer_epoch):
            next_pid = self.io.allocate_producer_id()
        if md.producer_epoch == MAX_EPOCH and not commit:
            log.error("Aborting producer %s %d with epoch equal to Short.MaxValue, this must not happen unless "
                      "there is a bug", md.transactional_id, md.producer_id)
            bumped = MAX_EPOCH
        else:
            bumped = md.producer_epoch + 1
        # an abort with no partition added has no start time: the update time stands for it
        await self._end(md, commit, producer_epoch=bumped, last_producer_epoch=md.producer_epoch,
                        next_producer_id=next_pid, client_txn_version=TV_2,
                        txn_start_ms=now if no_partition_added else md.txn_start_ms)
        if next_pid != NO_PRODUCER_ID:
            return next_pid, 0
        return md.producer_id, md.producer_epoch

    async def _fence_and_abort(self, md: TransactionMetadata) -> None:
        """Kafka's prepareFenceProducerEpoch + abort, under the finalized transaction.version:
        the epoch is bumped once (fencing the current producer; Short.MAX_VALUE is never
        passed) and the open transaction aborted with it. Under transactions V1 nobody may
        claim the fenced epoch afterwards (last epoch -1); under V2 the bump is the abort's own
        (Kafka 4.1 leaves it to prepareAbortOrCommit: +1, not +2, the epoch before it kept as
        the last one, as recorded from Kafka in txn_v2/fence/*)."""
        if supports_epoch_bump(self.io.transaction_version()):
            await self._end_with_bump(md, False, no_partition_added=False, fencing=True)
            return
        # Kafka bumps the epoch in memory before the append: from here on the fenced producer
        # gets PRODUCER_FENCED, also while the decision is being made durable
        if md.producer_epoch != MAX_EPOCH:
            md.producer_epoch += 1
        md.last_producer_epoch = NO_PRODUCER_EPOCH
        # Kafka's endTransactionWithTV1 records client transaction version 0
        await self._end(md, commit=False, client_txn_version=TV_0)

    # ------------------------------------------------------------ markers
    def write_markers(self) -> float | None:
        """Write every marker still due, appending Complete* for each transaction whose
        markers are all written. Returns the seconds after which to try again (a marker
        write failed retriably), or None when nothing is left.

        The markers of every transaction due are written together, in waves: the first
        marker of each transaction, then the second, ...; a wave's markers bound for one
        partition are one append there, and the Complete* records of one state partition
        are one append too."""
        self._untried.clear()
        todo = []  # (transaction, its partitions waiting for a marker)
        for md in self._completing.values():
            parts = []
            for tp in md.sorted_partitions():
                if self.io.partition_exists(*tp):
                    parts.append(tp)
                else:
                    md.partitions.discard(tp)  # deleted meanwhile: Kafka drops it too
            todo.append((md, parts))
        abandoned: set[str] = set()
        waiting: set[str] = set()  # a marker failed retriably (the others are still written)
        wave = 0
        while True:
            due = [(md, parts[wave]) for md, parts in todo
                   if wave < len(parts) and md.transactional_id not in abandoned]
            if not due:
                break
            if wave == 1:
                self.io.fault("txn.after_first_marker")
            codes = self.io.write_markers([
                # Kafka's coordinator epoch: the leader epoch of the transactional id's state partition
                (topic, part, md.producer_id, md.producer_epoch, md.state == S.PREPARE_COMMIT,
                 self.io.coordinator_epoch(self.state_partition(md.transactional_id)))
                for md, (topic, part) in due])
            for (md, tp), code in zip(due, codes):
                code = E(code)
                if code == E.NONE or code in SKIPPED_MARKER_ERRORS:
                    # as Kafka's removePartition: DescribeTransactions lists only partitions still waiting
                    md.partitions.discard(tp)
                    continue
                tid = md.transactional_id
                what = "COMMIT" if md.state == S.PREPARE_COMMIT else "ABORT"
                if code in ABANDONING_MARKER_ERRORS:
                    log.error("%s marker for %s-%d of %s failed with %s; no more markers are sent for it",
                              what, *tp, tid, code.name)
                    abandoned.add(tid)
                    del self._completing[tid]
                    self._warned.discard(tid)
                    continue
                if code not in RETRIABLE_MARKER_ERRORS:
                    log.error("unexpected %s writing a marker to %s-%d of %s; retrying", code.name, *tp, tid)
                elif tid not in self._warned:
                    log.warning("%s marker for %s-%d of %s failed with %s; retrying until it is written",
                                what, *tp, tid, code.name)
                waiting.add(tid)
            wave += 1
        self._warned |= waiting - abandoned
        done = [md for md, _ in todo if md.transactional_id not in abandoned and md.transactional_id not in waiting]
        if done:
            self._complete(done)
        retry = bool(waiting - abandoned)
        if not retry:
            self._retry_delay_s = MARKER_RETRY_FIRST_S
            return None
        delay, self._retry_delay_s = self._retry_delay_s, min(self._retry_delay_s * 2, MARKER_RETRY_MAX_S)
        return delay

    def _complete(self, mds: list[TransactionMetadata]) -> None:
        """Prepare* -> Complete* for transactions whose markers are all written: appended
        (one append per state partition), then applied."""
        self.io.fault("txn.after_markers")
        candidates = []
        for md in mds:
            del self._completing[md.transactional_id]
            self._warned.discard(md.transactional_id)
            # Kafka's prepareComplete: a finished transaction holds no partitions; a transactions V2
            # commit or abort at an exhausted epoch completes under its next producer id, epoch 0
            changes = {"state": COMPLETE_OF[md.state], "partitions": set(), "next_producer_id": NO_PRODUCER_ID}
            if supports_epoch_bump(md.client_txn_version) and md.next_producer_id != NO_PRODUCER_ID:
                changes.update(producer_id=md.next_producer_id, producer_epoch=0)
            candidates.append(self._candidate(md, changes))
        version = value_version(self.io.transaction_version())
        records = []
        for md, candidate in zip(mds, candidates):
            partition, key = self._state_key(md.transactional_id)
            records.append((partition, key, encode_value(candidate, version)))
        self.io.append_states(records)
        for md, candidate in zip(mds, candidates):
            self._apply(md, candidate)

    # ------------------------------------------------------- background work
    async def abort_timed_out(self) -> int:
        now = self.io.now_ms()
        n = 0
        for md in list(self.txns.values()):
            # a two-phase-commit transaction (KIP-939: no timeout) waits for its external coordinator
            if (md.state == S.ONGOING and md.pending_state is None and md.txn_timeout_ms != TWO_PC_TIMEOUT_MS
                    and md.txn_start_ms >= 0 and now > md.txn_start_ms + md.txn_timeout_ms):
                log.info("aborting transaction of %s (pid %d epoch %d): timed out after %d ms",
                         md.transactional_id, md.producer_id, md.producer_epoch, md.txn_timeout_ms)
                await self._fence_and_abort(md)
                n += 1
        return n

    def expire_transactional_ids(self) -> int:
        now = self.io.now_ms()
        n = 0
        for md in list(self.txns.values()):
            if (md.state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT) and md.pending_state is None
                    and md.txn_last_update_ms + self.id_expiration_ms <= now):
                partition, key = self._state_key(md.transactional_id)
                self.io.append_state(partition, key, None)
                del self.txns[md.transactional_id]
                del self._state_keys[md.transactional_id]
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
            # Kafka's shouldInclude: only a transaction that started within the filter is left
            # out, so Empty and Complete* ones (start time -1) are always listed
            if min_duration_ms >= 0 and now - md.txn_start_ms <= min_duration_ms:
                continue
            yield md
