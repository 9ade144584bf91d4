"""DescribeConfigs (32): topic configs (storage), the broker's own configuration with its
dynamic settings, GROUP configs (KIP-848) and loggers."""
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.storage.config import describe_configs
from ..config import DEFS, DYNAMIC_BROKER_CONFIGS, LONG_MAX, SENSITIVE
from .. import group_configs
from . import alter_configs_common as ac, loggers
from .common import topic_name_error


TOPIC, BROKER, BROKER_LOGGER, GROUP = 2, 4, 8, 32
# ConfigSource / ConfigType values from DescribeConfigsResponse
DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG = 2, 3
STATIC_BROKER_CONFIG, DEFAULT_CONFIG, DYNAMIC_BROKER_LOGGER_CONFIG = 4, 5, 6
TYPE_BOOLEAN, TYPE_STRING, TYPE_INT, TYPE_LONG, TYPE_DOUBLE, TYPE_LIST, TYPE_PASSWORD = 1, 2, 3, 5, 6, 7, 9
# "*.ms" keys Kafka types INT (the rest of "*.ms" are LONG)
# Kafka's internal keys: accepted, never described
_INTERNAL = frozenset({"log.initial.task.delay.ms"})
_INT_MS = frozenset({"log.flush.offset.checkpoint.interval.ms", "log.flush.start.offset.checkpoint.interval.ms"})


def _text_and_type(key, parser, value):
    if isinstance(value, list):
        return ",".join(value), TYPE_LIST
    if isinstance(value, bool):
        return str(value).lower(), TYPE_BOOLEAN
    if isinstance(value, int):
        return str(value), TYPE_LONG if (abs(value) > 2**31 or key.endswith(".ms") or value == LONG_MAX) \
            and key not in _INT_MS else TYPE_INT
    if isinstance(value, float):
        return str(value), TYPE_DOUBLE
    return (None if value is None else str(value)), TYPE_STRING if parser is str else TYPE_LONG


# Keys Kafka defines once per unit, each its own entry, sharing one synonym list
# (DynamicBrokerConfig.brokerConfigSynonyms); minikafka folds the other units into the first
# (broker/config.py UNIT_ALIASES). Per key: Kafka's default and type, and whether it is dynamic.
_UNIT_FAMILIES = {
    "log.retention.ms": (("log.retention.ms", None, TYPE_LONG, True), ("log.retention.minutes", None, TYPE_INT, False),
                         ("log.retention.hours", "168", TYPE_INT, False)),
    "log.roll.ms": (("log.roll.ms", None, TYPE_LONG, True), ("log.roll.hours", "168", TYPE_INT, False)),
}
# Kafka 4.1's controller writes the cluster-wide dynamic min.insync.replicas (the static value)
# when it bootstraps with eligible leader replicas (ConfigurationControlManager's ELR safety
# records): the broker reports it as DYNAMIC_DEFAULT_BROKER_CONFIG (recorded). minikafka,
# one replica per partition, does not otherwise read it (broker/config.py IGNORED).
_MIN_ISR = "min.insync.replicas"


def _family_entries(config, family, node_dyn: dict, default_dyn: dict, cluster_default: bool) -> list[dict]:
    """The entries of one unit family, as Kafka's ConfigHelper makes them: each key's value is its
    own highest layer (None when never set and without a default); its synonyms are every set
    layer of every key of the family (dynamic node, dynamic default, static, default; within a
    layer in the family's order), from the first one of the key itself on."""
    static = config.static.raw
    layers = [] if cluster_default else [(node_dyn, DYNAMIC_BROKER_CONFIG)]
    layers.append((default_dyn, DYNAMIC_DEFAULT_BROKER_CONFIG))
    if not cluster_default:
        layers += [(static, STATIC_BROKER_CONFIG), ({k: d for k, d, _, _ in family if d is not None}, DEFAULT_CONFIG)]
    every = [(key, layer[key], src) for layer, src in layers for key, _, _, _ in family if key in layer]
    out = []
    for key, _default, ctype, dynamic in family:
        own = [(k, v, src) for k, v, src in every if k == key]
        if cluster_default and not own:
            continue
        first = next((i for i, (k, _, _) in enumerate(every) if k == key), len(every))
        out.append({"name": key, "value": own[0][1] if own else None, "read_only": not dynamic,
                    "is_default": not own or own[0][2] == DEFAULT_CONFIG,
                    "config_source": own[0][2] if own else DEFAULT_CONFIG, "is_sensitive": False,
                    "synonyms": [{"name": k, "value": v, "source": src} for k, v, src in every[first:]],
                    "config_type": ctype, "documentation": None})
    return out


def _min_isr_entry(config, cluster_default: bool) -> dict:
    static = config.static.raw.get(_MIN_ISR)
    value = static if static is not None else "1"
    synonyms = [(value, DYNAMIC_DEFAULT_BROKER_CONFIG)]
    if not cluster_default:
        synonyms += ([(static, STATIC_BROKER_CONFIG)] if static is not None else []) + [("1", DEFAULT_CONFIG)]
    return {"name": _MIN_ISR, "value": value, "read_only": False, "is_default": False,
            "config_source": DYNAMIC_DEFAULT_BROKER_CONFIG, "is_sensitive": False,
            "synonyms": [{"name": _MIN_ISR, "value": v, "source": src} for v, src in synonyms],
            "config_type": TYPE_INT, "documentation": None}


