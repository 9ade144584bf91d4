"""ConsumerGroupDescribe (69, KIP-848): epochs, assignor, members with their current and
target assignments. A classic or unknown group is GROUP_ID_NOT_FOUND."""
from minikafka.protocol.errors import ErrorCode

from .common import NO_AUTH_OPS
from .group_common import GROUP_AUTHORIZED_OPS, coordinator


async def handle(conn, header, req):
    coord = coordinator(conn)
    ops = GROUP_AUTHORIZED_OPS if req.include_authorized_operations else NO_AUTH_OPS
    out = []
    for gid in req.group_ids or []:
        if not gid:
            out.append({"error_code": int(ErrorCode.INVALID_GROUP_ID), "error_message": None, "group_id": gid or "",
                        "group_state": "", "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "",
                        "members": [], "authorized_operations": NO_AUTH_OPS})
            continue
        out.append(coord.consumer_describe(gid, ops))  # members carry member_type 1 (consumer) for v1
    return {"throttle_time_ms": 0, "groups": out}
