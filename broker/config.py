"""Broker configuration: Kafka's property names, Kafka's defaults, validated at start.

Sources, later wins: built-in defaults < properties file (--config) < --override.
Unknown keys are warned about (Kafka does the same); invalid values refuse to
start with a message naming the key.
"""
from __future__ import annotations

import ipaddress
import logging
import re
import socket

from minikafka.protocol.errors import KafkaError
from minikafka.storage.config import LogConfig
from .security.listener import SecurityConfigError
from .security.listeners import build_listeners

log = logging.getLogger("minikafka.config")

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1


class ConfigError(ValueError):
    pass


def _bool(v: str) -> bool:
    s = v.strip().lower()
    if s not in ("true", "false"):
        raise ValueError("Expected value to be either true or false")
    return s == "true"


def _int(v: str) -> int:
    try:
        return int(v)
    except ValueError:
        raise ValueError("Not a number of type LONG") from None


def _float(v: str) -> float:
    try:
        return float(v)
    except ValueError:
        raise ValueError("Not a number of type DOUBLE") from None


def _list(v: str) -> list[str]:
    return [x.strip() for x in v.split(",") if x.strip()]


def is_list_config(key: str) -> bool:
    """Is the property a comma-separated list (IncrementalAlterConfigs APPEND/SUBTRACT take only those)?"""
    d = DEFS.get(key)
    return d is not None and d[0] is _list


# Reasons as Kafka's ConfigDef validators word them.
def _at_least(lo):
    def check(v):
        if v < lo:
            raise ValueError(f"Value must be at least {lo}")
    return check


def _between(lo, hi):
    def check(v):
        if v < lo:
            raise ValueError(f"Value must be at least {lo}")
        if v > hi:
            raise ValueError(f"Value must be no more than {hi}")
    return check


def _one_of(*choices):
    def check(v):
        if v not in choices:
            kind = "String" if isinstance(v, str) else "Value"
            raise ValueError(f"{kind} must be one of: {', '.join(map(str, choices))}")
    return check


def _one_of_ignoring_case(*choices):
    """Kafka's ConfigDef.CaseInsensitiveValidString."""
    def check(v):
        if v.lower() not in choices:
            raise ValueError(f"String must be one of (case insensitive): {', '.join(choices).upper()}")
    return check


def parse_metrics_listener(text: str) -> tuple[str, int]:
    """``metrics.listener``: '[http://]host:port' -> (host, port); an empty host means all interfaces."""
    text = text.strip().removeprefix("http://")
    host, colon, port = text.rpartition(":")
    if not colon or not port.isdigit() or int(port) > 65535:
        raise ValueError("Expected host:port (port 0-65535), or nothing to disable the endpoint")
    return host.strip("[]") or "0.0.0.0", int(port)


def _metrics_listener(v: str) -> None:
    if v.strip():
        parse_metrics_listener(v)


def parse_ip_overrides(text: str) -> dict[str, int]:
    """``max.connections.per.ip.overrides`` ('host:count,host:count', Kafka's Csv.parseCsvMap):
    {address: count}, each host resolved once, as Kafka's InetAddress.getByName. ValueError
    naming what is wrong."""
    out: dict[str, int] = {}
    for item in (x.strip() for x in text.split(",")):
        if not item:
            continue
        host, colon, count = item.rpartition(":")
        host = host.strip().strip("[]")
        if not colon or not host:
            raise ValueError(f"'{item}' is not of the form host:count")
        try:
            n = int(count.strip())
        except ValueError:
            raise ValueError(f'For input string: "{count.strip()}"') from None
        try:
            address = str(ipaddress.ip_address(host))
        except ValueError:
            try:
                address = socket.getaddrinfo(host, None)[0][4][0]
            except (OSError, UnicodeError):
                raise ValueError(f"contains invalid addresses : {host}") from None
        out[address] = n
    return out


def _ip_overrides(v: str) -> None:
    parse_ip_overrides(v)


