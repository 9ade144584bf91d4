"""The Broker: the composition root. It builds the parts (the logs, the TopicManager and the
ReplicaManager over them, the coordinators and their runtime, the authorizer, the configs),
wires them, lists the background work, and holds them for the handlers; the work itself is
the parts'."""
from __future__ import annotations

import functools
import logging
import os
import time
from collections import defaultdict

import trio

from minikafka.storage.config import LogConfig
from minikafka.storage.dynamic_config import ClientQuotaStore, DynamicConfigStore
from minikafka.storage.log_manager import LogManager
from minikafka.storage.security_store import AclStore, ScramCredentialStore
from minikafka.coordinator.internal_topics import OFFSETS_TOPIC, assignable_topics
from minikafka.coordinator.producer_ids import ProducerIdManager
from minikafka.coordinator.transaction import TransactionCoordinator
from .config import ConfigError
from .connection_quotas import ConnectionQuotas
from .log_dirs import LogDirMover
from minikafka.storage.checkpoint import META_PROPERTIES
from .features import TRANSACTION_VERSION, FinalizedFeatures
from .fetch_session import FetchManager
from .memory_pool import MemoryPool
from .security.authorizer import AclBinding, Authorizer, parse_super_users
from .scheduler import Periodic, Service
from .pending_answers import PendingAnswers
from .replica_manager import ReplicaManager
from .topics import TopicManager
from .transaction_runtime import TransactionRuntime

log = logging.getLogger("minikafka.broker")

