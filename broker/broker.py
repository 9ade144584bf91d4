"""The Broker: one object that owns the storage, the coordinators and the
listeners' addresses; handlers reach everything through it."""
from __future__ import annotations

import logging
import os
import time
from collections import defaultdict

import trio

from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.storage.config import LogConfig
from minikafka.storage.dynamic_config import DynamicConfigStore
from minikafka.storage.log_manager import LogManager
from minikafka.storage.security_store import AclStore, ScramCredentialStore
from minikafka.coordinator.internal_topics import INTERNAL_TOPICS, OFFSETS_TOPIC, TRANSACTION_TOPIC
from minikafka.coordinator.producer_ids import ProducerIdManager
from minikafka.coordinator.transaction import TransactionCoordinator, TxnError
from .config import ConfigError
from .stepper import Stepper
from .connection_quotas import ConnectionQuotas
from minikafka.protocol import records as rec
from minikafka.storage.checkpoint import META_PROPERTIES
from .features import TRANSACTION_VERSION, FinalizedFeatures
from .fetch_session import FetchManager
from .memory_pool import MemoryPool
from .security.authorizer import AclBinding, Authorizer, parse_super_users
from .scheduler import Periodic, Service
from .transaction_runtime import TransactionRuntime

log = logging.getLogger("minikafka.broker")

PRODUCE_VERSION_ADD_PARTITION = 12  # Produce v12+: a transactional produce adds its partition (KIP-890)
# Kafka's produce-side translation of transaction coordinator errors (ReplicaManager, AddPartitionsToTxnManager)
VERIFY_RETRIABLE = {ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.NETWORK_EXCEPTION, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                    ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR}
PRODUCE_VERSION_TRANSACTION_ABORTABLE = 11  # first Produce version that may answer TRANSACTION_ABORTABLE
# Kafka's add.partitions.to.txn.retry.backoff.ms / .max.ms (defaults)
ADD_PARTITIONS_RETRY_BACKOFF_S = 0.02
ADD_PARTITIONS_RETRY_MAX_S = 0.1
# how often the group coordinator's timers (sessions, rebalance and join delays, offset
# expiry) are checked: their resolution
GROUP_TIMERS_PERIOD_MS = 50


class TransactionVerificationError(KafkaError):
    """A transactional append the transaction coordinator did not confirm. Kafka answers
    these with its own message where it has one (INVALID_TXN_STATE, NOT_ENOUGH_REPLICAS),
    else with the code alone."""


def verification_error(code: ErrorCode, produce_version: int) -> TransactionVerificationError:
    """The error a produce gets when its transactional append was not confirmed
    (`Broker.transaction_verification`): what Kafka 4.1 answers per Produce version.
    Before v11 TRANSACTION_ABORTABLE is INVALID_TXN_STATE; a coordinator that cannot
    answer yet (such as CONCURRENT_TRANSACTIONS while the previous transaction's markers
    are being written) is NOT_ENOUGH_REPLICAS, which clients retry without a metadata
    refresh (v12+, which adds the partition, retries CONCURRENT_TRANSACTIONS itself)."""
    if code == ErrorCode.TRANSACTION_ABORTABLE and produce_version < PRODUCE_VERSION_TRANSACTION_ABORTABLE:
        code = ErrorCode.INVALID_TXN_STATE
    if code == ErrorCode.INVALID_TXN_STATE:
        return TransactionVerificationError(code, "Partition was not added to the transaction")
    if code in VERIFY_RETRIABLE and not (code == ErrorCode.CONCURRENT_TRANSACTIONS
                                         and produce_version >= PRODUCE_VERSION_ADD_PARTITION):
        return TransactionVerificationError(
            ErrorCode.NOT_ENOUGH_REPLICAS,
            f"Unable to verify the partition has been added to the transaction. Underlying error: {code.name}")
    err = TransactionVerificationError(code)
    err.message = None
    return err


def now_ms() -> int:
    return int(time.time() * 1000)


