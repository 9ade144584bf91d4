"""Heartbeat (12): keeps a member's session alive; tells it when to rejoin."""
from .group_common import coordinator, now_ms


async def handle(conn, header, req):
    err = coordinator(conn).heartbeat(req.group_id, req.generation_id, req.member_id,
                                      req.group_instance_id if header.api_version >= 3 else None, now_ms())
    return {"throttle_time_ms": 0, "error_code": int(err)}
