"""Every append to a partition log, and what follows it (Kafka's ReplicaManager, for one node).

- A client's produce (`append_records`): a transactional batch is first verified with the
  transaction coordinator (KIP-890), as the request's intent asks (`TransactionSupportedOperation`,
  Kafka's name: verify only, or add the partition to the transaction), then appended.
- The coordinators' records (`append_internal`: `__transaction_state`), and the COMMIT/ABORT
  markers (`write_markers`, internal and the admin WriteTxnMarkers). A marker written to a
  `__consumer_offsets` partition is the one notification that goes up: "transaction
  completed" to the group coordinator, whose pending offsets there become committed or go.
- After an append: the long-polling fetches wake (`data_event`), and the fsyncs a log asks
  for (a rolled segment, flush.messages) run in a worker thread (`flusher`, `flush_log`).
  Storage never calls up for either: the LogManager counts appends and collects the asks,
  and this manager looks after its own appends and whenever `notify_if_appended` is called
  (after a request, or a background task, that wrote through the group coordinator, which
  appends through the storage layer).
- The one log-dir failure policy, the LogManager's (`log_dir_failed`): an I/O error writing a
  log takes the log dir offline, and with its only log dir gone the broker halts.
"""
from __future__ import annotations

import contextlib
import enum
import logging
import os
import time

import trio

from minikafka.coordinator.internal_topics import OFFSETS_TOPIC
from minikafka.coordinator.transaction import TxnError
from minikafka.protocol import records as rec
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.storage.log_manager import LogManager

from .stepper import Stepper
from .topics import TopicManager

log = logging.getLogger("minikafka.broker")

# Kafka's produce-side translation of transaction coordinator errors (ReplicaManager, AddPartitionsToTxnManager)
VERIFY_RETRIABLE = {ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.NETWORK_EXCEPTION,
                    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                    ErrorCode.NOT_COORDINATOR}
# Kafka's add.partitions.to.txn.retry.backoff.ms / .max.ms (defaults)
ADD_PARTITIONS_RETRY_BACKOFF_S = 0.02
ADD_PARTITIONS_RETRY_MAX_S = 0.1
# A client's append of at least this many bytes writes to its segment in a worker thread (a
# write takes one to a few milliseconds a megabyte, a thread's round trip a tenth of one):
# under it the append stays one synchronous step, which is what a produce of ordinary batches
# (at most max.message.bytes, 1 MiB by default) is fastest with.
LARGE_APPEND_BYTES = 2 << 20


class TransactionSupportedOperation(enum.Enum):
    """What a request's version lets a transactional append do (Kafka's
    TransactionSupportedOperation): DEFAULT verifies that the partition is in the transaction;
    GENERIC_ERROR_SUPPORTED also lets the client be told TRANSACTION_ABORTABLE; ADD_PARTITION
    (KIP-890 part 2) adds the partition to the transaction instead."""
    DEFAULT = 0
    GENERIC_ERROR_SUPPORTED = 1
    ADD_PARTITION = 2

    @classmethod
    def of_produce(cls, version: int) -> "TransactionSupportedOperation":
        """Produce v12+ adds the partition; v11 may answer TRANSACTION_ABORTABLE."""
        return cls.ADD_PARTITION if version >= 12 else cls.GENERIC_ERROR_SUPPORTED if version >= 11 else cls.DEFAULT

    @classmethod
    def of_txn_offset_commit(cls, version: int) -> "TransactionSupportedOperation":
        """TxnOffsetCommit v5+ adds the group's offsets partition; v4 may answer TRANSACTION_ABORTABLE."""
        return cls.ADD_PARTITION if version >= 5 else cls.GENERIC_ERROR_SUPPORTED if version >= 4 else cls.DEFAULT


class TransactionVerificationError(KafkaError):
    """A transactional append the transaction coordinator did not confirm. Kafka answers
    these with its own message where it has one (INVALID_TXN_STATE, NOT_ENOUGH_REPLICAS),
    else with the code alone."""