class Metrics:
    """Counters the server updates; exported by broker/metrics.py when enabled."""

    def __init__(self):
        self.connections = 0
        self.failed_authentications = 0  # Kafka's failed-authentication-total
        self.request_count = defaultdict(int)  # (api key, version) -> requests handled
        self.observers = []

    def observe_request(self, api_key: int, version: int, seconds: float) -> None:
        self.request_count[(api_key, version)] += 1
        for obs in self.observers:
            obs(api_key, seconds)


class Broker:
    def __init__(self, config):
        self.node_id = config.node_id
        # GROUP configs and dynamic broker configs (AlterConfigs), kept in the log dir
        self.dynamic_configs = DynamicConfigStore(config.log_dir)
        try:
            config = config.with_dynamic(self.dynamic_configs.broker) if self.dynamic_configs.broker else config
        except ConfigError as e:
            log.warning("dynamic broker configs not applied: %s", e)
        self.config = config
        self.metrics = Metrics()
        self.connections: set = set()  # the server's open client connections (idle expiry)
        self.memory_pool = MemoryPool(config["queued.max.request.bytes"])
        self.connection_quotas = ConnectionQuotas(config, config.listeners)
        self.default_log_config = LogConfig.from_broker_properties(config.raw)
        self.logs = LogManager([config.log_dir], self.default_log_config, node_id=self.node_id)
        self.advertised: dict[str, tuple[str, int]] = {}
        self.authorizer = None  # security.authorizer.Authorizer when authorizer.class.name is set
        self.listeners: dict = {}  # name -> broker.security.listener.Listener, once bound
        self.listening: list[str] = []  # "NAME://host:port" of each bound listener (the ready line's)
        self._data_event: trio.Event | None = None  # made by data_event for a waiter, dropped by notify_data
        self.producer_ids = None  # ProducerIdManager, created in load() once log.dirs exists
        self.txn_coordinator = None
        self.transactions = None  # TransactionRuntime: runs the transaction coordinator's results
        self.features = None  # FinalizedFeatures (transaction.version, ...), read or made in load()
        self._group_coordinator = None  # GroupCoordinatorShard: see group_coordinator
        self.log_cleaner = None  # LogCleaner for compacted topics, created by its first round
        # fsyncs the logs asked for (roll, flush.messages): log -> offset to flush up to
        self._flush_requests: dict = {}
        self._flush_wakeup = trio.Event()
        # incremental fetch sessions (KIP-227), in memory only, as Kafka's
        self.fetch_manager = FetchManager(config["max.incremental.fetch.session.cache.slots"], now_ms)
        self.stepper = Stepper()  # long record walks (inflating batches) in slices of the event loop

    # ------------------------------------------------------------ lifecycle
    def load(self, trace=None) -> None:
        in_use = os.path.exists(os.path.join(self.config.log_dir, META_PROPERTIES))
        self.logs.load()
        if trace is not None:
            trace.mark("logs")
        self.features = FinalizedFeatures.load(self.config.log_dir)
        if self.features is None:
            if in_use:
                # a data dir of a minikafka from before finalized features: it ran transactions
                # V1, and an upgraded Kafka also keeps its levels until `kafka-features upgrade`
                self.features = FinalizedFeatures.format(self.config.log_dir, {TRANSACTION_VERSION: 1})
                log.info("Data dir %s has no finalized features yet: finalized %s (raise them with "
                         "`minikafka features upgrade --feature transaction.version=2`)",
                         self.config.log_dir, self.features.describe_levels())
            else:
                self.features = FinalizedFeatures.format(self.config.log_dir)
                log.info("Formatted %s with the default finalized features: %s", self.config.log_dir,
                         self.features.describe_levels())
        self.producer_ids = ProducerIdManager(self.config.log_dir)
        self.scram_credentials = ScramCredentialStore(self.config.log_dir)
        if self.config["authorizer.class.name"]:
            self.acl_store = AclStore(self.config.log_dir)
            self.authorizer = Authorizer((AclBinding(*row) for row in self.acl_store.rows),
                                         parse_super_users(self.config["super.users"]),
                                         self.config["allow.everyone.if.no.acl.found"])
        cfg = self.config
        self.txn_coordinator = TransactionCoordinator(
            self.producer_ids,
            num_partitions=cfg["transaction.state.log.num.partitions"],
            max_timeout_ms=cfg["transaction.max.timeout.ms"],
            id_expiration_ms=cfg["transactional.id.expiration.ms"],
            offsets_partitions=cfg["offsets.topic.num.partitions"],
            two_phase_commit=cfg["transaction.two.phase.commit.enable"],
            transaction_version=self.features.transaction_version,
        )
        self.transactions = TransactionRuntime(self.txn_coordinator, self)
        self.transactions.load()
        if OFFSETS_TOPIC in self.logs.topics():
            self._group_coordinator = self._load_group_coordinator()
        if trace is not None:
            trace.mark("coordinators")

    @property
    def group_coordinator(self):
        """The group coordinator (consumer groups, committed offsets). Made by load() when
        __consumer_offsets exists, its groups and offsets rebuilt from it; else on first use
        (a group request, a transactional offset commit, a deleted topic): it then starts from
        the same (empty) log. Until then a start need not import its code (~3 ms of a 120 ms
        start). Code that only reacts to the log (markers, timers) uses _group_coordinator:
        while it does not exist, what it would react to is in the log it will load."""
        if self._group_coordinator is None:
            self._group_coordinator = self._load_group_coordinator()
        return self._group_coordinator

    def _load_group_coordinator(self):
        from minikafka.coordinator.group import GroupConfig, GroupCoordinatorShard, LogOffsetsStore
        cfg = self.config
        coordinator = GroupCoordinatorShard(GroupConfig.from_broker_config(cfg), LogOffsetsStore(
            cfg["offsets.topic.num.partitions"], lambda p: self.get_log(OFFSETS_TOPIC, p),
            lambda: self.ensure_internal_topic(OFFSETS_TOPIC)),
            topics=self.assignable_topics, group_configs=self.dynamic_configs.group)
        coordinator.load(now_ms())
        return coordinator

    def background_tasks(self) -> list:
        """The background work (broker/scheduler.py): the marker writer (transactions decided
        before a restart first), the group coordinator's timers, transaction timeouts and
        expiry, producer-state expiry, retention, the log flusher and the recovery-point
        checkpoint (Kafka's LogManager tasks, first after log.initial.task.delay.ms; the
        checkpoint only bounds recovery work), the flusher of the fsyncs logs ask for, and log
        cleaning. Each period is the Kafka setting named."""
        cfg = self.config
        delay = cfg["log.initial.task.delay.ms"]
        tasks = [
            Service("transaction-marker-writer", self.transactions.write_markers_forever),
            Service("log-flusher", self._flusher),
            Periodic("group-coordinator-timers", GROUP_TIMERS_PERIOD_MS, self._tick_groups, first_delay_ms=0),
            Periodic("transaction.abort.timed.out.transaction.cleanup.interval.ms",
                     cfg["transaction.abort.timed.out.transaction.cleanup.interval.ms"],
                     self.transactions.abort_timed_out),
            Periodic("transaction.remove.expired.transaction.cleanup.interval.ms",
                     cfg["transaction.remove.expired.transaction.cleanup.interval.ms"],
                     self.transactions.expire_transactional_ids),
            Periodic("producer.id.expiration.check.interval.ms", cfg["producer.id.expiration.check.interval.ms"],
                     self._expire_producers),
            Periodic("log.retention.check.interval.ms", cfg["log.retention.check.interval.ms"], self._retention),
            Periodic("log.flush.scheduler.interval.ms", cfg["log.flush.scheduler.interval.ms"],
                     self._flush_dirty_logs, delay),
            Periodic("log.flush.offset.checkpoint.interval.ms", cfg["log.flush.offset.checkpoint.interval.ms"],
                     self._checkpoint, delay),
        ]
        if cfg["log.cleaner.enable"]:
            tasks.append(Periodic("log.cleaner.backoff.ms", max(cfg["log.cleaner.backoff.ms"], 10), self._clean_logs))
        return tasks

    async def _retention(self) -> None:
        deleted = self.logs.cleanup(now_ms())
        if deleted:
            log.info("retention deleted %d segment(s)", deleted)

    async def _checkpoint(self) -> None:
        await trio.to_thread.run_sync(self.logs.checkpoint)

    # ------------------------------------------------------------ flushing (fsync)
    def _request_flush(self, lg, upto: int) -> None:
        """A log asks for an fsync up to ``upto`` (storage calls this from append/roll)."""
        if upto > self._flush_requests.get(lg, -1):
            self._flush_requests[lg] = upto
        self._flush_wakeup.set()

    async def _flusher(self) -> None:
        """Runs the asked-for flushes, one log at a time, each in a worker thread (Kafka's
        asynchronous flush of a rolled segment)."""
        while True:
            await self._flush_wakeup.wait()
            self._flush_wakeup = trio.Event()
            requests, self._flush_requests = self._flush_requests, {}
            for lg, upto in requests.items():
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

    async def _flush_dirty_logs(self) -> None:
        """Kafka's ``flushDirtyLogs``: fsync every log whose last flush is ``flush.ms`` old."""
        for lg in self.logs.logs():
            if lg.flush_due(now_ms()):
                await self.flush_log(lg, lg.log_end_offset)

    async def _clean_logs(self) -> None:
        """One log cleaner round: pick the filthiest compacted log, rewrite its segments in a
        worker thread (immutable segments only), swap them in here, in the log's owner."""
        cleaner = self.log_cleaner
        if cleaner is None:
            # made here, log.cleaner.backoff.ms after start (Kafka's cleaner threads start with the
            # broker, but its first round comes no sooner): compaction is not on the start path
            from minikafka.storage.cleaner import LogCleaner
            cleaner = self.log_cleaner = LogCleaner(self.logs, self.config["log.cleaner.dedupe.buffer.size"])
        plan = cleaner.plan(now_ms())
        if plan is None:
            return
        try:
            try:
                result = await trio.to_thread.run_sync(cleaner.build, plan, abandon_on_cancel=True)
            except trio.Cancelled:
                cleaner.abort(plan)  # shutdown: the thread stops at its next batch, files are removed
                raise
            cleaner.commit(plan, result)
        except Exception as e:
            cleaner.handle_error(plan, e)

    def _tick_groups(self) -> None:
        """The group coordinator's timers (it takes explicit times, never sleeps)."""
        if self._group_coordinator is not None:
            self._group_coordinator.tick(now_ms())

    async def _expire_producers(self) -> None:
        self.logs.expire_producers(now_ms(), self.config["producer.id.expiration.ms"])

    def close(self) -> None:
        self.logs.close()

    # ---------------------------------------------------------------- ACLs
    def add_acls(self, bindings) -> None:
        """Add ACL bindings (duplicates are kept once), durably before they apply."""
        rows = list(self.authorizer.bindings)
        rows += [b for b in dict.fromkeys(bindings) if b not in set(rows)]
        self.acl_store.save([b.to_json() for b in rows])
        self.authorizer.bindings = rows

    def remove_acls(self, bindings) -> None:
        rows = [b for b in self.authorizer.bindings if b not in bindings]
        self.acl_store.save([b.to_json() for b in rows])
        self.authorizer.bindings = rows

    # ---------------------------------------------------------- data events
    @property
    def data_event(self) -> trio.Event:
        """Set (and dropped) whenever any partition's HW or LSO moves. Grab it
        *before* reading so a change between the read and the wait is not lost."""
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

    # ------------------------------------------------------------- topics
    def advertised_address(self, listener_name: str) -> tuple[str, int]:
        return self.advertised.get(listener_name) or next(iter(self.advertised.values()))

    def get_log(self, topic: str, partition: int):
        lg = self.logs.get_log(topic, partition)
        if lg is not None and lg.on_append is None:
            lg.on_append = self.notify_data
            lg.on_flush_needed = self._request_flush
        return lg

    def create_topic(self, name: str, num_partitions: int | None = None, configs: dict | None = None):
        info = self.logs.create_topic(name, num_partitions or self.config["num.partitions"], configs or {})
        return info

    def ensure_internal_topic(self, name: str):
        topics = self.logs.topics()
        if name in topics:
            return topics[name]
        n = self.config["offsets.topic.num.partitions" if name == OFFSETS_TOPIC else "transaction.state.log.num.partitions"]
        seg = self.config["offsets.topic.segment.bytes" if name == OFFSETS_TOPIC
                          else "transaction.state.log.segment.bytes"]
        return self.create_topic(name, n, {"cleanup.policy": "compact", "segment.bytes": str(seg)})

    @staticmethod
    def is_internal(name: str) -> bool:
        return name in INTERNAL_TOPICS

    def alter_dynamic_config(self, name: str, overrides: dict[str, str], validate_only: bool) -> None:
        """Replace the dynamic broker configs of resource `name` ("" or this node's id): checked
        by the same rules as the properties file, stored, then applied without a restart."""
        dynamic = {k: dict(v) for k, v in self.dynamic_configs.broker.items()}
        dynamic[name] = dict(overrides)
        new = self.config.static.with_dynamic(dynamic)  # ConfigError
        if validate_only:
            return
        self.dynamic_configs.set_broker(name, overrides)
        self.config = new
        self.default_log_config = LogConfig.from_broker_properties(new.raw)
        self.logs.set_default_config(self.default_log_config)
        log.info("dynamic broker configs of %s now %s", repr(name), overrides)

    def assignable_topics(self) -> dict:
        """{name: (topic id, partitions)} of the topics a consumer group may be assigned (KIP-848)."""
        return {name: (info.topic_id, info.num_partitions) for name, info in self.logs.topics().items()
                if name not in INTERNAL_TOPICS}

    def topic_by_id(self, topic_id):
        for info in self.logs.topics().values():
            if info.topic_id == topic_id:
                return info
        return None

    def ensure_coordinator_topic(self, key_type: int) -> None:
        self.ensure_internal_topic(OFFSETS_TOPIC if key_type == 0 else TRANSACTION_TOPIC)

    async def append_records(self, lg, records, transactional_id: str | None = None,
                             produce_version: int = PRODUCE_VERSION_ADD_PARTITION - 1):
        """A client produce to one partition (Kafka's ReplicaManager.handleProduceAppend).

        A transactional batch whose producer has no transaction of that epoch open on the
        partition is first verified with the transaction coordinator
        (transaction.partition.verification.enable): a write the coordinator does not
        know of would start a transaction no marker ever ends (a hanging transaction).
        Produce v12+ instead adds the partition to the transaction (KIP-890), as Kafka
        4.1 does, retrying CONCURRENT_TRANSACTIONS for a short while as Kafka does.
        The check and the append are one synchronous step (the coordinator's invariant):
        no marker can land in between, so a produce arriving after its transaction ended
        never opens a new transaction on the partition."""
        # the records are read first, over as many turns of the event loop as they take (a
        # compressed batch may inflate to a gigabyte); what the read found is applied where
        # Kafka validates, after the transaction checks, in the append's synchronous step
        analysis = await self.stepper.run(lg.analyze(records))
        deadline = None
        while True:
            try:
                return self._checked_append(lg, records, transactional_id, produce_version, analysis)
            except KafkaError as e:
                if e.code != ErrorCode.CONCURRENT_TRANSACTIONS:  # only the v12+ add answers it
                    raise
                now = trio.current_time()
                deadline = deadline or now + ADD_PARTITIONS_RETRY_MAX_S
                if now >= deadline:
                    raise
            await trio.sleep(ADD_PARTITIONS_RETRY_BACKOFF_S)

    def _checked_append(self, lg, records, transactional_id: str | None, produce_version: int, analysis):
        if self.config["transaction.partition.verification.enable"] and len(records) >= rec.HEADER_SIZE:
            h = rec.parse_header(records, 0)
            if h.is_transactional and h.producer_id >= 0:
                code = self.transaction_verification(lg, transactional_id, h.producer_id, h.producer_epoch,
                                                     h.base_sequence,
                                                     add=produce_version >= PRODUCE_VERSION_ADD_PARTITION)
                if code != ErrorCode.NONE:
                    raise verification_error(code, produce_version)
        try:
            return lg.append(records, analysis=analysis)
        except KafkaError as e:
            if isinstance(e.__cause__, OSError):
                self.log_dir_failed(e.__cause__)
            raise
        except OSError as e:
            self.log_dir_failed(e)

    def transaction_verification(self, lg, transactional_id: str, producer_id: int, producer_epoch: int,
                                 sequence: int, add: bool = False) -> ErrorCode:
        """May a transactional append of (producer_id, producer_epoch) go to `lg` now? NONE, or
        the error (Kafka's Partition.maybeStartTransactionVerification, then the coordinator's
        verify-only AddPartitionsToTxn, or with `add` a real one, and the translation of
        AddPartitionsToTxnManager). The caller appends in the same synchronous step."""
        entry = lg.producer_state.last_entry(producer_id)
        if entry is not None and producer_epoch < entry.producer_epoch:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        if lg.has_ongoing_transaction(producer_id, producer_epoch):
            return ErrorCode.NONE
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
            code = self.txn_coordinator.verify_partitions(transactional_id, producer_id, producer_epoch, [tp])[tp]
        # "Producers expect to handle INVALID_PRODUCER_EPOCH in this scenario"
        return ErrorCode.INVALID_PRODUCER_EPOCH if code == ErrorCode.PRODUCER_FENCED else code

    def write_marker(self, topic: str, partition: int, producer_id: int, producer_epoch: int,
                     commit: bool, coordinator_epoch: int) -> int:
        """Append a COMMIT/ABORT control batch (WriteTxnMarkers, internal and admin); the
        error code. A storage failure takes the only log dir offline: the broker halts."""
        lg = self.get_log(topic, partition)
        if lg is None:
            return int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        batch = rec.build_control_batch(producer_id, producer_epoch, commit, coordinator_epoch, now_ms())
        try:
            lg.append(batch, origin="coordinator")
        except KafkaError as e:
            if isinstance(e.__cause__, OSError):
                self.log_dir_failed(e.__cause__)
            return int(e.code)
        except OSError as e:
            self.log_dir_failed(e)
        if topic == OFFSETS_TOPIC and self._group_coordinator is not None:
            self._group_coordinator.complete_transaction(partition, producer_id, commit)
        self.notify_data()  # the LSO may have moved: wake read_committed long-polls
        return 0

    def write_markers(self, topic: str, partition: int, markers: list[tuple[int, int, bool, int]]) -> list[int]:
        """Append several markers ``(producer_id, producer_epoch, commit, coordinator_epoch)``
        to one partition in one append (a round of the transaction coordinator's); each
        one's error code. Should the partition refuse the append, each marker is written
        alone, for its own answer."""
        if len(markers) == 1:
            return [self.write_marker(topic, partition, *markers[0])]
        lg = self.get_log(topic, partition)
        if lg is None:
            return [int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)] * len(markers)
        ts = now_ms()
        batches = b"".join(rec.build_control_batch(pid, epoch, commit, coordinator_epoch, ts)
                           for pid, epoch, commit, coordinator_epoch in markers)
        try:
            lg.append(batches, origin="coordinator")
        except KafkaError as e:
            if isinstance(e.__cause__, OSError):
                self.log_dir_failed(e.__cause__)
            return [self.write_marker(topic, partition, *m) for m in markers]
        except OSError as e:
            self.log_dir_failed(e)
        if topic == OFFSETS_TOPIC and self._group_coordinator is not None:
            for pid, _, commit, _ in markers:
                self._group_coordinator.complete_transaction(partition, pid, commit)
        self.notify_data()  # the LSO may have moved: wake read_committed long-polls
        return [0] * len(markers)

    def log_dir_failed(self, error: BaseException) -> None:
        """An I/O error in the log dir. Kafka takes the dir offline, and with its only log dir
        gone halts the broker (LogManager.handleLogDirFailure, Exit.halt(1)); so does this
        one. Nothing half-written is trusted: on restart, recovery rebuilds the producer
        state from the log and the transaction coordinator finishes every Prepare*."""
        log.critical("Error while writing to the log dir %s: %s. Shutdown broker because all log dirs in %s "
                     "have failed", self.config.log_dir, error, self.config.log_dir)
        logging.shutdown()
        os._exit(1)

    def internal_records(self, topic: str):
        """(partition, Record) for every record of an internal topic, in log order per partition."""
        info = self.logs.topics().get(topic)
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

    def require_log(self, topic: str, partition: int):
        lg = self.get_log(topic, partition)
        if lg is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return lg
