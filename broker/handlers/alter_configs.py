"""AlterConfigs (33), the legacy API: each resource's whole override set is replaced.
Checks and error codes are Kafka's; see :mod:`.alter_configs_common`."""
from . import alter_configs_common as ac


async def handle(conn, header, req):
    return ac.alter_resources(conn.ctx, req, incremental=False,
                              topic_overrides_for=lambda res: {c.name: c.value for c in res.configs}, conn=conn)
