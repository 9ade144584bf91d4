"""SyncGroup (14): the leader hands in the assignment; everyone gets theirs.

The response waits until the leader's SyncGroup arrives (CompletingRebalance)."""
from minikafka.protocol.errors import ErrorCode
from ..security import authorizer as acl
from .group_common import coordinator, now_ms, wait_for


async def handle(conn, header, req):
    v = header.api_version
    if v >= 5 and (req.protocol_type is None or req.protocol_name is None):
        # v5 made both mandatory (Kafka's SyncGroupRequest.areMandatoryProtocolTypeAndNamePresent),
        # checked before the group is looked at, and before its authorization
        return _refused(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    if not conn.authorize(acl.READ, acl.GROUP, req.group_id):
        return _refused(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    assignments = {a.member_id: a.assignment or b"" for a in req.assignments or []}
    waiter = coordinator(conn).sync_group(
        req.group_id, req.generation_id, req.member_id, req.group_instance_id if v >= 3 else None,
        req.protocol_type if v >= 5 else None, req.protocol_name if v >= 5 else None, assignments, now_ms())
    res = dict(await wait_for(conn, waiter))
    res["throttle_time_ms"] = 0
    if res.get("assignment") is None:
        res["assignment"] = b""
    return res


def _refused(code: ErrorCode) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(code), "protocol_type": None, "protocol_name": None,
            "assignment": b""}
