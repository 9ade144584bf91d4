"""ListGroups (16): every classic group; v4 filters by state (KIP-518), v5 by type (KIP-848)."""
from .group_common import coordinator
from ..security import authorizer as acl


async def handle(conn, header, req):
    v = header.api_version
    groups = coordinator(conn).list_groups(req.states_filter if v >= 4 else None,
                                           req.types_filter if v >= 5 else None)
    if not conn.authorize(acl.DESCRIBE, acl.CLUSTER, acl.CLUSTER_NAME):
        # Kafka: without DESCRIBE on the cluster, the groups it may DESCRIBE
        groups = [g for g in groups if conn.authorize(acl.DESCRIBE, acl.GROUP, g["group_id"])]
    return {"throttle_time_ms": 0, "error_code": 0, "groups": groups}
