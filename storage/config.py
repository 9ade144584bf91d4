"""Topic-level log configuration (Kafka's ``LogConfig``), with broker-level synonyms.

A :class:`LogConfig` holds every topic config under Kafka's names (attribute =
name with dots replaced by underscores: ``segment.bytes`` -> ``segment_bytes``).
It is built from Kafka's defaults, then broker properties
(:meth:`LogConfig.from_broker_properties`, e.g. ``log.retention.hours``), then
per-topic overrides (:meth:`LogConfig.with_overrides`). :func:`describe_configs`
produces DescribeConfigs entries (value, source, synonyms, type).

Deliberate deviation: ``segment.bytes`` accepts values down to 14 bytes
(Kafka 3.x's lower bound) rather than 4.x's 1 MiB, so tests can roll segments
quickly. ``internal.segment.bytes`` (Kafka's test-only override) is accepted too.
"""
from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, NamedTuple

from minikafka.protocol.errors import ErrorCode, KafkaError

LONG_MAX = 9223372036854775807
INT_MAX = 2147483647
INT_MIN = -2147483648
LONG_MIN = -9223372036854775808


class ConfigType(enum.IntEnum):
    """DescribeConfigs v3+ ``ConfigType`` values."""
    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class ConfigSource(enum.IntEnum):
    """DescribeConfigs v1+ ``ConfigSource`` values."""
    UNKNOWN = 0
    TOPIC_CONFIG = 1               # DYNAMIC_TOPIC_CONFIG
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
# codec ids as in the batch attributes; "producer" keeps whatever the producer sent
COMPRESSION_CODECS = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


class ConfigDef(NamedTuple):
    name: str
    type: ConfigType
    default: Any
    # None if valid, else the reason, or (the offending part of the value, the reason)
    validator: Callable[[Any], str | tuple[str, str] | None] | None
    # broker properties that set this config's default, highest precedence first,
    # each with a multiplier to convert its unit (e.g. hours -> ms)
    broker_synonyms: tuple[tuple[str, int], ...]
    doc: str

    @property
    def attr(self) -> str:
        return self.name.replace(".", "_").replace("-", "_")


def _at_least(lo):
    return lambda v: None if v >= lo else f"Value must be at least {lo}"


def _between(lo, hi):
    return lambda v: None if lo <= v <= hi else f"Value must be between {lo} and {hi}"


def _one_of(*choices):
    return lambda v: None if v in choices else f"String must be one of: {', '.join(choices)}"


def _list_in(*choices):
    """Kafka's ValidList: the message names the first element not allowed."""
    def check(v):
        bad = [x for x in v if x not in choices]
        return (bad[0], f"String must be one of: {', '.join(choices)}") if bad else None
    return check


def _gzip_level(v):
    return None if v == -1 or 1 <= v <= 9 else "Value must be -1 or between 1 and 9"


def _throttled_replicas(v):
    for item in v:
        if item == "*":
            continue
        parts = item.split(":")
        if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
            return "Must be a list of partitionId:brokerId pairs or '*'"
    return None


