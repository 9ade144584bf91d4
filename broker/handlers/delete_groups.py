"""DeleteGroups (42): remove empty groups and their offsets (tombstones in __consumer_offsets)."""
from minikafka.protocol.errors import ErrorCode
from ..security import authorizer as acl
from .group_common import coordinator, now_ms


async def handle(conn, header, req):
    # Kafka deletes each named group once (KafkaApis: groupsNames.distinct): a second mention of a
    # group must not turn its deletion into GROUP_ID_NOT_FOUND
    names = list(dict.fromkeys(req.groups_names or []))
    denied = {g for g in names if not conn.authorize(acl.DELETE, acl.GROUP, g)}  # Kafka: DELETE on each
    result = coordinator(conn).delete_groups([g for g in names if g not in denied], now_ms())
    result.update({g: ErrorCode.GROUP_AUTHORIZATION_FAILED for g in denied})
    return {"throttle_time_ms": 0,
            "results": [{"group_id": g, "error_code": int(result[g])} for g in names]}