# how often the group coordinator's timers (sessions, rebalance and join delays, offset
# expiry) are checked: their resolution
GROUP_TIMERS_PERIOD_MS = 50


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
        self.logs = LogManager(config["log.dirs"], self.default_log_config, node_id=self.node_id)
        self.topics = TopicManager(self.logs, config)
        self.replicas = ReplicaManager(self.logs, self.topics, config)
        self.log_dir_mover = LogDirMover(self)  # partition moves between log dirs (AlterReplicaLogDirs)
        self.advertised: dict[str, tuple[str, int]] = {}
        self.authorizer = None  # security.authorizer.Authorizer when authorizer.class.name is set
        self.listeners: dict = {}  # name -> broker.security.listener.Listener, once bound
        self.listening: list[str] = []  # "NAME://host:port" of each bound listener (the ready line's)
        # broker.quotas.QuotaManagers, made when the first client quota is stored (none: nothing
        # is counted, as Kafka's quota managers record nothing until a quota exists)
        self.quotas = None
        # security.delegation_tokens.DelegationTokenManager, with delegation.token.secret.key set
        self.tokens = None
        self.producer_ids = None  # ProducerIdManager, created in load() once log.dirs exists
        self.txn_coordinator = None
        self.transactions = None  # TransactionRuntime: runs the transaction coordinator's results
        self.features = None  # FinalizedFeatures (transaction.version, ...), read or made in load()
        self._group_coordinator = None  # GroupCoordinatorShard: see group_coordinator
        self.log_cleaner = None  # LogCleaner for compacted topics, created by its first round
        # incremental fetch sessions (KIP-227), in memory only, as Kafka's
        self.pending_answers = PendingAnswers()  # JoinGroup/SyncGroup answers the group coordinator gives later
        self.fetch_manager = FetchManager(config["max.incremental.fetch.session.cache.slots"], now_ms)

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
        self.client_quotas = ClientQuotaStore(self.config.log_dir)
        if self.config["delegation.token.secret.key"]:
            from .security.delegation_tokens import DelegationTokenManager
            self.tokens = DelegationTokenManager(self.config, self.config.log_dir, now_ms)
        if self.client_quotas.entities:
            self._quota_managers()
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
        self.transactions = TransactionRuntime(self.txn_coordinator, self.replicas, self.topics)
        self.replicas.transactions = self.transactions
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
        coordinator = GroupCoordinatorShard(GroupConfig.from_broker_config(cfg),
                                            LogOffsetsStore(self.logs, *self.topics.internal_topic(OFFSETS_TOPIC)),
                                            topics=functools.partial(assignable_topics, self.logs),
                                            group_configs=self.dynamic_configs.group)
        coordinator.load(now_ms())
        self.replicas.group_coordinator = coordinator  # told when a transaction completes on its partitions
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
            Service("log-flusher", self.replicas.flusher),
            Service("log-dir-mover", self.log_dir_mover.run),   # AlterReplicaLogDirs' moves
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
                     self.replicas.flush_dirty_logs, delay),
            Periodic("log.flush.offset.checkpoint.interval.ms", cfg["log.flush.offset.checkpoint.interval.ms"],
                     self._checkpoint, delay),
            # client quota rates unused for an hour are dropped (Kafka's sensor expiry)
            Periodic("client-quota-sensor-expiry", 60000, self._expire_quota_sensors),
        ]
        if self.tokens is not None:
            tasks.append(Periodic("delegation.token.expiry.check.interval.ms",
                                  cfg["delegation.token.expiry.check.interval.ms"], self._expire_tokens))
        if cfg["log.cleaner.enable"]:
            tasks.append(Periodic("log.cleaner.backoff.ms", max(cfg["log.cleaner.backoff.ms"], 10), self._clean_logs))
        return tasks

    async def _retention(self) -> None:
        deleted = self.logs.cleanup(now_ms())
        if deleted:
            log.info("retention deleted %d segment(s)", deleted)
        self.replicas.notify_if_appended()  # (a log whose every segment went rolled an empty one: its fsync)

    async def _checkpoint(self) -> None:
        await trio.to_thread.run_sync(self.logs.checkpoint)

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
            self.after_work()

    async def _expire_producers(self) -> None:
        self.logs.expire_producers(now_ms(), self.config["producer.id.expiration.ms"])

    def after_work(self) -> None:
        """Once a request or a background task is done, what it did below the broker is looked
        at (nothing below calls up): appends the group coordinator made through the storage
        layer wake the long-polling fetches (and the fsyncs they asked for, the flusher), and
        the group answers it gave wake their connections."""
        self.replicas.notify_if_appended()
        self.pending_answers.check()

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

    # ------------------------------------------------------------ client quotas
    def _quota_managers(self):
        if self.quotas is None:
            from .quotas import QuotaManagers
            self.quotas = QuotaManagers(self.config["quota.window.num"], self.config["quota.window.size.seconds"])
            for key, values in self.client_quotas.entities.items():
                self.quotas.apply(dict(key), {}, values)
        return self.quotas

    async def _expire_tokens(self) -> None:
        self.tokens.expire_tokens()

    async def _expire_quota_sensors(self) -> None:
        if self.quotas is not None:
            from .quotas import quota_now_ms
            self.quotas.expire(quota_now_ms())

    def alter_client_quotas(self, changed: dict, addresses: dict) -> None:
        """Store the changed entities' quotas (entity key -> quotas), then apply them.
        ``addresses``: what each ip entity's name resolved to."""
        managers = self._quota_managers()
        entities = dict(self.client_quotas.entities)
        old = {key: entities.get(key, {}) for key in changed}
        entities.update(changed)
        self.client_quotas.save(entities)
        for key, values in changed.items():
            managers.apply(dict(key), old[key], values, addresses.get)

    def advertised_address(self, listener_name: str) -> tuple[str, int]:
        return self.advertised.get(listener_name) or next(iter(self.advertised.values()))

    def alter_dynamic_config(self, name: str, overrides: dict[str, str], validate_only: bool) -> None:
        """Replace the dynamic broker configs of resource `name` ("" or this node's id): checked
        by the same rules as the properties file, stored, then applied without a restart."""
        dynamic = {k: dict(v) for k, v in self.dynamic_configs.broker.items()}
        dynamic[name] = dict(overrides)
        new = self.config.static.with_dynamic(dynamic)  # ConfigError
        if validate_only:
            return
        self.dynamic_configs.set_broker(name, overrides)
        self.config = self.topics.config = self.replicas.config = new
        self.default_log_config = LogConfig.from_broker_properties(new.raw)
        self.logs.set_default_config(self.default_log_config)
        log.info("dynamic broker configs of %s now %s", repr(name), overrides)
