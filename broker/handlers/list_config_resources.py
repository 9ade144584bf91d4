"""ListConfigResources (74, KIP-1142; v0 was ListClientMetricsResources): the resources that have
configs, of the types asked for (v1; none: every type), as Kafka's broker lists them: every topic,
this broker and its loggers (by node id), the groups with config overrides, the client metrics
resources (none: minikafka keeps no CLIENT_METRICS configs). v0 lists client metrics resources
only. A type it does not know answers UNSUPPORTED_VERSION with nothing listed; a principal without
DESCRIBE_CONFIGS on the cluster CLUSTER_AUTHORIZATION_FAILED (authorization.py; recorded:
config_resources/*)."""
from minikafka.protocol.errors import ErrorCode
from .alter_configs_common import BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP, TOPIC

TYPES = (TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP)


def error_response(req, code: ErrorCode, message: str | None = None, version: int = 0) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(code), "config_resources": []}


def _names(ctx, resource_type: int) -> list[str]:
    if resource_type == TOPIC:
        return list(ctx.topics.topics())
    if resource_type in (BROKER, BROKER_LOGGER):
        return [str(ctx.node_id)]
    if resource_type == GROUP:
        return [g for g, overrides in ctx.dynamic_configs.groups.items() if overrides]
    return []   # CLIENT_METRICS


async def handle(conn, header, req):
    types = [CLIENT_METRICS] if header.api_version == 0 else list(dict.fromkeys(req.resource_types)) or list(TYPES)
    if any(t not in TYPES for t in types):
        return error_response(req, ErrorCode.UNSUPPORTED_VERSION)
    return {"throttle_time_ms": 0, "error_code": 0, "config_resources": [
        {"resource_name": name, "resource_type": t} for t in types for name in _names(conn.ctx, t)]}
