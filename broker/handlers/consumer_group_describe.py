"""ConsumerGroupDescribe (69, KIP-848): epochs, assignor, members with their current and
target assignments. A classic or unknown group is GROUP_ID_NOT_FOUND.

Authorization as Kafka's KafkaApis.handleConsumerGroupDescribe: DESCRIBE on each group (the
refused ones answered first, then the others); a group whose members' current or target
assignments name a topic the principal may not DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED
without its members, so that nobody learns of topics through a group."""
from minikafka.protocol.errors import ErrorCode

from ..security import authorizer as acl
from .common import NO_AUTH_OPS
from .group_common import GROUP_AUTHORIZED_OPS, coordinator

HIDDEN_TOPICS = "The group has described topic(s) that the client is not authorized to describe."


def _bare(gid: str, code: ErrorCode, message: str | None = None) -> dict:
    return {"error_code": int(code), "error_message": message, "group_id": gid, "group_state": "",
            "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "", "members": [],
            "authorized_operations": NO_AUTH_OPS}


def error_response(req, code, message, version) -> dict:
    """Every asked-for group with the error (Kafka's ConsumerGroupDescribeRequest.getErrorResponse)."""
    return {"throttle_time_ms": 0, "groups": [_bare(gid, code, message) for gid in req.group_ids or []]}


async def handle(conn, header, req):
    coord = coordinator(conn)
    checked = conn.ctx.authorizer is not None
    ops = GROUP_AUTHORIZED_OPS if req.include_authorized_operations else NO_AUTH_OPS
    refused, out = [], []
    for gid in req.group_ids or []:
        if checked and not conn.authorize(acl.DESCRIBE, acl.GROUP, gid):
            refused.append(_bare(gid, ErrorCode.GROUP_AUTHORIZATION_FAILED))
        elif not gid:
            out.append(_bare(gid or "", ErrorCode.INVALID_GROUP_ID))
        else:
            group = coord.consumer_describe(gid, ops)  # members carry member_type 1 (consumer) for v1
            if checked and req.include_authorized_operations and not group["error_code"]:
                group["authorized_operations"] = conn.authorized_operations(acl.GROUP, gid)
            out.append(group)
    if checked:
        topics = {tp["topic_name"] for g in out for m in g["members"]
                  for a in (m["assignment"], m["target_assignment"]) for tp in a["topic_partitions"]}
        hidden = {t for t in topics if not conn.authorize(acl.DESCRIBE, acl.TOPIC, t)}
        if hidden:
            out = [_bare(g["group_id"], ErrorCode.TOPIC_AUTHORIZATION_FAILED, HIDDEN_TOPICS)
                   if any(tp["topic_name"] in hidden for m in g["members"]
                          for a in (m["assignment"], m["target_assignment"]) for tp in a["topic_partitions"])
                   else g for g in out]
    return {"throttle_time_ms": 0, "groups": refused + out}
