"""What a request is served with: the broker's parts, never the Broker itself (whose work is to
build, load and start them, broker/broker.py). Kafka's KafkaApis is handed the same kind of
things: the ReplicaManager, the coordinators, the metadata cache, the authorizer, the quota
managers. Handlers and the server reach it as ``conn.ctx``.

Storage is not in it: a handler reaches a partition's log through the ReplicaManager
(``ctx.replicas``), topics through the TopicManager (``ctx.topics``) and log dirs through the
LogDirMover (``ctx.log_dirs``). The few changes that span parts (dynamic configs, ACLs, client
quotas) are its methods; each stores durably first, then applies.
"""
from __future__ import annotations

import logging
import time
from collections import defaultdict
from typing import Callable

from minikafka.storage.config import LogConfig

log = logging.getLogger("minikafka.broker")


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


class Context:
    def __init__(self, config, *, metrics, memory_pool, connection_quotas, topics, replicas, log_dirs,
                 fetch_manager, pending_answers, dynamic_configs):
        self.node_id: int = config.node_id
        self.config = config  # the broker's, replaced when dynamic broker configs change
        # the server's: counters, the request memory pool, connection limits, open connections
        self.metrics = metrics
        self.memory_pool = memory_pool
        self.connection_quotas = connection_quotas
        self.connections: set = set()
        # this node as clients see it, filled in as the listeners are bound (broker/main.py)
        self.listeners: dict = {}  # name -> broker.security.listener.Listener
        self.advertised: dict[str, tuple[str, int]] = {}  # name -> advertised (host, port)
        self.listening: list[str] = []  # "NAME://host:port" of each bound listener (the ready line's)
        self.topics = topics  # TopicManager
        self.replicas = replicas  # ReplicaManager: every append, every partition's log
        self.log_dirs = log_dirs  # LogDirMover: the log dirs and moves between them (AlterReplicaLogDirs)
        self.fetch_manager = fetch_manager  # incremental fetch sessions (KIP-227), in memory as Kafka's
        self.pending_answers = pending_answers  # JoinGroup/SyncGroup answers the group coordinator gives later
        self.dynamic_configs = dynamic_configs  # GROUP configs and dynamic broker configs (DynamicConfigStore)
        # set by Broker.load():
        self.features = None  # FinalizedFeatures (transaction.version, group.version, ...)
        self.txn_coordinator = None  # TransactionCoordinator (Describe/ListTransactions read it)
        self.transactions = None  # TransactionRuntime: runs the transaction coordinator's results
        self.producer_ids = None  # ProducerIdManager
        self.authorizer = None  # security.authorizer.Authorizer when authorizer.class.name is set
        self.acl_store = None  # its bindings on disk (AclStore)
        self.scram_credentials = None  # ScramCredentialStore
        self.client_quotas = None  # ClientQuotaStore: the quotas stored
        # broker.quotas.QuotaManagers, made when the first client quota is stored (none: nothing
        # is counted, as Kafka's quota managers record nothing until a quota exists)
        self.quotas = None
        self.tokens = None  # security.delegation_tokens.DelegationTokenManager, with delegation.token.secret.key
        self.load_group_coordinator: Callable | None = None
        self.loaded_group_coordinator = None  # GroupCoordinatorShard once made (group_coordinator)

    @property
    def group_coordinator(self):
        """The group coordinator (consumer groups, committed offsets). Made at load when
        __consumer_offsets exists, its groups and offsets rebuilt from it; else on first use
        (a group request, a transactional offset commit, a deleted topic): it then starts from
        the same (empty) log. Until then a start need not import its code. Code that only reacts to the log (markers, timers) uses loaded_group_coordinator:
        while it does not exist, what it would react to is in the log it will load."""
        if self.loaded_group_coordinator is None:
            self.loaded_group_coordinator = self.load_group_coordinator()
        return self.loaded_group_coordinator

    def advertised_address(self, listener_name: str) -> tuple[str, int]:
        """(host, port) clients are told to reach this node at on that listener."""
        return self.advertised.get(listener_name) or next(iter(self.advertised.values()))

    def after_work(self) -> None:
        """Once a request or a background task is done, what it did below the broker is looked
        at (nothing below calls up): appends the group coordinator made through the storage
        layer wake the long-polling fetches (and the fsyncs they asked for, the flusher), and
        the group answers it gave wake their connections."""
        self.replicas.notify_if_appended()
        self.pending_answers.check()

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
    def quota_managers(self):
        """The quota managers, made with the stored quotas applied when first needed."""
        if self.quotas is None:
            from .quotas import QuotaManagers
            self.quotas = QuotaManagers(self.config["quota.window.num"], self.config["quota.window.size.seconds"])
            for key, values in self.client_quotas.entities.items():
                self.quotas.apply(dict(key), {}, values)
        return self.quotas

    def alter_client_quotas(self, changed: dict, addresses: dict) -> None:
        """Store the changed entities' quotas (entity key -> quotas), then apply them.
        ``addresses``: what each ip entity's name resolved to."""
        managers = self.quota_managers()
        entities = dict(self.client_quotas.entities)
        old = {key: entities.get(key, {}) for key in changed}
        entities.update(changed)
        self.client_quotas.save(entities)
        for key, values in changed.items():
            managers.apply(dict(key), old[key], values, addresses.get)

    # ------------------------------------------------------------ dynamic broker configs
    def alter_dynamic_config(self, name: str, overrides: dict[str, str], validate_only: bool) -> None:
        """Replace the dynamic broker configs of resource `name` ("" or this node's id): checked
        by the same rules as the properties file, stored, then applied without a restart."""
        dynamic = {k: dict(v) for k, v in self.dynamic_configs.broker.items()}
        dynamic[name] = dict(overrides)
        new = self.config.static.with_dynamic(dynamic)  # ConfigError
        if validate_only:
            return
        self.dynamic_configs.set_broker(name, overrides)
        self.config = self.replicas.config = new
        self.topics.reconfigure(new, LogConfig.from_broker_properties(new.raw))
        log.info("dynamic broker configs of %s now %s", repr(name), overrides)