def verification_error(code: ErrorCode, operation: TransactionSupportedOperation) -> TransactionVerificationError:
    """The error a produce gets when its transactional append was not confirmed: what Kafka
    4.1 answers per intent. Without GENERIC_ERROR_SUPPORTED, TRANSACTION_ABORTABLE is
    INVALID_TXN_STATE; a coordinator that cannot answer yet (such as CONCURRENT_TRANSACTIONS
    while the previous transaction's markers are being written) is NOT_ENOUGH_REPLICAS, which
    clients retry without a metadata refresh (ADD_PARTITION retries CONCURRENT_TRANSACTIONS
    itself)."""
    if code == ErrorCode.TRANSACTION_ABORTABLE and operation == TransactionSupportedOperation.DEFAULT:
        code = ErrorCode.INVALID_TXN_STATE
    if code == ErrorCode.INVALID_TXN_STATE:
        return TransactionVerificationError(code, "Partition was not added to the transaction")
    if code in VERIFY_RETRIABLE and not (code == ErrorCode.CONCURRENT_TRANSACTIONS
                                         and operation == TransactionSupportedOperation.ADD_PARTITION):
        return TransactionVerificationError(
            ErrorCode.NOT_ENOUGH_REPLICAS,
            f"Unable to verify the partition has been added to the transaction. Underlying error: {code.name}")
    err = TransactionVerificationError(code)
    err.message = None
    return err


def now_ms() -> int:
    return int(time.time() * 1000)


