"""AlterConfigs (33), the legacy API: each resource's whole override set is replaced.
Checks and error codes are Kafka's; see :mod:`.alter_configs_common`."""
from protocol.errors import ErrorCode, KafkaError
from . import alter_configs_common as ac

API_KEY = 33
VERSIONS = (0, 2)


async def handle(conn, header, req):
    broker = conn.broker
    dups = ac.duplicate_resources(req.resources)
    out = []
    for i, res in enumerate(req.resources):
        try:
            if i in dups:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")
            ac.check_entries(res.configs, incremental=False)
            if res.resource_type == ac.TOPIC:
                ac.alter_topic(broker, res.resource_name, {c.name: c.value for c in res.configs}, req.validate_only)
            elif res.resource_type == ac.BROKER:
                ac.check_broker_name(broker, res.resource_name)
                ac.alter_broker(res.configs, incremental=False)
            elif res.resource_type in (ac.CLIENT_METRICS, ac.GROUP):
                raise KafkaError(ErrorCode.INVALID_REQUEST,
                                 f"Resource type {res.resource_type} is not supported by this broker")
            else:
                # includes BROKER_LOGGER, which the legacy API never supported
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown resource type {res.resource_type}")
            out.append(ac.response_entry(res))
        except KafkaError as e:
            out.append(ac.response_entry(res, e))
    return {"throttle_time_ms": 0, "responses": out}
