"""The transaction coordinator (KIP-98) of one node, with Kafka 4.1's semantics for both
transaction protocols side by side (Kafka's TransactionCoordinator, TransactionMetadata
and the decisions of TransactionMarkerChannelManager).

Per transactional id: Empty/Complete* --AddPartitionsToTxn--> Ongoing --EndTxn--> Prepare*
--markers--> Complete*. Every transition is appended to `__transaction_state` before it
takes effect in memory: a request **returns** a `TxnResult` (the records, the answer, the
transactions decided), the broker's runtime appends the records and hands the result back
to `apply`. Nothing here writes, sleeps or awaits.

Which protocol a request speaks follows from its version, as in Kafka: EndTxn v5 is
transactions V2 (KIP-890 part 2), older versions are V1; AddPartitionsToTxn v4+ (which a
partition leader sends for a Produce v12+ or TxnOffsetCommit v5+ that adds its partition
itself) records client transaction version 2, older ones 0. Under V2 every commit or
abort bumps the producer epoch (the Prepare* record already carries it, and so do the
markers), an abort needs no open transaction, and a commit or abort at an exhausted
epoch moves the id to a new producer id (``next_producer_id``) at epoch 0. What the
coordinator does on its own (a timed-out transaction's abort, the fence of an
InitProducerId) follows the finalized ``transaction_version``, which also decides the
version of the records written.

There are no locks, because of one invariant: **a request's checks of the metadata and
the write they justify happen in one synchronous step, with no await between them**
(the runtime appends and applies a result without an await, so nothing can change the
metadata in between). The one await is the fsync of a commit point (Prepare*), when the
flush settings ask for one; from the decision until Complete* is written, `pending_state`
is set and every other request for the id gets CONCURRENT_TRANSACTIONS, as Kafka answers
while a transition is in flight. The broker's produce path keeps the same rule:
verification and the append it allows are one synchronous step, so a marker can never
land between them (KIP-890 part 1).

EndTxn answers once Prepare* applied. The markers are written afterwards, in marker
rounds (`start_marker_round`) the runtime's marker writer runs, and again after the delay
a round returns while a marker write keeps failing: the transaction stays Prepare* until
every partition has its marker, and only then is Complete* appended. After a restart,
Prepare* states read back from the log are finished the same way.
"""
from __future__ import annotations

import logging
from typing import Iterable

from minikafka.protocol.errors import ErrorCode
from ..hashing import partition_for
from ..internal_topics import OFFSETS_TOPIC
from .result import Marker, TxnResult
from .state import (MAX_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TV_0, TV_2, VALID_PREVIOUS, TransactionMetadata,
                    TxnState, decode_key, decode_value, encode_key, encode_value, epoch_exhausted, supports_epoch_bump,
                    value_version)

log = logging.getLogger("minikafka.txn")

PREPARED = (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)
COMPLETE_OF = {TxnState.PREPARE_COMMIT: TxnState.COMPLETE_COMMIT, TxnState.PREPARE_ABORT: TxnState.COMPLETE_ABORT}

# How a marker write's answer is handled (Kafka's TransactionMarkerRequestCompletionHandler):
# retried until it succeeds (the transaction stays Prepare*) ...
RETRIABLE_MARKER_ERRORS = {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER,
                           ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                           ErrorCode.REQUEST_TIMED_OUT, ErrorCode.KAFKA_STORAGE_ERROR}
# ... the partition can never hold a marker (nor the producer's data): done with it ...
SKIPPED_MARKER_ERRORS = {ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT, ErrorCode.UNSUPPORTED_VERSION}
# ... the producer's or the coordinator's epoch moved on: stop sending this transaction's
# markers (it stays Prepare* until the state is reloaded, as in Kafka).
ABANDONING_MARKER_ERRORS = {ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.TRANSACTION_COORDINATOR_FENCED}
MARKER_RETRY_FIRST_S = 0.05
MARKER_RETRY_MAX_S = 1.0
# KIP-939: a two-phase-commit transaction's timeout (never aborted by the coordinator)
TWO_PC_TIMEOUT_MS = 2**31 - 1