class ReplicaManager:
    def __init__(self, logs: LogManager, topics: TopicManager, config):
        self.logs = logs
        self.topics = topics
        self.config = config  # the broker's (replaced when dynamic configs change)
        self.transactions = None  # the TransactionRuntime (verification of transactional appends)
        self.group_coordinator = None  # once made: told when a transaction completed on its partitions
        self._data_event: trio.Event | None = None  # made by data_event for a waiter, dropped by notify_data
        self._appends_seen = logs.appends
        self._flush_wakeup = trio.Event()
        logs.defer_flushes()  # the fsyncs logs ask for run in the flusher's worker thread
        self.stepper = Stepper()  # long record walks (inflating batches) in slices of the event loop
        # (topic, partition) -> the lock its large appends take, while one is in progress or waits:
        # appends to the partition then queue in order behind the one whose bytes are being written
        self._append_locks: dict[tuple[str, int], trio.Lock] = {}
        self.fault_point = os.environ.get("MINIKAFKA_FAULT") or None  # docs/operations.md, "Fault injection"

    # ------------------------------------------------------------- partitions
    def get_log(self, topic: str, partition: int):
        return self.logs.get_log(topic, partition)

    def require_log(self, topic: str, partition: int):
        lg = self.get_log(topic, partition)
        if lg is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return lg

    def internal_records(self, topic: str):
        """(partition, batch header, Record) of every record of an internal topic, in log order per partition."""
        info = self.topics.get(topic)
        if info is None:
            return
        for p in range(info.num_partitions):
            lg = self.get_log(topic, p)
            offset = lg.log_start_offset
            while offset < lg.log_end_offset:
                data = lg.read(offset, 1 << 20).records
                if not data:
                    break
                for pos, h in rec.iter_batch_headers(data):
                    if h.last_offset < offset:
                        continue
                    _, records = rec.decode_batch(data[pos:pos + h.size])
                    for r in records:
                        yield p, h, r
                    offset = h.last_offset + 1

    # ---------------------------------------------------------- client produce
    async def append_records(self, lg, records, transactional_id: str | None,
                             operation: TransactionSupportedOperation):
        """A client produce to one partition (Kafka's ReplicaManager.handleProduceAppend).

        A transactional batch whose producer has no transaction of that epoch open on the
        partition is first verified with the transaction coordinator
        (transaction.partition.verification.enable): a write the coordinator does not
        know of would start a transaction no marker ever ends (a hanging transaction).
        ADD_PARTITION instead adds the partition to the transaction (KIP-890), as Kafka
        4.1 does, retrying CONCURRENT_TRANSACTIONS for a short while as Kafka does.
        The check and the append are one synchronous step (the coordinator's invariant):
        no marker can land in between, so a produce arriving after its transaction ended
        never opens a new transaction on the partition.

        The records are read first, over as many turns of the event loop as they take (a
        compressed batch may inflate to a gigabyte: broker/stepper.py); what the read found is
        applied where Kafka validates, after the transaction checks, in the synchronous step.
        A large append's bytes are written in a worker thread (`_large_append`)."""
        analysis = await self.stepper.run(lg.analyze(records))
        deadline = None
        while True:
            try:
                if len(records) < LARGE_APPEND_BYTES and (lg.topic, lg.partition) not in self._append_locks:
                    return self._checked_append(lg, records, transactional_id, operation, analysis)
                return await self._large_append(lg, records, transactional_id, operation, analysis)
            except KafkaError as e:
                if e.code != ErrorCode.CONCURRENT_TRANSACTIONS:  # only an added partition answers it
                    raise
                now = trio.current_time()
                deadline = deadline or now + ADD_PARTITIONS_RETRY_MAX_S
                if now >= deadline:
                    raise
            await trio.sleep(ADD_PARTITIONS_RETRY_BACKOFF_S)

    async def _large_append(self, lg, records, transactional_id: str | None,
                            operation: TransactionSupportedOperation, analysis):
        """`_checked_append` with the write to the segment in a worker thread, under the
        partition's append lock: appends to the partition queue behind it in order (a small one
        too, while the lock is held or awaited), and nothing of it shows (offsets, high
        watermark, producer state) until its bytes are all written. Whatever else changes the
        log meanwhile (markers, retention, deletion) finishes it first (UnifiedLog._settle)."""
        from minikafka.storage.log import AppendResult  # (partition logs are not on the start path)
        async with self.append_lock(lg.topic, lg.partition):
            pending = self._checked_append(lg, records, transactional_id, operation, analysis, begin=True)
            if pending.__class__ is AppendResult:
                return pending  # a duplicate
            pending.share()
            with trio.CancelScope(shield=True):  # begun, it ends (a kill -9 alone stops it)
                try:
                    await trio.to_thread.run_sync(pending.write)
                finally:
                    pending.write()  # (nothing once written: here if the thread never ran)
                self.fault("append.after_write")
                result = self._log_step(pending.log.finish_append, pending)
        self.notify_if_appended()
        return result

    @contextlib.asynccontextmanager
    async def append_lock(self, topic: str, partition: int):
        """Hold the partition's append lock: no large append's bytes are being written meanwhile,
        and every append to the partition (large or small) waits its turn behind the holder."""
        key = (topic, partition)
        lock = self._append_locks.get(key)
        if lock is None:
            lock = self._append_locks[key] = trio.Lock()
        try:
            async with lock:
                yield
        finally:
            if not lock.locked() and self._append_locks.get(key) is lock:
                del self._append_locks[key]  # (nobody holds or awaits it: appends go the direct way again)

    def appending(self, topic: str, partition: int) -> bool:
        """Is a large append to the partition in progress, or awaiting its turn?"""
        return (topic, partition) in self._append_locks

    def _checked_append(self, lg, records, transactional_id: str | None, operation: TransactionSupportedOperation,
                        analysis, begin: bool = False):
        if lg.closed:
            # replaced since the request looked it up (moved to another log dir): the partition's log now
            now = self.get_log(lg.topic, lg.partition)
            if now is not None and now.topic_id == lg.topic_id:
                lg = now
        if self.config["transaction.partition.verification.enable"] and len(records) >= rec.HEADER_SIZE:
            h = rec.parse_header(records, 0)
            if h.is_transactional and h.producer_id >= 0:
                code = self.verify_transaction(lg, transactional_id, h.producer_id, h.producer_epoch,
                                               h.base_sequence, operation)
                if code != ErrorCode.NONE:
                    raise verification_error(code, operation)
        if begin:
            return self._log_step(lg.begin_append, records, analysis=analysis)
        result = self._append(lg, records, analysis=analysis)
        self.notify_if_appended()
        return result

    def _append(self, lg, records, **kwargs):
        return self._log_step(lg.append, records, **kwargs)

    def _log_step(self, step, *args, **kwargs):
        """``step(*args, **kwargs)``, a log's append (or its beginning or end); an I/O error, or
        a KafkaError an I/O error caused, is the log dir's failure (the LogManager's policy: the
        broker halts), never an answer."""
        try:
            return step(*args, **kwargs)
        except KafkaError as e:
            if isinstance(e.__cause__, OSError):
                self.log_dir_failed(e.__cause__)
            raise
        except OSError as e:
            self.log_dir_failed(e)

    def verify_transaction(self, lg, transactional_id: str, producer_id: int, producer_epoch: int,
                           sequence: int, operation: TransactionSupportedOperation) -> ErrorCode:
        """May a transactional append of (producer_id, producer_epoch) go to `lg` now? NONE, or
        the error (Kafka's Partition.maybeStartTransactionVerification, then the coordinator's
        verify-only AddPartitionsToTxn, or with ADD_PARTITION a real one, and the translation of
        AddPartitionsToTxnManager). The caller appends in the same synchronous step."""
        entry = lg.producer_state.last_entry(producer_id)
        if entry is not None and producer_epoch < entry.producer_epoch:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        if lg.has_ongoing_transaction(producer_id, producer_epoch):
            return ErrorCode.NONE
        add = operation == TransactionSupportedOperation.ADD_PARTITION
        lg.producer_state.start_transaction_verification(producer_id, sequence, producer_epoch, now_ms(),
                                                         supports_epoch_bump=add)
        tp = (lg.topic, lg.partition)
        if add:
            try:
                # what Kafka's AddPartitionsToTxnManager sends: AddPartitionsToTxn v5 (transactions V2)
                self.transactions.add_partitions(transactional_id, producer_id, producer_epoch, [tp],
                                                 client_txn_version=2)
                code = ErrorCode.NONE
            except TxnError as e:
                code = e.code
        else:
            code = self.transactions.coordinator.verify_partitions(transactional_id, producer_id, producer_epoch,
                                                                   [tp])[tp]
        # "Producers expect to handle INVALID_PRODUCER_EPOCH in this scenario"
        return ErrorCode.INVALID_PRODUCER_EPOCH if code == ErrorCode.PRODUCER_FENCED else code

    # ------------------------------------------------------ coordinator records
    def append_internal(self, topic: str, partition: int, batches: bytes):
        """The coordinator's own batches (AppendOrigin.COORDINATOR: no client-only checks) to
        an internal topic, made on first use; the AppendResult."""
        lg = self.get_log(topic, partition)
        if lg is None:
            self.topics.ensure_internal(topic)
            lg = self.get_log(topic, partition)
        result = self._append(lg, batches, origin="coordinator")
        self.notify_if_appended()
        return result

    def write_marker(self, topic: str, partition: int, producer_id: int, producer_epoch: int,
                     commit: bool, coordinator_epoch: int) -> int:
        """Append a COMMIT/ABORT control batch (WriteTxnMarkers, internal and admin); the
        error code."""
        lg = self.get_log(topic, partition)
        if lg is None:
            return int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        batch = rec.build_control_batch(producer_id, producer_epoch, commit, coordinator_epoch, now_ms())
        try:
            self._append(lg, batch, origin="coordinator")
        except KafkaError as e:
            return int(e.code)
        self._transaction_completed(topic, partition, [(producer_id, commit)])
        self.notify_if_appended()  # the LSO may have moved: wake read_committed long-polls
        return 0

    def write_markers(self, topic: str, partition: int, markers: list[tuple[int, int, bool, int]]) -> list[int]:
        """Append several markers ``(producer_id, producer_epoch, commit, coordinator_epoch)``
        to one partition in one append (a round of the marker writer's); each one's error
        code. Should the partition refuse the append, each marker is written alone, for its
        own answer."""
        if len(markers) == 1:
            return [self.write_marker(topic, partition, *markers[0])]
        lg = self.get_log(topic, partition)
        if lg is None:
            return [int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)] * len(markers)
        ts = now_ms()
        batches = b"".join(rec.build_control_batch(pid, epoch, commit, coordinator_epoch, ts)
                           for pid, epoch, commit, coordinator_epoch in markers)
        try:
            self._append(lg, batches, origin="coordinator")
        except KafkaError:
            return [self.write_marker(topic, partition, *m) for m in markers]
        self._transaction_completed(topic, partition, [(pid, commit) for pid, _, commit, _ in markers])
        self.notify_if_appended()  # the LSO may have moved: wake read_committed long-polls
        return [0] * len(markers)

    def _transaction_completed(self, topic: str, partition: int, markers: list[tuple[int, bool]]) -> None:
        """The one notification up: markers in a __consumer_offsets partition complete the
        transactions' offset commits there (Kafka's GroupCoordinator.onTransactionCompleted).
        No group coordinator yet: what it would apply is in the log it will load."""
        if topic == OFFSETS_TOPIC and self.group_coordinator is not None:
            for producer_id, commit in markers:
                self.group_coordinator.complete_transaction(partition, producer_id, commit)

    # ------------------------------------------------------------ data events
    @property
    def data_event(self) -> trio.Event:
        """Set (and dropped) whenever any partition's HW or LSO moves. Grab it *before*
        reading so a change between the read and the wait is not lost."""
        ev = self._data_event
        if ev is None:
            ev = self._data_event = trio.Event()
        return ev

    def notify_data(self) -> None:
        # the event exists only while a long-poll holds it: an append (several a commit) with
        # nobody waiting makes no Event
        ev = self._data_event
        if ev is not None:
            self._data_event = None
            ev.set()

    def notify_if_appended(self) -> None:
        """Whatever was appended since the last look wakes the long-polling fetches, and the
        fsyncs the logs asked for meanwhile wake the flusher."""
        if self.logs.appends != self._appends_seen:
            self._appends_seen = self.logs.appends
            self.notify_data()
        if self.logs.flush_requests:
            self._flush_wakeup.set()

    # ------------------------------------------------------------ flushing (fsync)
    async def flusher(self) -> None:
        """Runs the flushes the logs asked for, one log at a time, each in a worker thread
        (Kafka's asynchronous flush of a rolled segment)."""
        while True:
            await self._flush_wakeup.wait()
            self._flush_wakeup = trio.Event()
            for lg, upto in self.logs.take_flush_requests().items():
                await self.flush_log(lg, upto)

    async def flush_log(self, lg, upto: int) -> None:
        """fsync ``lg`` up to ``upto`` in a worker thread, never on the event loop. A failed
        fsync takes the log dir offline: the broker halts (`log_dir_failed`)."""
        if lg.recovery_point >= upto:
            return
        try:
            await trio.to_thread.run_sync(lg.flush, False, upto)
        except OSError as e:
            if isinstance(e, FileNotFoundError) and self.get_log(lg.topic, lg.partition) is not lg:
                return  # the partition was deleted meanwhile: nothing left to make durable
            self.log_dir_failed(e)

    async def flush_dirty_logs(self) -> None:
        """Kafka's ``flushDirtyLogs``: fsync every log whose last flush is ``flush.ms`` old."""
        for lg in self.logs.logs():
            if lg.flush_due(now_ms()):
                await self.flush_log(lg, lg.log_end_offset)

    # ------------------------------------------------------------ failures
    def fault(self, point: str) -> None:  # MINIKAFKA_FAULT: exit as kill -9 at that point
        if self.fault_point == point:
            log.error("fault injection: exiting at %s", point)
            os._exit(86)

    def log_dir_failed(self, error: BaseException) -> None:
        """The LogManager's policy: the log dir goes offline, the broker halts."""
        self.logs.log_dir_failed(error)