CONFIG_DEFS: tuple[ConfigDef, ...] = (
    ConfigDef("segment.bytes", ConfigType.INT, 1073741824, _at_least(14), (("log.segment.bytes", 1),),
              "The maximum size of a single log segment file."),
    ConfigDef("segment.ms", ConfigType.LONG, 604800000, _at_least(1),
              (("log.roll.ms", 1), ("log.roll.hours", 3600000)),
              "Time after which a segment is rolled even if not full."),
    ConfigDef("segment.jitter.ms", ConfigType.LONG, 0, _at_least(0),
              (("log.roll.jitter.ms", 1), ("log.roll.jitter.hours", 3600000)),
              "Maximum random jitter subtracted from the scheduled segment roll time."),
    ConfigDef("segment.index.bytes", ConfigType.INT, 10485760, _at_least(4), (("log.index.size.max.bytes", 1),),
              "Maximum size of the offset index (bounds the entries per segment)."),
    ConfigDef("flush.messages", ConfigType.LONG, LONG_MAX, _at_least(1), (("log.flush.interval.messages", 1),),
              "Force an fsync after this many messages."),
    ConfigDef("flush.ms", ConfigType.LONG, LONG_MAX, _at_least(0),
              (("log.flush.interval.ms", 1), ("log.flush.scheduler.interval.ms", 1)),
              "Force an fsync after this much time."),
    ConfigDef("retention.bytes", ConfigType.LONG, -1, None, (("log.retention.bytes", 1),),
              "Maximum size of a partition before old segments are discarded (-1: no limit)."),
    ConfigDef("retention.ms", ConfigType.LONG, 604800000, _at_least(-1),
              (("log.retention.ms", 1), ("log.retention.minutes", 60000), ("log.retention.hours", 3600000)),
              "Maximum time to retain a segment before discarding it (-1: no limit)."),
    ConfigDef("max.message.bytes", ConfigType.INT, 1048588, _at_least(0), (("message.max.bytes", 1),),
              "Largest record batch size allowed."),
    ConfigDef("index.interval.bytes", ConfigType.INT, 4096, _at_least(0), (("log.index.interval.bytes", 1),),
              "How frequently an offset index entry is added."),
    ConfigDef("delete.retention.ms", ConfigType.LONG, 86400000, _at_least(0), (("log.cleaner.delete.retention.ms", 1),),
              "How long delete tombstones are retained on compacted topics."),
    ConfigDef("min.compaction.lag.ms", ConfigType.LONG, 0, _at_least(0), (("log.cleaner.min.compaction.lag.ms", 1),),
              "Minimum time a message remains uncompacted."),
    ConfigDef("max.compaction.lag.ms", ConfigType.LONG, LONG_MAX, _at_least(1),
              (("log.cleaner.max.compaction.lag.ms", 1),),
              "Maximum time a message remains ineligible for compaction."),
    ConfigDef("file.delete.delay.ms", ConfigType.LONG, 60000, _at_least(0), (("log.segment.delete.delay.ms", 1),),
              "Time to wait before deleting a file from the filesystem."),
    ConfigDef("min.cleanable.dirty.ratio", ConfigType.DOUBLE, 0.5, _between(0, 1),
              (("log.cleaner.min.cleanable.ratio", 1),),
              "Dirty ratio above which the log is eligible for cleaning."),
    ConfigDef("cleanup.policy", ConfigType.LIST, ["delete"], _list_in("compact", "delete"),
              (("log.cleanup.policy", 1),),
              "Retention policy for old segments: delete and/or compact."),
    ConfigDef("unclean.leader.election.enable", ConfigType.BOOLEAN, False, None,
              (("unclean.leader.election.enable", 1),),
              "Whether out-of-sync replicas may be elected leader."),
    ConfigDef("min.insync.replicas", ConfigType.INT, 1, _at_least(1), (("min.insync.replicas", 1),),
              "Minimum in-sync replicas for acks=all."),
    ConfigDef("compression.type", ConfigType.STRING, "producer", _one_of(*COMPRESSION_TYPES),
              (("compression.type", 1),),
              "Final compression type for the topic ('producer' keeps the producer's codec)."),
    ConfigDef("compression.gzip.level", ConfigType.INT, -1, _gzip_level, (("compression.gzip.level", 1),),
              "Compression level for gzip."),
    ConfigDef("compression.lz4.level", ConfigType.INT, 9, _between(1, 17), (("compression.lz4.level", 1),),
              "Compression level for lz4."),
    ConfigDef("compression.zstd.level", ConfigType.INT, 3, _between(-131072, 22), (("compression.zstd.level", 1),),
              "Compression level for zstd."),
    ConfigDef("preallocate", ConfigType.BOOLEAN, False, None, (("log.preallocate", 1),),
              "Preallocate the file on disk when creating a new segment."),
    ConfigDef("message.timestamp.type", ConfigType.STRING, "CreateTime", _one_of("CreateTime", "LogAppendTime"),
              (("log.message.timestamp.type", 1),), "CreateTime or LogAppendTime."),
    ConfigDef("message.timestamp.before.max.ms", ConfigType.LONG, LONG_MAX, _at_least(0),
              (("log.message.timestamp.before.max.ms", 1),),
              "Maximum allowed amount a record timestamp may lie before the broker's time."),
    ConfigDef("message.timestamp.after.max.ms", ConfigType.LONG, 3600000, _at_least(0),
              (("log.message.timestamp.after.max.ms", 1),),
              "Maximum allowed amount a record timestamp may lie after the broker's time."),
    ConfigDef("leader.replication.throttled.replicas", ConfigType.LIST, [], _throttled_replicas,
              (), "Replicas throttled on the leader side."),
    ConfigDef("follower.replication.throttled.replicas", ConfigType.LIST, [], _throttled_replicas,
              (), "Replicas throttled on the follower side."),
    ConfigDef("remote.storage.enable", ConfigType.BOOLEAN, False, None,
              (), "Tiered storage (not supported; must stay false)."),
    ConfigDef("local.retention.ms", ConfigType.LONG, -2, _at_least(-2), (("log.local.retention.ms", 1),),
              "Local retention time with tiered storage (-2: use retention.ms)."),
    ConfigDef("local.retention.bytes", ConfigType.LONG, -2, _at_least(-2), (("log.local.retention.bytes", 1),),
              "Local retention size with tiered storage (-2: use retention.bytes)."),
    ConfigDef("remote.log.copy.disable", ConfigType.BOOLEAN, False, None, (), "Tiered storage copy disable."),
    ConfigDef("remote.log.delete.on.disable", ConfigType.BOOLEAN, False, None, (), "Tiered storage delete on disable."),
)

