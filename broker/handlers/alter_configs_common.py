"""Shared by AlterConfigs (33) and IncrementalAlterConfigs (44).

Kafka splits the work in two (ConfigAdminManager.preprocess on the broker, then
ConfigurationControlManager on the controller); one node does both here, with
Kafka's checks and error codes:

* a resource named twice: INVALID_REQUEST "Each resource must appear at most once."
  for every copy; a config key twice in one resource: INVALID_REQUEST; a null value
  (any op of the legacy API, a non-DELETE op of the incremental one): INVALID_REQUEST.
* TOPIC: empty name INVALID_REQUEST, illegal name INVALID_TOPIC_EXCEPTION, then the
  new override set is validated (INVALID_CONFIG: unknown name, bad value), then the
  topic must exist (UNKNOWN_TOPIC_OR_PARTITION), as the controller orders it.
* BROKER: the name is "" (cluster default) or this node's id, else INVALID_REQUEST.
  The keys Kafka changes at run time (DYNAMIC_BROKER_CONFIGS) are stored in the
  DynamicConfigStore and applied at once (Context.alter_dynamic_config); a static key
  answers what Kafka answers: INVALID_REQUEST "Cannot update these configs
  dynamically: Set(...)" (DynamicBrokerConfig.validateConfigs; KAFKA-13609 keeps it
  INVALID_REQUEST), a bad value INVALID_REQUEST naming the key.
* BROKER_LOGGER (incremental only): Python loggers stand in for log4j ones; see
  :mod:`.loggers`.
* GROUP (KIP-848): the keys of :mod:`..group_configs`, checked against the broker's
  group.* bounds (INVALID_CONFIG, Kafka's words); an empty name is INVALID_REQUEST.
  Overrides are stored in the DynamicConfigStore and read by the group coordinator.
* CLIENT_METRICS configs are not supported: INVALID_REQUEST.
"""
from __future__ import annotations

from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.storage.config import CONFIG_DEFS_BY_NAME, ConfigType, TOPIC_CONFIG_NAMES, format_value
from ..config import ALIASES, DEFS, DYNAMIC_BROKER_CONFIGS, UNIT_ALIASES, ConfigError, is_list_config
from .. import group_configs
from .common import topic_name_error

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
# the broker quotas Kafka sets only dynamically (DynamicConfig.Broker) that minikafka applies: the
# throttle of partition moves between log dirs (broker/log_dirs.py)
QUOTA_BROKER_CONFIGS = frozenset({"replica.alter.log.dirs.io.max.bytes.per.second"})
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
OP_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}


def duplicate_resources(resources) -> set[int]:
    """Indexes of resources whose (type, name) appears more than once."""
    seen: dict[tuple, list[int]] = {}
    for i, r in enumerate(resources):
        seen.setdefault((r.resource_type, r.resource_name), []).append(i)
    return {i for idxs in seen.values() if len(idxs) > 1 for i in idxs}


class Unexplained(KafkaError):
    """An error Kafka answers without a message."""


class UnknownOperation(Unexplained):
    """An IncrementalAlterConfigs operation Kafka does not know: OpType.forId throws, and the
    resource gets UNKNOWN_SERVER_ERROR without a message (recorded)."""

    def __init__(self):
        super().__init__(ErrorCode.UNKNOWN_SERVER_ERROR)


def check_entries(configs, incremental: bool) -> None:
    names = [c.name for c in configs]
    if len(set(names)) != len(names):
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    nulls = [c.name for c in configs if c.value is None and not (incremental and c.config_operation == DELETE)]
    if nulls:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls))


# ------------------------------------------------------------------ topics
def _check_topic_name(name: str) -> None:
    if name == "":
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed.")
    err = topic_name_error(name)
    if err is not None:
        raise KafkaError(err, f"Topic name {name!r} is illegal")


def _topic_list_default(name: str) -> str | None:
    """The topic config's Kafka default as a string (KafkaConfigSchema.getDefault)."""
    d = CONFIG_DEFS_BY_NAME[name]
    return format_value(d, list(d.default) if d.type == ConfigType.LIST else d.default)


def _split(value: str | None) -> list[str]:
    return [x for x in (value or "").split(",") if x]


