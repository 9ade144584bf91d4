"""IncrementalAlterConfigs (44, KIP-339): SET / DELETE / APPEND / SUBTRACT per key.
Checks and error codes are Kafka's; see :mod:`.alter_configs_common`. BROKER_LOGGER
changes Python log levels (:mod:`.loggers`)."""
from protocol.errors import ErrorCode, KafkaError
from . import alter_configs_common as ac
from . import loggers

API_KEY = 44
VERSIONS = (0, 1)


async def handle(conn, header, req):
    broker = conn.broker
    dups = ac.duplicate_resources(req.resources)
    out = []
    for i, res in enumerate(req.resources):
        try:
            if i in dups:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")
            ac.check_entries(res.configs, incremental=True)
            if res.resource_type == ac.TOPIC:
                current = ac.topic_overrides(broker, res.resource_name)
                new = ac.incremental_topic_overrides(current, res.configs)
                ac.alter_topic(broker, res.resource_name, new, req.validate_only)
            elif res.resource_type == ac.BROKER:
                ac.check_broker_name(broker, res.resource_name)
                ac.alter_broker(res.configs, incremental=True)
            elif res.resource_type == ac.BROKER_LOGGER:
                loggers.apply(broker, res.resource_name, res.configs, req.validate_only)
            elif res.resource_type in (ac.CLIENT_METRICS, ac.GROUP):
                raise KafkaError(ErrorCode.INVALID_REQUEST,
                                 f"Resource type {res.resource_type} is not supported by this broker")
            else:
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown resource type {res.resource_type}")
            out.append(ac.response_entry(res))
        except KafkaError as e:
            out.append(ac.response_entry(res, e))
    return {"throttle_time_ms": 0, "responses": out}