# test-only override accepted but never described (as Kafka's defineInternal)
INTERNAL_CONFIG_DEFS: tuple[ConfigDef, ...] = (
    ConfigDef("internal.segment.bytes", ConfigType.INT, None, _at_least(14), (),
              "Test-only override of segment.bytes."),
)

CONFIG_DEFS_BY_NAME: dict[str, ConfigDef] = {d.name: d for d in CONFIG_DEFS + INTERNAL_CONFIG_DEFS}
TOPIC_CONFIG_NAMES = tuple(d.name for d in CONFIG_DEFS)


def _parse(d: ConfigDef, raw: Any, name: str | None = None) -> Any:
    """Parse a string (or already-typed value) for ``d``; raise ValueError with Kafka's message,
    which names ``name`` (default: the topic config; a broker property that sets it otherwise)."""
    name = name or d.name
    if raw is None:
        raise ValueError(f"Invalid value null for configuration {name}")
    t = d.type
    if t in (ConfigType.INT, ConfigType.LONG, ConfigType.SHORT):
        if isinstance(raw, bool):
            raise ValueError(f"Invalid value {raw} for configuration {name}: Not a number of type {t.name}")
        if isinstance(raw, int):
            v = raw
        else:
            s = str(raw).strip()
            try:
                v = int(s)
            except ValueError:
                raise ValueError(f"Invalid value {raw} for configuration {name}: Not a number of type {t.name}") from None
        lo, hi = (INT_MIN, INT_MAX) if t == ConfigType.INT else (LONG_MIN, LONG_MAX)
        if t == ConfigType.SHORT:
            lo, hi = -32768, 32767
        if not lo <= v <= hi:
            raise ValueError(f"Invalid value {raw} for configuration {name}: Not a number of type {t.name}")
    elif t == ConfigType.DOUBLE:
        try:
            v = float(raw if not isinstance(raw, str) else raw.strip())
        except ValueError:
            raise ValueError(f"Invalid value {raw} for configuration {name}: Not a number of type DOUBLE") from None
    elif t == ConfigType.BOOLEAN:
        if isinstance(raw, bool):
            v = raw
        else:
            s = str(raw).strip().lower()
            if s not in ("true", "false"):
                raise ValueError(f"Invalid value {raw} for configuration {name}: Expected value to be either true or false")
            v = s == "true"
    elif t == ConfigType.LIST:
        if isinstance(raw, (list, tuple)):
            v = [str(x).strip() for x in raw]
        else:
            s = str(raw).strip()
            v = [x.strip() for x in s.split(",")] if s else []
    else:
        v = str(raw).strip()
    if d.validator is not None:
        err = d.validator(v)
        if isinstance(err, tuple):
            raise ValueError(f"Invalid value {err[0]} for configuration {name}: {err[1]}")
        if err:
            raise ValueError(f"Invalid value {raw} for configuration {name}: {err}")
    return v


def format_value(d: ConfigDef, v: Any) -> str | None:
    """Render a parsed value the way Kafka's DescribeConfigs does."""
    if v is None:
        return None
    if d.type == ConfigType.BOOLEAN:
        return "true" if v else "false"
    if d.type == ConfigType.LIST:
        return ",".join(v)
    return str(v)