def incremental_overrides(current: dict[str, str], configs, list_values) -> dict[str, str]:
    """Apply SET/DELETE/APPEND/SUBTRACT to an override set
    (ConfigurationControlManager.incrementalAlterConfigResource). ``list_values(name, op,
    overrides)`` gives the list an APPEND/SUBTRACT starts from, or raises Kafka's error for a
    key that is not a LIST."""
    new = dict(current)
    for c in configs:
        op = c.config_operation
        if op == SET:
            new[c.name] = c.value
        elif op == DELETE:
            new.pop(c.name, None)
        elif op in (APPEND, SUBTRACT):
            new[c.name] = _append_or_subtract(list_values(c.name, op, new), op, c.value)
        else:
            raise UnknownOperation()
    return new


def _append_or_subtract(values: list[str], op: int, value: str) -> str:
    """A LIST config's new value: ``value``'s items appended (those not there yet) or removed."""
    values = list(values)
    for v in value.split(","):
        if op == APPEND and v not in values:
            values.append(v)
        elif op == SUBTRACT and v in values:
            values.remove(v)
    return ",".join(values)


def incremental_topic_overrides(current: dict[str, str], configs) -> dict[str, str]:
    """A topic's override set after an IncrementalAlterConfigs."""
    def list_values(name: str, op: int, overrides: dict[str, str]) -> list[str]:
        d = CONFIG_DEFS_BY_NAME.get(name)
        if d is None or name not in TOPIC_CONFIG_NAMES or d.type != ConfigType.LIST:
            raise KafkaError(ErrorCode.INVALID_CONFIG,
                             f"Can't {OP_NAMES[op]} to key {name} because its type is not LIST.")
        return _split(overrides[name] if name in overrides else _topic_list_default(name))
    return incremental_overrides(current, configs, list_values)


def alter_topic(ctx, name: str, overrides: dict[str, str], validate_only: bool) -> None:
    _check_topic_name(name)
    ctx.topics.default_log_config.with_overrides(overrides)  # INVALID_CONFIG before the existence check
    if name not in ctx.topics.topics():
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
    ctx.topics.alter_configs(name, overrides, validate_only=validate_only)


def topic_overrides(ctx, name: str) -> dict[str, str]:
    info = ctx.topics.topics().get(name)
    return dict(info.configs) if info is not None else {}


# ------------------------------------------------------------------ broker
def check_broker_name(ctx, name: str) -> None:
    if name == "":
        return
    try:
        node = int(name)
    except ValueError:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Node id must be an integer, but it is: {name}") from None
    if node != ctx.node_id:
        raise KafkaError(ErrorCode.INVALID_REQUEST,
                         f"Unexpected broker id, expected {ctx.node_id}, but received {name}")


def alter_broker(ctx, name: str, configs, incremental: bool, validate_only: bool) -> None:
    """Dynamic broker configs (Kafka's DynamicBrokerConfig): the keys of DYNAMIC_BROKER_CONFIGS
    change on the running broker and are stored; other known keys are static (INVALID_REQUEST
    "Cannot update these configs dynamically: Set(...)"); keys this broker does not know are
    accepted and have no effect, as Kafka accepts them."""
    current = dict(ctx.dynamic_configs.broker.get(name, {})) if incremental else {}
    static = []
    for c in configs:
        op = c.config_operation if incremental else SET
        known = c.name in DEFS or c.name in ALIASES or c.name in UNIT_ALIASES
        if op == DELETE:
            current.pop(c.name, None)
            continue
        if op in (APPEND, SUBTRACT):
            if c.name not in DEFS:
                raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown config name: {c.name}")
            if not is_list_config(c.name):
                raise KafkaError(ErrorCode.INVALID_CONFIG,
                                 f"Config value {OP_NAMES[op].lower()} is not allowed for config key: {c.name}")
            if c.name not in DYNAMIC_BROKER_CONFIGS:
                static.append(c.name)
                continue
            current[c.name] = _append_or_subtract(ctx.config[c.name] or [], op, c.value)
        elif op != SET:
            raise UnknownOperation()
        elif c.name in DYNAMIC_BROKER_CONFIGS:
            current[c.name] = c.value
        elif c.name in QUOTA_BROKER_CONFIGS:
            # Kafka's dynamic-only broker quotas (no server.properties key): a LONG, at least 0
            if not c.value.lstrip("-").isdigit() or int(c.value) < 0:
                raise KafkaError(ErrorCode.INVALID_CONFIG,
                                 f"Invalid value {c.value} for configuration {c.name}: Value must be at least 0")
            current[c.name] = c.value
        elif known:
            static.append(c.name)
    if static:
        raise KafkaError(ErrorCode.INVALID_REQUEST,
                         f"Cannot update these configs dynamically: Set({', '.join(static)})")
    try:
        ctx.alter_dynamic_config(name, current, validate_only)
    except ConfigError as e:
        raise KafkaError(ErrorCode.INVALID_REQUEST, str(e)) from None