def _broker_configs(ctx, name: str, include_synonyms: bool):
    """Each key's value, its source and (when asked) its synonyms, highest precedence first:
    this node's dynamic setting (DYNAMIC_BROKER_CONFIG), the cluster-wide dynamic default
    (DYNAMIC_DEFAULT_BROKER_CONFIG), the properties file (STATIC_BROKER_CONFIG), Kafka's
    default (DEFAULT_CONFIG). Resource "" describes only the cluster-wide dynamic defaults."""
    config = ctx.config
    static = config.static
    node_dyn = config.dynamic.get(str(ctx.node_id), {})
    default_dyn = config.dynamic.get("", {})
    out = []
    for key, (parser, default, _, doc) in DEFS.items():
        if key in _INTERNAL:
            continue
        if key in _UNIT_FAMILIES:
            entries = _family_entries(config, _UNIT_FAMILIES[key], node_dyn, default_dyn, name == "")
            out += [dict(e, synonyms=e["synonyms"] if include_synonyms else [], documentation=doc)
                    for e in entries]
            continue
        if name == "" and key not in default_dyn:
            continue
        text, ctype = _text_and_type(key, parser, config[key])
        layers = []
        if name != "" and key in node_dyn:
            layers.append((node_dyn[key], DYNAMIC_BROKER_CONFIG))
        if key in default_dyn:
            layers.append((default_dyn[key], DYNAMIC_DEFAULT_BROKER_CONFIG))
        if name != "":
            if key in static.originals:
                layers.append((_text_and_type(key, parser, static[key])[0], STATIC_BROKER_CONFIG))
            if default is not None:
                layers.append((_text_and_type(key, parser, default)[0], DEFAULT_CONFIG))
        source = layers[0][1] if layers else DEFAULT_CONFIG
        if name == "":
            text = default_dyn[key]
        sensitive = key in SENSITIVE
        if sensitive:  # Kafka's PASSWORD configs: described without their value
            text, ctype, layers = None, TYPE_PASSWORD, [(None, src) for _, src in layers]
        out.append({"name": key, "value": text, "read_only": key not in DYNAMIC_BROKER_CONFIGS,
                    "is_default": source == DEFAULT_CONFIG, "config_source": source, "is_sensitive": sensitive,
                    "synonyms": [{"name": key, "value": v, "source": src} for v, src in layers]
                    if include_synonyms else [],
                    "config_type": ctype, "documentation": doc})
    isr = _min_isr_entry(config, name == "")
    out.append(dict(isr, synonyms=isr["synonyms"] if include_synonyms else []))
    return out


async def handle(conn, header, req):
    ctx = conn.ctx
    results = []
    for res in req.resources:
        r = {"error_code": 0, "error_message": "", "resource_type": res.resource_type,
             "resource_name": res.resource_name, "configs": []}
        try:
            refused = ac.config_refusal(conn, 10, res.resource_type, res.resource_name)  # DESCRIBE_CONFIGS
            if refused:
                raise refused
            if res.resource_type == TOPIC:
                name_error = topic_name_error(res.resource_name)
                if name_error is not None:  # "" too (recorded)
                    raise KafkaError(name_error, f"Topic name {res.resource_name!r} is illegal")
                if res.resource_name not in ctx.topics.topics():
                    raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                entries = describe_configs(ctx.topics.topic_config(res.resource_name), None,
                                           include_synonyms=req.include_synonyms)
                configs = [{"name": c.name, "value": c.value, "read_only": c.read_only, "is_default": c.is_default,
                            "config_source": int(c.source), "is_sensitive": c.is_sensitive,
                            "synonyms": [{"name": s.name, "value": s.value, "source": int(s.source)} for s in c.synonyms],
                            "config_type": int(c.config_type), "documentation": c.documentation}
                           for c in entries]
            elif res.resource_type == BROKER:
                if res.resource_name not in ("", str(ctx.node_id)):
                    raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {ctx.node_id} or empty string, but received {res.resource_name}")
                configs = _broker_configs(ctx, res.resource_name, req.include_synonyms)
            elif res.resource_type == BROKER_LOGGER:
                if not res.resource_name:
                    raise KafkaError(ErrorCode.INVALID_REQUEST, "Broker id must not be empty")
                if res.resource_name != str(ctx.node_id):
                    raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {ctx.node_id} but received {res.resource_name}")
                configs = [{"name": name, "value": level, "read_only": False, "is_default": False,
                            "config_source": DYNAMIC_BROKER_LOGGER_CONFIG, "is_sensitive": False, "synonyms": [],
                            "config_type": 0, "documentation": None}
                           for name, level in loggers.loggers().items()]
            elif res.resource_type == GROUP:
                configs = group_configs.describe(ctx.config, ctx.dynamic_configs.group(res.resource_name),
                                                 req.include_synonyms)
            else:
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unsupported resource type {res.resource_type}")
            if res.configuration_keys is not None:
                wanted = set(res.configuration_keys)
                configs = [c for c in configs if c["name"] in wanted]
            if not req.include_documentation:
                for c in configs:
                    c["documentation"] = None
            r["configs"] = configs
        except KafkaError as e:
            r.update(error_code=int(e.code), error_message=e.message)
        results.append(r)
    return {"throttle_time_ms": 0, "results": results}
