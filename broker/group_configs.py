"""GROUP config resources (KIP-848): the keys Kafka 4.1 knows, their defaults (the broker's
group.* settings), their bounds, and the checks IncrementalAlterConfigs/AlterConfigs
apply before a group's overrides are stored (DynamicConfigStore)."""
from __future__ import annotations

from minikafka.protocol.errors import ErrorCode, KafkaError

INT, STRING = 3, 2

# key -> (type, broker key of its default or a fixed default, broker key of the minimum
# or a fixed minimum, the maximum's likewise); in the order Kafka 4.1 describes them
GROUP_CONFIGS = {
    "consumer.session.timeout.ms": (INT, "group.consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms",
                                    "group.consumer.max.session.timeout.ms"),
    "streams.heartbeat.interval.ms": (INT, 5000, ("group.streams.min.heartbeat.interval.ms", 5000),
                                      ("group.streams.max.heartbeat.interval.ms", 15000)),
    "share.auto.offset.reset": (STRING, "latest", None, None),
    "share.record.lock.duration.ms": (INT, 30000, ("group.share.min.record.lock.duration.ms", 15000),
                                      ("group.share.max.record.lock.duration.ms", 60000)),
    "consumer.heartbeat.interval.ms": (INT, "group.consumer.heartbeat.interval.ms",
                                       "group.consumer.min.heartbeat.interval.ms",
                                       "group.consumer.max.heartbeat.interval.ms"),
    "share.session.timeout.ms": (INT, 45000, ("group.share.min.session.timeout.ms", 45000),
                                 ("group.share.max.session.timeout.ms", 60000)),
    "share.isolation.level": (STRING, "read_uncommitted", None, None),
    "streams.session.timeout.ms": (INT, 45000, ("group.streams.min.session.timeout.ms", 45000),
                                   ("group.streams.max.session.timeout.ms", 60000)),
    "share.heartbeat.interval.ms": (INT, 5000, ("group.share.min.heartbeat.interval.ms", 5000),
                                    ("group.share.max.heartbeat.interval.ms", 15000)),
    "streams.num.standby.replicas": (INT, 0, None, ("group.streams.max.standby.replicas", 2)),
}
_CHOICES = {"share.isolation.level": ("read_committed", "read_uncommitted")}


def _broker_value(config, ref):
    """(broker key, value) of a bound or default: a key of ours, or a (Kafka key, default) pair."""
    if ref is None:
        return None, None
    if isinstance(ref, tuple):
        return ref[0], ref[1]
    if isinstance(ref, str) and "." in ref and ref.startswith("group."):
        return ref, config[ref]
    return None, ref


def default_of(config, key: str) -> str:
    return str(_broker_value(config, GROUP_CONFIGS[key][1])[1])


def validate(config, overrides: dict[str, str]) -> None:
    for key, value in overrides.items():
        spec = GROUP_CONFIGS.get(key)
        if spec is None:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown group config name: {key}")
        ctype, _, lo, hi = spec
        if ctype == STRING:
            if key in _CHOICES and value not in _CHOICES[key]:
                raise KafkaError(ErrorCode.INVALID_CONFIG, f"Invalid value {value} for configuration {key}: "
                                 f"String must be one of: {', '.join(_CHOICES[key])}")
            if key == "share.auto.offset.reset" and value not in ("latest", "earliest") \
                    and not value.startswith("by_duration:"):
                raise KafkaError(ErrorCode.INVALID_CONFIG, f"Invalid value {value} for configuration {key}")
            continue
        try:
            n = int(value.strip())
        except (ValueError, AttributeError):
            raise KafkaError(ErrorCode.INVALID_CONFIG,
                             f"Invalid value {value} for configuration {key}: Not a number of type INT") from None
        lo_key, lo_val = _broker_value(config, lo)
        hi_key, hi_val = _broker_value(config, hi)
        if lo_val is not None and n < int(lo_val):
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"{key} must be greater than or equal to {lo_key}")
        if hi_val is not None and n > int(hi_val):
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"{key} must be less than or equal to {hi_key}")
        if n < 0:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Invalid value {value} for configuration {key}: "
                             f"Value must be at least 0")


def describe(config, overrides: dict[str, str], include_synonyms: bool) -> list[dict]:
    """DescribeConfigs entries: an override is GROUP_CONFIG (8), else DEFAULT_CONFIG (5)."""
    out = []
    for key, (ctype, *_rest) in GROUP_CONFIGS.items():
        if key in overrides:
            value, source = overrides[key], 8
        else:
            value, source = default_of(config, key), 5
        out.append({"name": key, "value": value, "read_only": False, "is_default": False,
                    "config_source": source, "is_sensitive": False,
                    "synonyms": [{"name": key, "value": value, "source": source}] if include_synonyms else [],
                    "config_type": ctype, "documentation": None})
    return out