@dataclass(frozen=True)
class LogConfig:
    """Effective topic configuration. Attributes use Kafka's names with ``_``."""

    segment_bytes: int = 1073741824
    segment_ms: int = 604800000
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10485760
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    retention_bytes: int = -1
    retention_ms: int = 604800000
    max_message_bytes: int = 1048588
    index_interval_bytes: int = 4096
    delete_retention_ms: int = 86400000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    file_delete_delay_ms: int = 60000
    min_cleanable_dirty_ratio: float = 0.5
    cleanup_policy: tuple = ("delete",)
    unclean_leader_election_enable: bool = False
    min_insync_replicas: int = 1
    compression_type: str = "producer"
    compression_gzip_level: int = -1
    compression_lz4_level: int = 9
    compression_zstd_level: int = 3
    preallocate: bool = False
    message_timestamp_type: str = "CreateTime"
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_after_max_ms: int = 3600000
    leader_replication_throttled_replicas: tuple = ()
    follower_replication_throttled_replicas: tuple = ()
    remote_storage_enable: bool = False
    local_retention_ms: int = -2
    local_retention_bytes: int = -2
    remote_log_copy_disable: bool = False
    remote_log_delete_on_disable: bool = False
    internal_segment_bytes: int | None = None

    # provenance, for DescribeConfigs: topic config name -> (broker property, raw value) for values
    # set by broker properties; topic config name -> raw value for per-topic overrides
    broker_overrides: Mapping[str, tuple[str, str]] = field(default_factory=dict, compare=False, repr=False)
    topic_overrides: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    # -- construction -----------------------------------------------------
    @classmethod
    def from_broker_properties(cls, props: Mapping[str, str]) -> "LogConfig":
        """Kafka defaults overridden by broker properties (``log.retention.hours`` etc.).

        Non-log keys are ignored. Raises :class:`KafkaError` INVALID_CONFIG on a bad value.
        """
        values: dict[str, Any] = {}
        sources: dict[str, str] = {}
        for d in CONFIG_DEFS:
            for prop, mult in d.broker_synonyms:
                if prop in props and props[prop] is not None and str(props[prop]).strip() != "":
                    raw = props[prop]
                    try:
                        if mult != 1:
                            try:
                                n = int(str(raw).strip())
                            except ValueError:
                                raise ValueError(f"Invalid value {raw} for configuration {prop}:"
                                                 " Not a number of type INT") from None
                            v = _parse(d, n * mult if n >= 0 else n, name=prop)
                        else:
                            v = _parse(d, raw, name=prop)
                    except ValueError as e:
                        raise KafkaError(ErrorCode.INVALID_CONFIG, str(e)) from None
                    values[d.attr] = tuple(v) if isinstance(v, list) else v
                    sources[d.name] = (prop, str(raw).strip())
                    break
        return dataclasses.replace(cls(), **values, broker_overrides=sources)

    def with_overrides(self, overrides: Mapping[str, str] | None) -> "LogConfig":
        """This config with per-topic overrides applied (validated; see :func:`validate_topic_configs`)."""
        overrides = dict(overrides or {})
        parsed = validate_topic_configs(overrides)
        values = {CONFIG_DEFS_BY_NAME[k].attr: (tuple(v) if isinstance(v, list) else v) for k, v in parsed.items()}
        return dataclasses.replace(self, **values, topic_overrides={k: str(v) for k, v in overrides.items()})

    # -- derived ------------------------------------------------------------
    @property
    def effective_segment_bytes(self) -> int:
        return self.internal_segment_bytes if self.internal_segment_bytes is not None else self.segment_bytes

    @property
    def delete_enabled(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def compact_enabled(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    @property
    def max_index_entries(self) -> int:
        return self.segment_index_bytes // 8

    @property
    def max_time_index_entries(self) -> int:
        return self.segment_index_bytes // 12

    def get(self, name: str) -> Any:
        """Value by Kafka name (``config.get("retention.ms")``)."""
        return getattr(self, CONFIG_DEFS_BY_NAME[name].attr)

    def to_properties(self) -> dict[str, str]:
        """All described configs by Kafka name, as strings."""
        return {d.name: format_value(d, getattr(self, d.attr) if d.type != ConfigType.LIST
                                     else list(getattr(self, d.attr))) for d in CONFIG_DEFS}


def validate_topic_configs(configs: Mapping[str, Any]) -> dict[str, Any]:
    """Parse and validate topic-level overrides; INVALID_CONFIG on unknown names or bad values."""
    out = {}
    for name, raw in configs.items():
        d = CONFIG_DEFS_BY_NAME.get(name)
        if d is None:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {name}")
        try:
            out[name] = _parse(d, raw)
        except ValueError as e:
            raise KafkaError(ErrorCode.INVALID_CONFIG, str(e)) from None
    if out.get("remote.storage.enable"):
        raise KafkaError(ErrorCode.INVALID_CONFIG, "Tiered storage (remote.storage.enable=true) is not supported")
    lo = out.get("min.compaction.lag.ms")
    hi = out.get("max.compaction.lag.ms")
    if lo is not None and hi is not None and lo > hi:
        raise KafkaError(ErrorCode.INVALID_CONFIG,
                         f"conflict topic config setting min.compaction.lag.ms ({lo}) > max.compaction.lag.ms ({hi})")
    return out


class ConfigSynonym(NamedTuple):
    name: str
    value: str | None
    source: ConfigSource


class ConfigEntry(NamedTuple):
    """One DescribeConfigs result entry for a topic resource."""
    name: str
    value: str | None
    source: ConfigSource
    read_only: bool
    is_sensitive: bool
    is_default: bool            # DescribeConfigs v0 field
    config_type: ConfigType
    documentation: str
    synonyms: tuple[ConfigSynonym, ...]


# broker properties that Kafka defines without a default value: DescribeConfigs lists no
# DEFAULT_CONFIG synonym for them (flush.ms falls back to log.flush.scheduler.interval.ms)
# (log.retention.ms, log.roll.ms, log.roll.jitter.ms: Kafka's default is null and the *.hours key's
# applies; recorded: no synonym)
_BROKER_PROPS_WITHOUT_DEFAULT = frozenset({"log.flush.interval.ms", "log.retention.ms", "log.roll.ms",
                                           "log.roll.jitter.ms"})
# Kafka 4.1's controller writes a cluster-wide dynamic min.insync.replicas (the static value) when
# it bootstraps with eligible leader replicas on (ConfigurationControlManager's ELR safety records),
# so a topic without an override reports it as DYNAMIC_DEFAULT_BROKER_CONFIG (recorded)
_CLUSTER_DYNAMIC_AT_BOOTSTRAP = frozenset({"min.insync.replicas"})


def describe_configs(config: LogConfig, names: list[str] | None = None,
                     include_synonyms: bool = False) -> list[ConfigEntry]:
    """DescribeConfigs entries for a topic with effective ``config``.

    ``names`` restricts the result (unknown names are skipped, as Kafka does).
    Sources: TOPIC_CONFIG for topic overrides, STATIC_BROKER_CONFIG for values
    from broker properties, else DEFAULT_CONFIG. Synonyms (v1+) list the topic
    override, the broker property and the default, highest precedence first.
    """
    wanted = CONFIG_DEFS if names is None else [CONFIG_DEFS_BY_NAME[n] for n in names
                                                if n in CONFIG_DEFS_BY_NAME and n in TOPIC_CONFIG_NAMES]
    defaults = LogConfig()
    out = []
    for d in wanted:
        raw_value = getattr(config, d.attr)
        value = format_value(d, list(raw_value) if d.type == ConfigType.LIST else raw_value)
        synonyms = []
        # Kafka's broker synonyms start at the first broker key of the topic config
        # (ConfigHelper.configSynonyms' dropWhile): a value set by another unit's key
        # (log.retention.hours for retention.ms) is no synonym, and the source stays the default
        static = config.broker_overrides.get(d.name)
        if static is not None and static[0] != d.broker_synonyms[0][0]:
            static = None
        if d.name in config.topic_overrides:
            source = ConfigSource.TOPIC_CONFIG
            synonyms.append(ConfigSynonym(d.name, value, ConfigSource.TOPIC_CONFIG))
        elif d.name in _CLUSTER_DYNAMIC_AT_BOOTSTRAP:
            source = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
        elif static is not None:
            source = ConfigSource.STATIC_BROKER_CONFIG
        else:
            source = ConfigSource.DEFAULT_CONFIG
        if include_synonyms:
            if d.name in _CLUSTER_DYNAMIC_AT_BOOTSTRAP:  # the static value, which the controller copied
                synonyms.append(ConfigSynonym(d.broker_synonyms[0][0], static[1] if static else
                                              format_value(d, getattr(defaults, d.attr)),
                                              ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG))
            if static is not None:
                synonyms.append(ConfigSynonym(static[0], static[1], ConfigSource.STATIC_BROKER_CONFIG))
            if d.broker_synonyms and d.broker_synonyms[0][0] not in _BROKER_PROPS_WITHOUT_DEFAULT:
                dflt = getattr(defaults, d.attr)
                synonyms.append(ConfigSynonym(d.broker_synonyms[0][0],
                                              format_value(d, list(dflt) if d.type == ConfigType.LIST else dflt),
                                              ConfigSource.DEFAULT_CONFIG))
        out.append(ConfigEntry(d.name, value, source, False, False, source == ConfigSource.DEFAULT_CONFIG,
                               d.type, d.doc, tuple(synonyms) if include_synonyms else ()))
    return out

