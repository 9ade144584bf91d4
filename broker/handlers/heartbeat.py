"""Heartbeat (12): keeps a member's session alive; tells it when to rejoin."""
from minikafka.protocol.errors import ErrorCode
from ..security import authorizer as acl
from .group_common import coordinator, now_ms


async def handle(conn, header, req):
    if not conn.authorize(acl.READ, acl.GROUP, req.group_id):
        return {"throttle_time_ms": 0, "error_code": int(ErrorCode.GROUP_AUTHORIZATION_FAILED)}
    err = coordinator(conn).heartbeat(req.group_id, req.generation_id, req.member_id,
                                      req.group_instance_id if header.api_version >= 3 else None, now_ms())
    return {"throttle_time_ms": 0, "error_code": int(err)}