# ------------------------------------------------------------------- group
def alter_group(ctx, res, incremental: bool, validate_only: bool) -> None:
    if res.resource_name == "":
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Default group resources are not allowed.")
    if incremental:
        def list_values(name: str, op: int, overrides: dict[str, str]) -> list[str]:
            if name not in group_configs.GROUP_CONFIGS:  # (no group config is a LIST)
                raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown group config name: {name}")
            raise KafkaError(ErrorCode.INVALID_CONFIG,
                             f"Can't {OP_NAMES[op]} to key {name} because its type is not LIST.")
        new = incremental_overrides(ctx.dynamic_configs.group(res.resource_name), res.configs, list_values)
    else:
        new = {c.name: c.value for c in res.configs}
    group_configs.validate(ctx.config, new)
    if not validate_only:
        ctx.dynamic_configs.set_group(res.resource_name, new)


def response_entry(res, err: KafkaError | None = None) -> dict:
    return {"error_code": int(err.code) if err else 0,
            "error_message": err.message if err and not isinstance(err, Unexplained) else None,
            "resource_type": res.resource_type, "resource_name": res.resource_name}


def config_refusal(conn, operation: int, resource_type: int, name: str) -> KafkaError | None:
    """Kafka: DESCRIBE_CONFIGS / ALTER_CONFIGS on the topic or the group, or on the cluster for
    broker, broker-logger and client-metrics resources; a type the API does not know is its
    INVALID_REQUEST whoever asks (the caller's). Kafka's broker refuses an IncrementalAlterConfigs
    of a broker logger itself, without a message; the controller, which answers the other alters,
    and DescribeConfigs give the error's."""
    from ..security import authorizer as acl
    if resource_type not in (TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP):
        return None
    if resource_type == TOPIC:
        if not conn.authorize(operation, acl.TOPIC, name):
            return KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")
    elif resource_type == GROUP:
        if not conn.authorize(operation, acl.GROUP, name):
            return KafkaError(ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed.")
    elif not conn.authorize(operation, acl.CLUSTER, acl.CLUSTER_NAME):
        if resource_type == BROKER_LOGGER and operation == acl.ALTER_CONFIGS:
            return Unexplained(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        return KafkaError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
    return None


def alter_resources(ctx, req, incremental: bool, topic_overrides_for, logger_apply=None, conn=None) -> dict:
    """The per-resource loop shared by AlterConfigs and IncrementalAlterConfigs.

    `topic_overrides_for(res)` gives a TOPIC resource's new override set (legacy:
    exactly what was sent; incremental: the current set with the ops applied).
    `logger_apply` handles BROKER_LOGGER, which only the incremental API supports.
    """
    dups = duplicate_resources(req.resources)
    out = []
    for i, res in enumerate(req.resources):
        try:
            if i in dups:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")
            # (the legacy API knows no broker logger: INVALID_REQUEST below, whoever asks)
            legacy_logger = res.resource_type == BROKER_LOGGER and logger_apply is None
            refused = conn is not None and not legacy_logger and \
                config_refusal(conn, 11, res.resource_type, res.resource_name)  # ALTER_CONFIGS
            if refused:
                raise refused
            check_entries(res.configs, incremental=incremental)
            if res.resource_type == TOPIC:
                alter_topic(ctx, res.resource_name, topic_overrides_for(res), req.validate_only)
            elif res.resource_type == BROKER:
                check_broker_name(ctx, res.resource_name)
                alter_broker(ctx, res.resource_name, res.configs, incremental, req.validate_only)
            elif res.resource_type == BROKER_LOGGER and logger_apply is not None:
                logger_apply(ctx, res.resource_name, res.configs, req.validate_only)
            elif res.resource_type == GROUP:
                alter_group(ctx, res, incremental, req.validate_only)
            elif res.resource_type == CLIENT_METRICS:
                raise KafkaError(ErrorCode.INVALID_REQUEST,
                                 f"Resource type {res.resource_type} is not supported by this broker")
            else:
                # includes BROKER_LOGGER for the legacy API, which never supported it
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown resource type {res.resource_type}")
            out.append(response_entry(res))
        except KafkaError as e:
            out.append(response_entry(res, e))
    return {"throttle_time_ms": 0, "responses": out}
