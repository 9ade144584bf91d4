"""JoinGroup (11): join a classic group; the response waits for the rebalance.

v4+: a member without an id gets MEMBER_ID_REQUIRED and its id (KIP-394);
v5+: static membership (group.instance.id); v9: skip_assignment for a static
leader rejoining a stable group (KIP-814)."""
from minikafka.protocol.errors import ErrorCode

from .group_common import client_host, coordinator, now_ms, wait_for


def error_response(req, code: ErrorCode, message: str | None, version: int) -> dict:
    """JoinGroupRequest.getErrorResponse: no generation, protocol, leader or member id."""
    return {"throttle_time_ms": 0, "error_code": int(code), "generation_id": -1, "protocol_type": None,
            "protocol_name": None if version >= 7 else "", "leader": "", "skip_assignment": False,
            "member_id": "", "members": []}


async def handle(conn, header, req):
    v = header.api_version
    protocols = [(p.name, p.metadata or b"") for p in req.protocols or []]
    waiter = coordinator(conn).join_group(
        req.group_id, req.member_id or "", req.group_instance_id if v >= 5 else None, header.client_id or "",
        client_host(conn), req.session_timeout_ms,
        req.rebalance_timeout_ms if v >= 1 else req.session_timeout_ms, req.protocol_type, protocols,
        require_known_member_id=v >= 4, now_ms=now_ms(), reason=req.reason if v >= 8 else None,
        supports_skip_assignment=v >= 9)
    res = dict(await wait_for(conn, waiter))
    if v < 7 and res.get("protocol_name") is None:
        res["protocol_name"] = ""  # not nullable before v7
    if res.get("leader") is None:
        res["leader"] = ""
    if res["error_code"] == ErrorCode.MEMBER_ID_REQUIRED and v < 4:  # cannot happen; be safe
        res["error_code"] = int(ErrorCode.UNKNOWN_MEMBER_ID)
    res["throttle_time_ms"] = 0
    return res
