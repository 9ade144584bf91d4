"""LeaveGroup (13): v0-2 one member by id; v3+ a batch of members, each by
member id and/or group.instance.id (KIP-345 admin removal by instance id)."""
from minikafka.protocol.errors import ErrorCode

from .group_common import coordinator, now_ms


async def handle(conn, header, req):
    v = header.api_version
    if v < 3:
        members = [(req.member_id, None, None)]
    else:
        members = [(m.member_id, m.group_instance_id, m.reason if v >= 5 else None) for m in req.members or []]
    reason = next((r for _, _, r in members if r), None)
    top, errors = coordinator(conn).leave_group(req.group_id, [(mid, iid) for mid, iid, _ in members],
                                                now_ms(), reason=reason)
    if v < 3:
        if top == ErrorCode.NONE and errors:
            top = errors[0]
        return {"throttle_time_ms": 0, "error_code": int(top)}
    return {"throttle_time_ms": 0, "error_code": int(top),
            "members": [{"member_id": mid, "group_instance_id": iid, "error_code": int(err)}
                        for (mid, iid, _), err in zip(members, errors)] if top == ErrorCode.NONE else []}
