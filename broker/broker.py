"""The Broker: the composition root. It builds the parts (the logs, the TopicManager and the
ReplicaManager over them, the coordinators and their runtime, the authorizer, the configs),
wires them, lists the background work, and holds them for the handlers; the work itself is
the parts'."""
from __future__ import annotations

import functools
import logging
import os

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
from .context import Context, Metrics, now_ms
from .pending_answers import PendingAnswers
from .replica_manager import ReplicaManager
from .topics import TopicManager
from .transaction_runtime import TransactionRuntime

log = logging.getLogger("minikafka.broker")

# how often the group coordinator's timers (sessions, rebalance and join delays, offset
# expiry) are checked: their resolution
GROUP_TIMERS_PERIOD_MS = 50


class Broker:
    """Builds the parts, loads them from the log dirs, lists the background work and closes the
    logs; it holds the storage (to load, clean, checkpoint and close) and the Context the
    requests are served with (broker/context.py), nothing else."""

    def __init__(self, config):
        # GROUP configs and dynamic broker configs (AlterConfigs), kept in the log dir
        dynamic_configs = DynamicConfigStore(config.log_dir)
        try:
            config = config.with_dynamic(dynamic_configs.broker) if dynamic_configs.broker else config
        except ConfigError as e:
            log.warning("dynamic broker configs not applied: %s", e)
        self.logs = LogManager(config["log.dirs"], LogConfig.from_broker_properties(config.raw), node_id=config.node_id)
        topics = TopicManager(self.logs, config)
        replicas = ReplicaManager(self.logs, topics, config)
        self.ctx = Context(
            config, metrics=Metrics(), memory_pool=MemoryPool(config["queued.max.request.bytes"]),
            connection_quotas=ConnectionQuotas(config, config.listeners), topics=topics, replicas=replicas,
            log_dirs=LogDirMover(self.logs, replicas, dynamic_configs, config.node_id),
            fetch_manager=FetchManager(config["max.incremental.fetch.session.cache.slots"], now_ms),
            pending_answers=PendingAnswers(), dynamic_configs=dynamic_configs)
        self.log_cleaner = None  # LogCleaner for compacted topics, created by its first round

    @property
    def config(self):
        return self.ctx.config

    # ------------------------------------------------------------ lifecycle
    def load(self, trace=None) -> None:
        ctx = self.ctx
        in_use = os.path.exists(os.path.join(self.config.log_dir, META_PROPERTIES))
        self.logs.load()
        if trace is not None:
            trace.mark("logs")
        ctx.features = FinalizedFeatures.load(self.config.log_dir)
        if ctx.features is None:
            if in_use:
                # a data dir of a minikafka from before finalized features: it ran transactions
                # V1, and an upgraded Kafka also keeps its levels until `kafka-features upgrade`
                ctx.features = FinalizedFeatures.format(self.config.log_dir, {TRANSACTION_VERSION: 1})
                log.info("Data dir %s has no finalized features yet: finalized %s (raise them with "
                         "`minikafka features upgrade --feature transaction.version=2`)",
                         self.config.log_dir, ctx.features.describe_levels())
            else:
                ctx.features = FinalizedFeatures.format(self.config.log_dir)
                log.info("Formatted %s with the default finalized features: %s", self.config.log_dir,
                         ctx.features.describe_levels())
        ctx.producer_ids = ProducerIdManager(self.config.log_dir)
        ctx.scram_credentials = ScramCredentialStore(self.config.log_dir)
        ctx.client_quotas = ClientQuotaStore(self.config.log_dir)
        if self.config["delegation.token.secret.key"]:
            from .security.delegation_tokens import DelegationTokenManager
            ctx.tokens = DelegationTokenManager(self.config, self.config.log_dir, now_ms)
        if ctx.client_quotas.entities:
            ctx.quota_managers()
        if self.config["authorizer.class.name"]:
            ctx.acl_store = AclStore(self.config.log_dir)
            ctx.authorizer = Authorizer((AclBinding(*row) for row in ctx.acl_store.rows),
                                        parse_super_users(self.config["super.users"]),
                                        self.config["allow.everyone.if.no.acl.found"])
        cfg = self.config
        ctx.txn_coordinator = TransactionCoordinator(
            ctx.producer_ids,
            num_partitions=cfg["transaction.state.log.num.partitions"],
            max_timeout_ms=cfg["transaction.max.timeout.ms"],
            id_expiration_ms=cfg["transactional.id.expiration.ms"],
            offsets_partitions=cfg["offsets.topic.num.partitions"],
            two_phase_commit=cfg["transaction.two.phase.commit.enable"],
            transaction_version=ctx.features.transaction_version,
        )
        ctx.transactions = TransactionRuntime(ctx.txn_coordinator, ctx.replicas, ctx.topics)
        ctx.replicas.transactions = ctx.transactions
        ctx.transactions.load()
        ctx.load_group_coordinator = self._load_group_coordinator
        if OFFSETS_TOPIC in self.logs.topics():
            ctx.loaded_group_coordinator = self._load_group_coordinator()
        if trace is not None:
            trace.mark("coordinators")

    def _load_group_coordinator(self):
        from minikafka.coordinator.group import GroupConfig, GroupCoordinatorShard, LogOffsetsStore
        cfg = self.config
        coordinator = GroupCoordinatorShard(GroupConfig.from_broker_config(cfg),
                                            LogOffsetsStore(self.logs, *self.ctx.topics.internal_topic(OFFSETS_TOPIC)),
                                            topics=functools.partial(assignable_topics, self.logs),
                                            group_configs=self.ctx.dynamic_configs.group)
        coordinator.load(now_ms())
        self.ctx.replicas.group_coordinator = coordinator  # told when a transaction completes on its partitions
        return coordinator

    def background_tasks(self) -> list:
        """The background work (broker/scheduler.py): the marker writer (transactions decided
        before a restart first), the group coordinator's timers, transaction timeouts and
        expiry, producer-state expiry, retention, the log flusher and the recovery-point
        checkpoint (Kafka's LogManager tasks, first after log.initial.task.delay.ms; the
        checkpoint only bounds recovery work), the flusher of the fsyncs logs ask for, and log
        cleaning. Each period is the Kafka setting named."""
        cfg, ctx = self.config, self.ctx
        delay = cfg["log.initial.task.delay.ms"]
        tasks = [
            Service("transaction-marker-writer", ctx.transactions.write_markers_forever),
            Service("log-flusher", ctx.replicas.flusher),
            Service("log-dir-mover", ctx.log_dirs.run),   # AlterReplicaLogDirs' moves
            Periodic("group-coordinator-timers", GROUP_TIMERS_PERIOD_MS, self._tick_groups, first_delay_ms=0),
            Periodic("transaction.abort.timed.out.transaction.cleanup.interval.ms",
                     cfg["transaction.abort.timed.out.transaction.cleanup.interval.ms"],
                     ctx.transactions.abort_timed_out),
            Periodic("transaction.remove.expired.transaction.cleanup.interval.ms",
                     cfg["transaction.remove.expired.transaction.cleanup.interval.ms"],
                     ctx.transactions.expire_transactional_ids),
            Periodic("producer.id.expiration.check.interval.ms", cfg["producer.id.expiration.check.interval.ms"],
                     self._expire_producers),
            Periodic("log.retention.check.interval.ms", cfg["log.retention.check.interval.ms"], self._retention),
            Periodic("log.flush.scheduler.interval.ms", cfg["log.flush.scheduler.interval.ms"],
                     ctx.replicas.flush_dirty_logs, delay),
            Periodic("log.flush.offset.checkpoint.interval.ms", cfg["log.flush.offset.checkpoint.interval.ms"],
                     self._checkpoint, delay),
            # client quota rates unused for an hour are dropped (Kafka's sensor expiry)
            Periodic("client-quota-sensor-expiry", 60000, self._expire_quota_sensors),
        ]
        if ctx.tokens is not None:
            tasks.append(Periodic("delegation.token.expiry.check.interval.ms",
                                  cfg["delegation.token.expiry.check.interval.ms"], self._expire_tokens))
        if cfg["log.cleaner.enable"]:
            tasks.append(Periodic("log.cleaner.backoff.ms", max(cfg["log.cleaner.backoff.ms"], 10), self._clean_logs))
        return tasks

    async def _retention(self) -> None:
        deleted = self.logs.cleanup(now_ms())
        if deleted:
            log.info("retention deleted %d segment(s)", deleted)
        self.ctx.replicas.notify_if_appended()  # (a log whose every segment went rolled an empty one: its fsync)

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
        groups = self.ctx.loaded_group_coordinator
        if groups is not None:
            groups.tick(now_ms())
            self.ctx.after_work()

    async def _expire_producers(self) -> None:
        self.logs.expire_producers(now_ms(), self.config["producer.id.expiration.ms"])

    def close(self) -> None:
        self.logs.close()

    async def _expire_tokens(self) -> None:
        self.ctx.tokens.expire_tokens()

    async def _expire_quota_sensors(self) -> None:
        if self.ctx.quotas is not None:
            from .quotas import quota_now_ms
            self.ctx.quotas.expire(quota_now_ms())