class TxnError(Exception):
    def __init__(self, code: ErrorCode, message: str | None = None):
        super().__init__(message or code.name)
        self.code = code


class TransactionCoordinator:
    def __init__(self, producer_ids, *, num_partitions: int = 50, max_timeout_ms: int = 900000,
                 id_expiration_ms: int = 604800000, offsets_partitions: int = 50, two_phase_commit: bool = False,
                 transaction_version: int = TV_2):
        """``producer_ids.next_id()`` allocates a producer id (coordinator/producer_ids.py);
        ``transaction_version``: the finalized transaction.version (the broker sets it again
        when it changes)."""
        self.producer_ids = producer_ids
        self.transaction_version = transaction_version
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
    def load(self, records: Iterable[tuple[bytes, bytes | None]]) -> None:
        """Rebuild the cache from __transaction_state's (key, value) records. A record holds its
        transactional id's whole state, so only the last one of each id counts (Kafka's
        loadTransactionMetadata keeps the last too) and only that one is decoded: a log of many
        transactions holds three records each, and decoding them all was most of a restart's
        time. A tombstone last removes the id. Transactions found in Prepare* are decided:
        their markers are (re)written by the next marker round."""
        latest: dict[bytes, bytes | None] = {}
        for key, value in records:
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
    def _candidate(self, md: TransactionMetadata, changes: dict, now_ms: int) -> TransactionMetadata:
        target = changes.get("state", md.state)
        if md.state not in VALID_PREVIOUS[target]:
            raise TxnError(ErrorCode.INVALID_TXN_STATE,
                           f"{md.transactional_id}: illegal transition {md.state.display} -> {target.display}")
        candidate = TransactionMetadata.__new__(TransactionMetadata)
        fields = candidate.__dict__
        fields.update(md.__dict__)
        fields["partitions"] = set(md.partitions)
        fields.update(changes)
        fields["pending_state"] = None
        fields["txn_last_update_ms"] = now_ms
        # Kafka's TxnTransitMetadata: the previous producer id is the one before this transition
        # (InitProducerId accepts it from a producer retrying a producer id rotation)
        fields["prev_producer_id"] = md.producer_id
        return candidate

    def _record(self, md: TransactionMetadata, candidate: TransactionMetadata | None) -> tuple[int, bytes, bytes | None]:
        """The __transaction_state record of ``candidate`` (None: the id's tombstone)."""
        partition, key = self._state_key(md.transactional_id)
        value = None if candidate is None else encode_value(candidate, value_version(self.transaction_version))
        return partition, key, value

    def _transition(self, md: TransactionMetadata, now_ms: int, **changes) -> TxnResult:
        """A transition: its record, applied once appended (no fsync: the record is in the log
        before the transition takes effect, which survives a kill -9)."""
        candidate = self._candidate(md, changes, now_ms)
        return TxnResult([self._record(md, candidate)], transitions=[(md, candidate)])

    def _end(self, md: TransactionMetadata, commit: bool, now_ms: int, **changes) -> TxnResult:
        """-> Prepare*, the commit point; the markers follow. As in Kafka, the record is not
        fsynced unless `__transaction_state`'s flush settings ask for it (a kill -9 keeps it,
        as every acknowledged write). When the append reaches the partition's `flush.messages`
        (1 with `log.flush.interval.messages=1`), the runtime makes it durable before it takes
        effect (group commit): before EndTxn is answered and before any marker is written, so
        not even a power cut undoes a decision a client was told about. ``changes``: what
        transactions V2 changes besides the state (the bumped epoch, ...)."""
        target = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        candidate = self._candidate(md, {"state": target, **changes}, now_ms)
        md.pending_state = target  # until it applies (or the append fails: abandon)
        return TxnResult([self._record(md, candidate)], commit_point=True, transitions=[(md, candidate)],
                         decided=[md])

    def apply(self, result: TxnResult) -> None:
        """The result's records are appended (and durable, where it was a commit point and the
        flush settings asked): it takes effect."""
        for md, candidate in result.transitions:
            md.__dict__.update(candidate.__dict__)  # the candidate is dropped: its partition set becomes md's
            log.debug("%s -> %s (pid %d epoch %d)", md.transactional_id, md.state.display, md.producer_id,
                      md.producer_epoch)
        for md in result.decided:
            self._await_markers(md)
        for tid in result.expired:
            del self.txns[tid]
            del self._state_keys[tid]
            log.info("expired transactional id %s", tid)

    def abandon(self, result: TxnResult) -> None:
        """The result's append failed: nothing of it takes effect."""
        for md in result.decided:
            md.pending_state = None

    def _await_markers(self, md: TransactionMetadata) -> None:
        md.pending_state = COMPLETE_OF[md.state]  # Kafka's prepareComplete: pending while markers are written
        self._completing[md.transactional_id] = md
        self._untried.add(md.transactional_id)

    # ------------------------------------------------------ InitProducerId
    def init_producer_id(self, transactional_id: str, txn_timeout_ms: int, now_ms: int,
                         expected_pid: int = NO_PRODUCER_ID, expected_epoch: int = NO_PRODUCER_EPOCH,
                         enable_2pc: bool = False, keep_prepared_txn: bool = False) -> TxnResult:
        """The answer's producer id and epoch in the result; raises TxnError. `expected_*` are
        KIP-360's producer id and epoch of a producer recovering its own id (both given or
        neither: the handler checks).

        KIP-939 (InitProducerId v6), as far as Kafka 4.1 serves it: `enable_2pc` needs
        transaction.two.phase.commit.enable (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and
        gives the transaction no timeout (Integer.MAX_VALUE: never aborted by the coordinator);
        `keep_prepared_txn` (keeping a prepared transaction across the producer's restart) is
        refused with UNSUPPORTED_VERSION, as Kafka 4.1 refuses it."""
        if transactional_id == "":
            raise TxnError(ErrorCode.INVALID_REQUEST, "transactional id must not be empty")
        if enable_2pc and not self.two_phase_commit:
            raise TxnError(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        if keep_prepared_txn:
            raise TxnError(ErrorCode.UNSUPPORTED_VERSION)
        if enable_2pc:
            txn_timeout_ms = TWO_PC_TIMEOUT_MS
        elif txn_timeout_ms <= 0 or txn_timeout_ms > self.max_timeout_ms:
            raise TxnError(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
        expected = expected_pid != NO_PRODUCER_ID
        md = self.txns.get(transactional_id)
        if md is None:
            md = TransactionMetadata(transactional_id, self.producer_ids.next_id(), txn_timeout_ms=txn_timeout_ms,
                                     txn_last_update_ms=now_ms)
            self.txns[transactional_id] = md
        if md.pending_state is not None:  # also every Prepare*: its Complete* is pending
            raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
        if expected and not (md.producer_epoch == NO_PRODUCER_EPOCH or expected_pid == md.producer_id
                             or (expected_pid == md.prev_producer_id and epoch_exhausted(expected_epoch))):
            raise TxnError(ErrorCode.PRODUCER_FENCED)
        if md.state == TxnState.ONGOING:
            # A live transaction of an older incarnation: fence its epoch and abort it. The
            # client retries on CONCURRENT_TRANSACTIONS and then gets a new epoch.
            result = self._fence_and_abort(md, now_ms)
            result.error = ErrorCode.CONCURRENT_TRANSACTIONS
            return result
        reset = dict(state=TxnState.EMPTY, partitions=set(), txn_start_ms=-1, txn_timeout_ms=txn_timeout_ms)
        if epoch_exhausted(md.producer_epoch) and (not expected or expected_epoch == md.producer_epoch):
            # Kafka's prepareProducerIdRotation: a fresh producer id at epoch 0
            new = dict(reset, producer_id=self.producer_ids.next_id(),
                       producer_epoch=0, last_producer_epoch=md.producer_epoch if expected else NO_PRODUCER_EPOCH)
        elif epoch_exhausted(md.producer_epoch):
            raise TxnError(ErrorCode.UNKNOWN_SERVER_ERROR, f"no producer epoch left for producer id {md.producer_id}")
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
            raise TxnError(ErrorCode.PRODUCER_FENCED, f"expected epoch {expected_epoch} is neither the current "
                                                      f"{md.producer_epoch} nor the last {md.last_producer_epoch}")
        result = self._transition(md, now_ms, **new)
        candidate = result.transitions[0][1]
        result.producer_id, result.producer_epoch = candidate.producer_id, candidate.producer_epoch
        return result

    # ---------------------------------------------------- AddPartitionsToTxn
    def add_partitions(self, transactional_id: str, pid: int, epoch: int, partitions: Iterable[tuple[str, int]],
                       now_ms: int, client_txn_version: int = TV_0) -> TxnResult:
        """AddPartitionsToTxn (raises TxnError). ``client_txn_version``: 2 for v4+ (also what a
        partition leader sends to add a partition itself), 0 for v0-3, recorded with the
        transition (Kafka's transactionVersionForAddPartitionsToTxn)."""
        if not transactional_id:
            raise TxnError(ErrorCode.INVALID_REQUEST)
        md = self.txns.get(transactional_id)
        if md is None:
            raise TxnError(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        # Kafka 4.x checks a pending transition (a transition in flight, or markers still being
        # written: Complete* pending) before the producer id and epoch, so even a fenced or
        # unknown producer is told to retry until the transaction settles
        if md.pending_state is not None:
            raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
        if md.producer_id != pid:
            raise TxnError(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if md.producer_epoch != epoch:
            raise TxnError(ErrorCode.PRODUCER_FENCED)
        parts = set(partitions)
        if md.state == TxnState.ONGOING:
            if parts <= md.partitions:
                return TxnResult()
            return self._transition(md, now_ms, partitions=md.partitions | parts,
                                    client_txn_version=client_txn_version)
        return self._transition(md, now_ms, state=TxnState.ONGOING, partitions=parts, txn_start_ms=now_ms,
                                client_txn_version=client_txn_version)

    def add_offsets(self, transactional_id: str, pid: int, epoch: int, group_id: str, now_ms: int) -> TxnResult:
        return self.add_partitions(transactional_id, pid, epoch, [self.offsets_partition(group_id)], now_ms)

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
            err = ErrorCode.INVALID_REQUEST
        elif md is None or md.producer_id != pid:
            err = ErrorCode.INVALID_PRODUCER_ID_MAPPING
        elif md.producer_epoch != epoch:
            err = ErrorCode.PRODUCER_FENCED
        elif md.state in PREPARED:
            err = ErrorCode.CONCURRENT_TRANSACTIONS
        else:
            return {tp: ErrorCode.NONE if tp in md.partitions else ErrorCode.TRANSACTION_ABORTABLE for tp in parts}
        return {tp: err for tp in parts}

    # --------------------------------------------------------------- EndTxn
    def end_txn(self, transactional_id: str, pid: int, epoch: int, commit: bool, now_ms: int,
                v2: bool = False) -> TxnResult:
        """EndTxn from a client, answered once the decision applied. ``v2``: EndTxn v5
        (transactions V2), whose answer carries the producer id and epoch of the result (the
        bumped ones; -1 for the classic protocol, which keeps them)."""
        if v2:
            return self._end_txn_v2(transactional_id, pid, epoch, commit, now_ms)
        if not transactional_id:
            raise TxnError(ErrorCode.INVALID_REQUEST)
        md = self.txns.get(transactional_id)
        if md is None or md.producer_id != pid:
            raise TxnError(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if md.producer_epoch != epoch:
            raise TxnError(ErrorCode.PRODUCER_FENCED)
        if md.pending_state is not None:  # a transition in flight, or Prepare* (Complete* pending)
            raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
        if md.state == TxnState.ONGOING:
            # the classic protocol keeps the epoch (Kafka records client transaction version 0)
            return self._end(md, commit, now_ms, client_txn_version=TV_0)
        if md.state == (TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT):
            return TxnResult()  # a retry of an EndTxn that completed
        raise TxnError(ErrorCode.INVALID_TXN_STATE,
                       f"EndTxn({'commit' if commit else 'abort'}) in state {md.state.display}")

    def _end_txn_v2(self, transactional_id: str, pid: int, epoch: int, commit: bool, now_ms: int) -> TxnResult:
        """EndTxn v5 (Kafka's endTransaction for transactions V2). The request's epoch is told
        apart from the current one: the producer's own epoch ends the transaction (bumping
        it); the epoch before the bump is a retry of an EndTxn that already ended it (answered
        NONE with the current producer id and epoch if its result matches, INVALID_TXN_STATE
        if not); so is the last epoch of the previous producer id right after a rotation.
        Anything else is PRODUCER_FENCED. An abort with no transaction open (Empty, Complete*)
        is a transaction of its own: no markers, but the epoch is bumped."""
        if not transactional_id:
            raise TxnError(ErrorCode.INVALID_REQUEST)
        md = self.txns.get(transactional_id)
        if md is None:
            raise TxnError(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        retry_on_overflow = (md.prev_producer_id == pid and epoch == MAX_EPOCH - 1 and md.producer_epoch == 0)
        retry_on_epoch_bump = md.producer_epoch == epoch + 1
        if md.state in (TxnState.ONGOING, TxnState.EMPTY):
            valid_epoch = epoch == md.producer_epoch
        elif md.state in PREPARED:
            valid_epoch = retry_on_epoch_bump
        else:
            valid_epoch = retry_on_epoch_bump or retry_on_overflow or epoch == md.producer_epoch
        is_retry = retry_on_epoch_bump or retry_on_overflow
        # Kafka 4.1 checks a transition in flight (markers being written included) first here
        if md.pending_state is not None:
            raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
        if md.producer_id != pid and not retry_on_overflow:
            raise TxnError(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if not valid_epoch:
            raise TxnError(ErrorCode.PRODUCER_FENCED)
        wrong = TxnError(ErrorCode.INVALID_TXN_STATE,
                         f"EndTxn({'commit' if commit else 'abort'}) in state {md.state.display}")
        if md.state == TxnState.ONGOING:
            return self._end_with_bump(md, commit, now_ms, no_partition_added=False)
        if md.state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
            done_commit = md.state == TxnState.COMPLETE_COMMIT
            if is_retry:
                if commit != done_commit:
                    raise wrong
                # a retry of the EndTxn that ended it
                return TxnResult(producer_id=md.producer_id, producer_epoch=md.producer_epoch)
            if commit:
                raise wrong
            return self._end_with_bump(md, False, now_ms, no_partition_added=True)
        if md.state == TxnState.EMPTY:
            if commit:
                raise wrong
            return self._end_with_bump(md, False, now_ms, no_partition_added=True)
        # Prepare* without a transition in flight: markers abandoned (the state waits for a reload)
        if commit == (md.state == TxnState.PREPARE_COMMIT):
            raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
        raise wrong

    def _end_with_bump(self, md: TransactionMetadata, commit: bool, now_ms: int, no_partition_added: bool,
                       fencing: bool = False) -> TxnResult:
        """Kafka's prepareAbortOrCommit under transactions V2: Prepare* with the epoch bumped
        (never past Short.MAX_VALUE, which only an abort of a fenced producer reaches) and the
        previous epoch kept as the last one; at an exhausted epoch (not when fencing) a new
        producer id is allocated for the completion. The result carries the producer id and
        epoch the transaction completes with, which EndTxn v5 answers."""
        next_pid = NO_PRODUCER_ID
        if not fencing and epoch_exhausted(md.producer_epoch):
            next_pid = self.producer_ids.next_id()
        if md.producer_epoch == MAX_EPOCH and not commit:
            log.error("Aborting producer %s %d with epoch equal to Short.MaxValue, this must not happen unless "
                      "there is a bug", md.transactional_id, md.producer_id)
            bumped = MAX_EPOCH
        else:
            bumped = md.producer_epoch + 1
        # an abort with no partition added has no start time: the update time stands for it
        result = self._end(md, commit, now_ms, producer_epoch=bumped, last_producer_epoch=md.producer_epoch,
                           next_producer_id=next_pid, client_txn_version=TV_2,
                           txn_start_ms=now_ms if no_partition_added else md.txn_start_ms)
        if next_pid != NO_PRODUCER_ID:
            result.producer_id, result.producer_epoch = next_pid, 0
        else:
            result.producer_id, result.producer_epoch = md.producer_id, bumped
        return result

    def _fence_and_abort(self, md: TransactionMetadata, now_ms: int) -> TxnResult:
        """Kafka's prepareFenceProducerEpoch + abort, under the finalized transaction.version:
        the epoch is bumped once (fencing the current producer; Short.MAX_VALUE is never
        passed) and the open transaction aborted with it. Under transactions V1 nobody may
        claim the fenced epoch afterwards (last epoch -1); under V2 the bump is the abort's own
        (Kafka 4.1 leaves it to prepareAbortOrCommit: +1, not +2, the epoch before it kept as
        the last one, as recorded from Kafka in txn_v2/fence/*)."""
        if supports_epoch_bump(self.transaction_version):
            return self._end_with_bump(md, False, now_ms, no_partition_added=False, fencing=True)
        # Kafka bumps the epoch in memory before the append: from here on the fenced producer
        # gets PRODUCER_FENCED, also while the decision is being made durable
        if md.producer_epoch != MAX_EPOCH:
            md.producer_epoch += 1
        md.last_producer_epoch = NO_PRODUCER_EPOCH
        # Kafka's endTransactionWithTV1 records client transaction version 0
        return self._end(md, False, now_ms, client_txn_version=TV_0)

    # ------------------------------------------------------------ markers
    def has_untried_markers(self) -> bool:
        """Were transactions decided since the last marker round, and none is waiting for a
        retry? Then a round now writes their markers (while any marker waits for a retry, the
        writer's backoff stands, and requests for its id get CONCURRENT_TRANSACTIONS as in
        Kafka)."""
        return bool(self._untried) and self._untried.issuperset(self._completing)

    def awaiting_markers(self) -> set[tuple[str, int]]:
        """The partitions some decided transaction still needs a marker in."""
        return {tp for md in self._completing.values() for tp in md.partitions}

    def start_marker_round(self, now_ms: int, gone: set[tuple[str, int]] = frozenset()) -> "MarkerRound":
        """A round over every transaction whose markers are due. ``gone``: partitions deleted
        meanwhile (Kafka drops them from the transaction too)."""
        self._untried.clear()
        todo = []  # (transaction, its partitions waiting for a marker)
        for md in self._completing.values():
            md.partitions -= gone
            todo.append((md, md.sorted_partitions()))
        return MarkerRound(self, todo, now_ms)

    def _finish_round(self, rnd: "MarkerRound") -> tuple[TxnResult, float | None]:
        self._warned |= rnd.waiting - rnd.abandoned
        for tid in rnd.abandoned:
            del self._completing[tid]
            self._warned.discard(tid)
        done = [md for md, _ in rnd.todo
                if md.transactional_id not in rnd.abandoned and md.transactional_id not in rnd.waiting]
        result = self._complete(done, rnd.now_ms) if done else TxnResult()
        if not rnd.waiting - rnd.abandoned:
            self._retry_delay_s = MARKER_RETRY_FIRST_S
            return result, None
        delay, self._retry_delay_s = self._retry_delay_s, min(self._retry_delay_s * 2, MARKER_RETRY_MAX_S)
        return result, delay

    def _complete(self, mds: list[TransactionMetadata], now_ms: int) -> TxnResult:
        """Prepare* -> Complete* for transactions whose markers are all written (Kafka's
        prepareComplete: a finished transaction holds no partitions; a transactions V2 commit
        or abort at an exhausted epoch completes under its next producer id, epoch 0)."""
        result = TxnResult()
        for md in mds:
            del self._completing[md.transactional_id]
            self._warned.discard(md.transactional_id)
            changes = {"state": COMPLETE_OF[md.state], "partitions": set(), "next_producer_id": NO_PRODUCER_ID}
            if supports_epoch_bump(md.client_txn_version) and md.next_producer_id != NO_PRODUCER_ID:
                changes.update(producer_id=md.next_producer_id, producer_epoch=0)
            candidate = self._candidate(md, changes, now_ms)
            result.records.append(self._record(md, candidate))
            result.transitions.append((md, candidate))
        return result

    # ------------------------------------------------------- background work
    def timed_out(self, transactional_id: str, now_ms: int) -> TxnResult | None:
        """The fence and abort of the id's transaction if it is Ongoing past its timeout (a
        two-phase-commit transaction, KIP-939: no timeout, waits for its external coordinator)."""
        md = self.txns.get(transactional_id)
        if (md is None or md.state != TxnState.ONGOING or md.pending_state is not None
                or md.txn_timeout_ms == TWO_PC_TIMEOUT_MS or md.txn_start_ms < 0
                or now_ms <= md.txn_start_ms + md.txn_timeout_ms):
            return None
        log.info("aborting transaction of %s (pid %d epoch %d): timed out after %d ms",
                 md.transactional_id, md.producer_id, md.producer_epoch, md.txn_timeout_ms)
        return self._fence_and_abort(md, now_ms)

    def expire_transactional_ids(self, now_ms: int) -> TxnResult:
        """transactional.id.expiration.ms: the tombstones of ids idle that long, removed once written."""
        result = TxnResult()
        for md in self.txns.values():
            if (md.state in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)
                    and md.pending_state is None and md.txn_last_update_ms + self.id_expiration_ms <= now_ms):
                result.records.append(self._record(md, None))
                result.expired.append(md.transactional_id)
        return result

    # ---------------------------------------------------------------- views
    def list_transactions(self, now_ms: int, states: set[str] | None = None, pids: set[int] | None = None,
                          min_duration_ms: int = -1):
        for md in self.txns.values():
            if states and md.state.display not in states:
                continue
            if pids and md.producer_id not in pids:
                continue
            # Kafka's shouldInclude: only a transaction that started within the filter is left
            # out, so Empty and Complete* ones (start time -1) are always listed
            if min_duration_ms >= 0 and now_ms - md.txn_start_ms <= min_duration_ms:
                continue
            yield md


class MarkerRound:
    """One round of the marker writer (Kafka's TransactionMarkerChannelManager): the markers of
    every transaction due, in waves (the first marker of each transaction, then the second,
    ...); the runtime writes a wave, a wave's markers bound for one partition in one append,
    and answers each marker. ``finish`` then gives the Complete* records of the transactions
    whose markers are all written, and the seconds after which to try again (a marker write
    failed retriably) or None."""

    def __init__(self, coordinator: TransactionCoordinator, todo: list, now_ms: int):
        self.coordinator = coordinator
        self.todo = todo
        self.now_ms = now_ms
        self.wave = 0
        self.abandoned: set[str] = set()
        self.waiting: set[str] = set()  # a marker failed retriably (the others are still written)
        self._due: list = []

    def next_wave(self) -> list[Marker]:
        """The next wave's markers; empty when the round has none left."""
        coordinator = self.coordinator
        self._due = [(md, parts[self.wave]) for md, parts in self.todo
                     if self.wave < len(parts) and md.transactional_id not in self.abandoned]
        return [Marker(topic, part, md.producer_id, md.producer_epoch, md.state == TxnState.PREPARE_COMMIT,
                       coordinator.state_partition(md.transactional_id)) for md, (topic, part) in self._due]

    def answered(self, codes: list[int]) -> None:
        """The wave's answers, one per marker."""
        for (md, tp), code in zip(self._due, codes):
            code = ErrorCode(code)
            if code == ErrorCode.NONE or code in SKIPPED_MARKER_ERRORS:
                # as Kafka's removePartition: DescribeTransactions lists only partitions still waiting
                md.partitions.discard(tp)
                continue
            tid = md.transactional_id
            what = "COMMIT" if md.state == TxnState.PREPARE_COMMIT else "ABORT"
            if code in ABANDONING_MARKER_ERRORS:
                log.error("%s marker for %s-%d of %s failed with %s; no more markers are sent for it",
                          what, *tp, tid, code.name)
                self.abandoned.add(tid)
                continue
            if code not in RETRIABLE_MARKER_ERRORS:
                log.error("unexpected %s writing a marker to %s-%d of %s; retrying", code.name, *tp, tid)
            elif tid not in self.coordinator._warned:
                log.warning("%s marker for %s-%d of %s failed with %s; retrying until it is written",
                            what, *tp, tid, code.name)
            self.waiting.add(tid)
        self.wave += 1

    def finish(self) -> tuple[TxnResult, float | None]:
        return self.coordinator._finish_round(self)
