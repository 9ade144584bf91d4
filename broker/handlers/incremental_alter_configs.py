"""IncrementalAlterConfigs (44, KIP-339): SET / DELETE / APPEND / SUBTRACT per key.
Checks and error codes are Kafka's; see :mod:`.alter_configs_common`. BROKER_LOGGER
changes Python log levels (:mod:`.loggers`)."""
from . import alter_configs_common as ac
from . import loggers


async def handle(conn, header, req):
    ctx = conn.ctx
    return ac.alter_resources(
        ctx, req, incremental=True,
        topic_overrides_for=lambda res: ac.incremental_topic_overrides(ac.topic_overrides(ctx, res.resource_name),
                                                                       res.configs),
        logger_apply=loggers.apply, conn=conn)