# key -> (parser, default, validator or None, doc). Defaults are Apache Kafka's
# unless the doc says otherwise.
DEFS: dict[str, tuple] = {
    "node.id": (_int, 1, _at_least(0), "Id of this broker (broker.id is an alias)"),
    "listeners": (_list, ["PLAINTEXT://127.0.0.1:9092"], None, "Addresses to listen on; port 0 picks a free port"),
    "advertised.listeners": (_list, None, None, "Addresses given to clients in Metadata (defaults to listeners)"),
    "listener.security.protocol.map": (_list, ["PLAINTEXT:PLAINTEXT", "SSL:SSL", "SASL_PLAINTEXT:SASL_PLAINTEXT", "SASL_SSL:SASL_SSL"], None,
                                       "Listener name to security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)"),
    "log.dirs": (_list, ["./data"], None, "Data directories (log.dir is an alias); the first one also holds the broker's metadata"),
    "num.partitions": (_int, 1, _at_least(1), "Partitions of auto-created topics"),
    "default.replication.factor": (_int, 1, _one_of(1), "Single node: only 1"),
    "auto.create.topics.enable": (_bool, True, None, "Create unknown topics on Metadata requests"),
    "delete.topic.enable": (_bool, True, None, "Allow DeleteTopics"),
    "log.segment.bytes": (_int, 1073741824, _at_least(14), "Segment size before a roll"),
    "log.roll.ms": (_int, 604800000, _at_least(1), "Segment age before a roll (log.roll.hours also accepted)"),
    "log.retention.ms": (_int, 604800000, None, "Delete segments older than this; -1 keeps forever (also .minutes/.hours)"),
    "log.retention.bytes": (_int, -1, None, "Delete oldest segments past this size per partition; -1 unlimited"),
    "log.retention.check.interval.ms": (_int, 300000, _at_least(1), "How often retention runs"),
    "log.flush.interval.messages": (_int, LONG_MAX, _at_least(1), "Default flush.messages: fsync a partition once this many messages are unflushed, before the produce that reached it is answered"),
    "log.flush.interval.ms": (_int, None, _at_least(0), "Default flush.ms: fsync a partition this long after its last fsync (unset: log.flush.scheduler.interval.ms)"),
    "log.flush.scheduler.interval.ms": (_int, LONG_MAX, _at_least(1), "How often the log flusher checks flush.ms (its first check is log.initial.task.delay.ms after start)"),
    "log.flush.offset.checkpoint.interval.ms": (_int, 60000, _at_least(0), "How often recovery-point-offset-checkpoint is written (where recovery after a crash starts)"),
    "log.flush.start.offset.checkpoint.interval.ms": (_int, 60000, _at_least(0), "Accepted for Kafka compatibility: log-start-offset-checkpoint is written at once on every change"),
    "log.initial.task.delay.ms": (_int, 30000, _at_least(0), "Delay before the first run of the log flusher and of the checkpoint writer (Kafka's internal key)"),
    "log.index.interval.bytes": (_int, 4096, _at_least(0), "Bytes between offset index entries"),
    "log.message.timestamp.type": (str, "CreateTime", _one_of("CreateTime", "LogAppendTime"), "Timestamp type of new topics"),
    "log.cleanup.policy": (_list, ["delete"], None, "delete and/or compact"),
    "log.cleaner.enable": (_bool, True, None, "Run the log cleaner (compaction of cleanup.policy=compact topics)"),
    "log.cleaner.backoff.ms": (_int, 15000, _at_least(0), "Pause between log cleaner rounds (each cleans at most one partition)"),
    "log.cleaner.min.cleanable.ratio": (_float, 0.5, _between(0, 1), "Default min.cleanable.dirty.ratio: dirty/total bytes above which a log is cleaned"),
    "log.cleaner.delete.retention.ms": (_int, 86400000, _at_least(0), "Default delete.retention.ms: how long tombstones and empty transaction markers survive cleaning"),
    "log.cleaner.min.compaction.lag.ms": (_int, 0, _at_least(0), "Default min.compaction.lag.ms: records younger than this are not compacted"),
    "log.cleaner.max.compaction.lag.ms": (_int, LONG_MAX, _at_least(1), "Default max.compaction.lag.ms: dirty records older than this force a cleaning"),
    "log.cleaner.dedupe.buffer.size": (_int, 134217728, _at_least(1024), "Memory for the cleaner's key map (24 bytes a key, as in Kafka); bounds the keys per round"),
    "message.max.bytes": (_int, 1048588, _at_least(0), "Largest record batch accepted"),
    "socket.request.max.bytes": (_int, 104857600, _at_least(1), "Largest request frame accepted"),
    "connections.max.idle.ms": (_int, 600000, None, "Close a connection with no I/O for this long (counted from its last bytes read or written; never while its request is handled); negative: never"),
    "queued.max.request.bytes": (_int, 104857600, None, "Memory for requests being read or waiting, in total (minikafka's default bounds it; Kafka's -1, unbounded, is accepted): when used up, large requests are not read until memory is freed. At least socket.request.max.bytes; unset, it follows socket.request.max.bytes if that is larger"),
    "max.connections": (_int, INT_MAX, _at_least(0), "Connections the broker accepts at once; at the limit new ones wait (also per listener: listener.name.<l>.max.connections)"),
    "max.connections.per.ip": (_int, INT_MAX, _at_least(0), "Connections one address may have; past it a new one is closed at once"),
    "max.connections.per.ip.overrides": (str, "", _ip_overrides, "Per-address limits, host:count,host:count"),
    "max.connection.creation.rate": (_int, INT_MAX, _at_least(0), "New connections per second the broker accepts; past it accepting is delayed (also per listener: listener.name.<l>.max.connection.creation.rate)"),
    "fetch.max.bytes": (_int, 57671680, _at_least(1024), "Most bytes a Fetch answers, whatever its max_bytes asks (the first batch still comes whole)"),
    "max.incremental.fetch.session.cache.slots": (_int, 1000, _at_least(0), "Incremental fetch sessions (KIP-227) kept at once, over 8 shards of slots/8 each; 0 (or below 8) disables them"),
    "compression.type": (str, "producer", None, "Topic compression (producer keeps what the producer sent)"),
    "offsets.topic.num.partitions": (_int, 50, _at_least(1), "Partitions of __consumer_offsets"),
    "offsets.topic.segment.bytes": (_int, 104857600, _at_least(14), "segment.bytes of __consumer_offsets (small segments compact sooner)"),
    "offsets.retention.minutes": (_int, 10080, _at_least(1), "Committed offsets of empty groups expire after this"),
    "offsets.retention.check.interval.ms": (_int, 600000, _at_least(1), "How often expired offsets are removed"),
    "group.initial.rebalance.delay.ms": (_int, 3000, _at_least(0), "Wait for more members before the first rebalance"),
    "group.min.session.timeout.ms": (_int, 6000, _at_least(0), "Smallest session timeout a member may ask for"),
    "group.max.session.timeout.ms": (_int, 1800000, _at_least(0), "Largest session timeout a member may ask for"),
    "group.coordinator.rebalance.protocols": (_list, ["classic", "consumer", "streams"], None, "Group protocols served: classic (JoinGroup/SyncGroup) and consumer (KIP-848 ConsumerGroupHeartbeat); streams is accepted, not served"),
    "group.consumer.heartbeat.interval.ms": (_int, 5000, _at_least(1), "KIP-848: heartbeat interval given to consumer-protocol members (GROUP config consumer.heartbeat.interval.ms overrides it)"),
    "group.consumer.min.heartbeat.interval.ms": (_int, 5000, _at_least(1), "Smallest consumer.heartbeat.interval.ms a group may set"),
    "group.consumer.max.heartbeat.interval.ms": (_int, 15000, _at_least(1), "Largest consumer.heartbeat.interval.ms a group may set"),
    "group.consumer.session.timeout.ms": (_int, 45000, _at_least(1), "KIP-848: a consumer-protocol member silent this long is removed (GROUP config consumer.session.timeout.ms overrides it)"),
    "group.consumer.min.session.timeout.ms": (_int, 45000, _at_least(1), "Smallest consumer.session.timeout.ms a group may set"),
    "group.consumer.max.session.timeout.ms": (_int, 60000, _at_least(1), "Largest consumer.session.timeout.ms a group may set"),
    "group.consumer.assignors": (_list, ["uniform", "range"], None, "Server-side assignors (the first is the default): uniform, range"),
    "group.consumer.max.size": (_int, 2147483647, _at_least(1), "Most members in one consumer-protocol group (GROUP_MAX_SIZE_REACHED past it)"),
    "group.consumer.migration.policy": (str, "bidirectional", _one_of_ignoring_case("disabled", "downgrade", "upgrade", "bidirectional"), "Online migration between the group protocols: upgrade lets a consumer-protocol member join a classic group (it becomes a consumer group), downgrade makes a consumer group whose last consumer-protocol member left a classic group again"),
    "transaction.state.log.num.partitions": (_int, 50, _at_least(1), "Partitions of __transaction_state"),
    "transaction.state.log.segment.bytes": (_int, 104857600, _at_least(14), "segment.bytes of __transaction_state (small segments compact sooner)"),
    "transaction.max.timeout.ms": (_int, 900000, _at_least(1), "Largest transaction timeout a producer may ask for"),
    "transactional.id.expiration.ms": (_int, 604800000, _at_least(1), "Idle transactional ids are removed after this"),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": (_int, 10000, _at_least(1), "How often timed-out transactions are aborted"),
    "transaction.remove.expired.transaction.cleanup.interval.ms": (_int, 3600000, _at_least(1), "How often expired transactional ids are removed"),
    "transaction.partition.verification.enable": (_bool, True, None, "Refuse transactional writes to partitions not added to the transaction"),
    "transaction.two.phase.commit.enable": (_bool, False, None, "Allow two-phase-commit transactions with an external coordinator (KIP-939: InitProducerId v6 enable_2pc, no timeout); keep_prepared_txn is refused as in Kafka 4.1"),
    "producer.id.expiration.ms": (_int, 86400000, _at_least(1), "Idle producer state is dropped after this"),
    "producer.id.expiration.check.interval.ms": (_int, 600000, _at_least(1), "How often idle producer state is dropped"),
    "unstable.api.versions.enable": (_bool, False, None, "Advertise API versions Kafka marks unstable"),
    # --- security (broker/security/): each also per listener as listener.name.<name>.<key>
    "ssl.keystore.type": (str, "JKS", None, "Key store format: PEM or PKCS12 (Kafka's default JKS is refused)"),
    "ssl.keystore.location": (str, None, None, "PEM file with the private key and the certificate chain"),
    "ssl.keystore.certificate.chain": (str, None, None, "Inline PEM certificate chain (with ssl.keystore.key)"),
    "ssl.keystore.key": (str, None, None, "Inline PEM private key (with ssl.keystore.certificate.chain)"),
    "ssl.key.password": (str, None, None, "Password of an encrypted PEM private key"),
    "ssl.keystore.password": (str, None, None, "Password of a PKCS12 key store (not allowed with PEM: use ssl.key.password)"),
    "ssl.truststore.type": (str, "JKS", None, "Trust store format: PEM or PKCS12"),
    "ssl.truststore.location": (str, None, None, "PEM file of CA certificates trusted for client certificates"),
    "ssl.truststore.certificates": (str, None, None, "Inline PEM CA certificates"),
    "ssl.truststore.password": (str, None, None, "Password of a PKCS12 trust store (not allowed with PEM)"),
    "ssl.client.auth": (str, "none", None, "Client certificates: required, requested or none"),
    "ssl.enabled.protocols": (str, "TLSv1.2,TLSv1.3", None, "TLS versions served (TLSv1.2, TLSv1.3 only)"),
    "ssl.protocol": (str, "TLSv1.3", None, "Accepted for Kafka compatibility (ssl.enabled.protocols decides)"),
    "ssl.principal.mapping.rules": (str, "DEFAULT", None, "Principal of a TLS client from its certificate's DN: RULE:pattern/replacement/[LU] rules, then DEFAULT (the DN)"),
    "ssl.endpoint.identification.algorithm": (str, "https", None, "Accepted for Kafka compatibility: a client-side check"),
    "sasl.enabled.mechanisms": (str, "GSSAPI", None, "SASL mechanisms of SASL_* listeners: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (Kafka's default GSSAPI is refused)"),
    "authorizer.class.name": (str, "", _one_of("", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"),
                              "ACL authorization: org.apache.kafka.metadata.authorizer.StandardAuthorizer, or empty for none"),
    "super.users": (str, "", None, "Principals allowed everything, ';'-separated (User:admin;User:CN=ops,O=acme)"),
    "allow.everyone.if.no.acl.found": (_bool, False, None, "Allow a request on a resource no ACL names"),
    "connection.failed.authentication.delay.ms": (_int, 100, _at_least(0), "Delay before closing a connection whose authentication failed (its error response goes first)"),
    "connections.max.reauth.ms": (_int, 0, None, "Re-authentication (KIP-368) is not implemented: anything but 0 is refused"),
    "delegation.token.secret.key": (str, None, None, "Secret the delegation tokens' HMACs are made with; unset: delegation tokens are disabled"),
    "delegation.token.max.lifetime.ms": (_int, 604800000, _at_least(1), "Longest a delegation token lives, renewals included"),
    "delegation.token.expiry.time.ms": (_int, 86400000, _at_least(1), "How long a delegation token lives after its creation or renewal unless renewed"),
    "delegation.token.expiry.check.interval.ms": (_int, 3600000, _at_least(1), "How often expired delegation tokens are removed"),
    "quota.window.num": (_int, 11, _at_least(1), "Samples a client quota's rate is measured over"),
    "quota.window.size.seconds": (_int, 1, _at_least(1), "Time span of each sample of a client quota's rate"),
    "metrics.listener": (str, "", _metrics_listener, "host:port of the Prometheus metrics endpoint (minikafka); empty disables it"),
}

# Keys Kafka 4.1 lets AlterConfigs/IncrementalAlterConfigs change on a running broker
# (DynamicBrokerConfig; read_only=false in its DescribeConfigs) that minikafka applies at
# run time. Kafka's listeners and listener.security.protocol.map are dynamic too; here they
# are not (a listener is bound once).
DYNAMIC_BROKER_CONFIGS = frozenset({
    "compression.type", "log.cleaner.backoff.ms", "log.cleaner.dedupe.buffer.size",
    "log.cleaner.delete.retention.ms", "log.cleaner.max.compaction.lag.ms", "log.cleaner.min.cleanable.ratio",
    "log.cleaner.min.compaction.lag.ms", "log.cleanup.policy", "log.flush.interval.messages",
    "log.flush.interval.ms", "log.index.interval.bytes", "log.message.timestamp.type", "log.retention.bytes",
    "log.retention.ms", "log.roll.ms", "log.segment.bytes", "message.max.bytes", "producer.id.expiration.ms",
    "transaction.partition.verification.enable",
})

# Kafka's PASSWORD configs: described as sensitive (no value), never logged
SENSITIVE = frozenset({"delegation.token.secret.key", "ssl.key.password", "ssl.keystore.password",
                       "ssl.truststore.password"})

ALIASES = {"broker.id": "node.id", "log.dir": "log.dirs"}
# Alternative units Kafka accepts for the same setting: key -> (canonical key, factor to ms)
UNIT_ALIASES = {
    "log.retention.minutes": ("log.retention.ms", 60_000),
    "log.retention.hours": ("log.retention.ms", 3_600_000),
    "log.roll.hours": ("log.roll.ms", 3_600_000),
}
# Read by broker/security (per listener, and the keys refused when set), never warned about
SECURITY_PREFIXES = ("listener.name.", "ssl.", "sasl.", "principal.builder.class")
# Keys Kafka knows that a single-node broker accepts and ignores.
IGNORED = {
    "process.roles", "controller.quorum.voters", "controller.quorum.bootstrap.servers", "controller.listener.names",
    "inter.broker.listener.name", "num.network.threads", "num.io.threads", "socket.send.buffer.bytes",
    "socket.receive.buffer.bytes", "num.recovery.threads.per.data.dir", "offsets.topic.replication.factor",
    "transaction.state.log.replication.factor", "transaction.state.log.min.isr", "min.insync.replicas",
    "share.coordinator.state.topic.replication.factor", "share.coordinator.state.topic.min.isr",
    "zookeeper.connect", "unclean.leader.election.enable",
    "security.inter.broker.protocol", "sasl.mechanism.inter.broker.protocol", "sasl.mechanism.controller.protocol",
}


class BrokerConfig:
    def __init__(self, values: dict[str, object], originals: dict[str, str], raw: dict[str, str] | None = None):
        self._values = values
        # dynamic broker configs (AlterConfigs on BROKER): "" (cluster default) and this node's
        # id -> {key: text}; with_dynamic() makes the effective config, this one stays static
        self.dynamic: dict[str, dict[str, str]] = {}
        self.static: "BrokerConfig" = self
        self.originals = originals  # canonical keys the user set explicitly (for DescribeConfigs sources)
        self.raw = dict(raw or {})  # exactly what the user wrote (key -> text), aliases included

    def __getitem__(self, key):
        return self._values[key]

    def get(self, key, default=None):
        return self._values.get(key, default)

    def items(self):
        return self._values.items()

    @property
    def node_id(self) -> int:
        return self["node.id"]

    @property
    def log_dir(self) -> str:
        return self["log.dirs"][0]

    def with_dynamic(self, dynamic: dict[str, dict[str, str]]) -> "BrokerConfig":
        """The effective config: static properties, then the cluster-wide dynamic defaults,
        then this node's dynamic settings (Kafka's precedence). Raises ConfigError."""
        raw = dict(self.static.raw)
        for layer in (dynamic.get("", {}), dynamic.get(str(self.static.node_id), {})):
            raw.update({k: v for k, v in layer.items() if k in DYNAMIC_BROKER_CONFIGS})
        out = type(self).from_dict(raw)
        out.originals = self.static.originals
        out.raw = raw
        out.static = self.static
        out.dynamic = {k: dict(v) for k, v in dynamic.items()}
        return out

    @classmethod
    def load(cls, path: str | None = None, overrides: list[str] | dict | None = None) -> "BrokerConfig":
        raw: dict[str, str] = {}
        if path:
            raw.update(read_properties(path))
        if isinstance(overrides, dict):
            raw.update({k: str(v) for k, v in overrides.items()})
        else:
            for item in overrides or []:
                if "=" not in item:
                    raise ConfigError(f"--override expects key=value, got {item!r}")
                k, v = item.split("=", 1)
                raw[k.strip()] = v.strip()
        return cls.from_dict(raw)

    @classmethod
    def from_dict(cls, raw: dict[str, str]) -> "BrokerConfig":
        values = {k: d[1] for k, d in DEFS.items()}
        originals: dict[str, str] = {}
        for key, text in raw.items():
            canon, factor = ALIASES.get(key, key), 1
            if key in UNIT_ALIASES:
                canon, factor = UNIT_ALIASES[key]
                # an explicit .ms setting wins over the coarser units, as in Kafka
                if canon in raw:
                    continue
            if canon not in DEFS:
                if key not in IGNORED and not key.startswith(SECURITY_PREFIXES):
                    log.warning("unknown configuration key %r ignored", key)
                continue
            parser, _, check, _ = DEFS[canon]
            try:
                value = parser(text)
                if factor != 1:
                    value = value * factor if value >= 0 else value
                if check is not None:
                    check(value)
            except ValueError as e:
                raise ConfigError(f"Invalid value {text} for configuration {key}: {e}") from None
            values[canon] = value
            originals[canon] = text
        # Broker properties that set topic defaults (log.retention.ms, log.cleanup.policy,
        # compression.type, ...) are checked by the topic config's own rules, as Kafka's LogConfig.
        try:
            LogConfig.from_broker_properties(raw)
        except KafkaError as e:
            raise ConfigError(e.message) from None
        _check_group_consumer(values)
        _check_connections(values, originals)
        try:
            listeners, advertised = build_listeners(raw)
        except SecurityConfigError as e:
            raise ConfigError(str(e)) from None
        if values["advertised.listeners"] is None:
            values["advertised.listeners"] = list(values["listeners"])
        config = cls(values, originals, raw)
        config.listeners, config.advertised = listeners, advertised
        return config


def _check_connections(values: dict, originals: dict) -> None:
    """KafkaConfig's checks of the socket server settings (one line naming the key)."""
    v = values
    if "queued.max.request.bytes" not in originals:
        # minikafka's default bounds the pool, and follows a larger socket.request.max.bytes
        v["queued.max.request.bytes"] = max(v["queued.max.request.bytes"], v["socket.request.max.bytes"])
    if 0 < v["queued.max.request.bytes"] < v["socket.request.max.bytes"]:
        raise ConfigError("queued.max.request.bytes must be larger or equal to socket.request.max.bytes")
    if v["max.connections.per.ip"] == 0 and not parse_ip_overrides(v["max.connections.per.ip.overrides"]):
        raise ConfigError("max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides "
                          "property is set.")
    idle, delay = v["connections.max.idle.ms"], v["connection.failed.authentication.delay.ms"]
    if idle >= 0 and delay >= idle:
        raise ConfigError(f"connection.failed.authentication.delay.ms={delay} should always be less than "
                          f"connections.max.idle.ms={idle} to prevent failed authentication responses from timing out")


def _check_group_consumer(values: dict) -> None:
    """Kafka's GroupCoordinatorConfig checks of the KIP-848 settings (it refuses to start)."""
    v = values
    for key, lo, hi in (("group.consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms",
                         "group.consumer.max.session.timeout.ms"),
                        ("group.consumer.heartbeat.interval.ms", "group.consumer.min.heartbeat.interval.ms",
                         "group.consumer.max.heartbeat.interval.ms")):
        if v[key] < v[lo]:
            raise ConfigError(f"{key} must be greater than or equal to {lo}")
        if v[key] > v[hi]:
            raise ConfigError(f"{key} must be less than or equal to {hi}")
    if v["group.consumer.heartbeat.interval.ms"] >= v["group.consumer.session.timeout.ms"]:
        raise ConfigError("group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms")
    unknown = [a for a in v["group.consumer.assignors"] if a not in ("uniform", "range")]
    if unknown or not v["group.consumer.assignors"]:
        raise ConfigError(f"Invalid value {','.join(v['group.consumer.assignors'])} for configuration "
                          f"group.consumer.assignors: the assignors are uniform and range")
    protocols = [p for p in v["group.coordinator.rebalance.protocols"] if p not in ("classic", "consumer", "streams", "share")]
    if protocols or "classic" not in v["group.coordinator.rebalance.protocols"]:
        raise ConfigError("group.coordinator.rebalance.protocols must contain classic and only classic, consumer, "
                          "streams or share")


def read_properties(path: str) -> dict[str, str]:
    """Java .properties subset: key=value or key: value, # and ! comments, \\ continuations."""
    out: dict[str, str] = {}
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise ConfigError(f"cannot read config file {path}: {e}") from None
    pending = ""
    for line in lines:
        line = pending + line.strip()
        pending = ""
        if not line or line[0] in "#!":
            continue
        if line.endswith("\\"):
            pending = line[:-1]
            continue
        m = re.match(r"^([^=:\s]+)\s*[=:\s]\s*(.*)$", line)
        if not m:
            out[line] = ""
            continue
        out[m.group(1)] = m.group(2)
    return out
