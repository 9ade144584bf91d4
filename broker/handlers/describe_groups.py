"""DescribeGroups (15): state, protocol and members of classic groups.

Member metadata and assignments are only shown for a Stable group (as Kafka).
An unknown group is reported as state Dead (v0-5) or GROUP_ID_NOT_FOUND (v6, KIP-1043)."""
from minikafka.protocol.errors import ErrorCode

from .common import NO_AUTH_OPS
from .group_common import GROUP_AUTHORIZED_OPS, coordinator
from ..security import authorizer as acl


async def handle(conn, header, req):
    v = header.api_version
    coord = coordinator(conn)
    ops = GROUP_AUTHORIZED_OPS if v >= 3 and req.include_authorized_operations else NO_AUTH_OPS
    out = []
    for gid in req.groups or []:
        if gid is None:
            out.append({"error_code": int(ErrorCode.INVALID_GROUP_ID), "group_id": "", "group_state": "",
                        "protocol_type": "", "protocol_data": "", "members": [], "authorized_operations": ops})
            continue
        if not conn.authorize(acl.DESCRIBE, acl.GROUP, gid):  # Kafka: DESCRIBE on each group
            out.append({"error_code": int(ErrorCode.GROUP_AUTHORIZATION_FAILED), "group_id": gid, "group_state": "",
                        "protocol_type": "", "protocol_data": "", "members": [], "authorized_operations": NO_AUTH_OPS})
            continue
        if conn.ctx.authorizer is not None and ops != NO_AUTH_OPS:
            ops = conn.authorized_operations(acl.GROUP, gid)
        if coord.is_consumer_group(gid):
            # KIP-848 groups are described by ConsumerGroupDescribe; Kafka 4.1 answers so
            entry = {"error_code": 0, "group_id": gid, "group_state": "Dead", "protocol_type": "",
                     "protocol_data": "", "members": [], "authorized_operations": ops}
            if v >= 6:
                entry.update(error_code=int(ErrorCode.GROUP_ID_NOT_FOUND),
                             error_message=f"Group {gid} is not a classic group.", authorized_operations=NO_AUTH_OPS)
            out.append(entry)
            continue
        summary = coord.describe_group(gid)
        if summary is None:
            entry = {"error_code": 0, "group_id": gid, "group_state": "Dead", "protocol_type": "",
                     "protocol_data": "", "members": [], "authorized_operations": ops}
            if v >= 6:
                entry.update(error_code=int(ErrorCode.GROUP_ID_NOT_FOUND),
                             error_message=f"Group {gid} not found.")
            out.append(entry)
            continue
        out.append(dict(summary, error_code=0, authorized_operations=ops))
    return {"throttle_time_ms": 0, "groups": out}
