"""OffsetDelete (47): remove committed offsets of partitions a group no longer
consumes (KIP-496). Allowed for an empty group, or for topics a consumer
group is not subscribed to (else GROUP_SUBSCRIBED_TO_TOPIC)."""
from minikafka.protocol.errors import ErrorCode

from .group_common import coordinator, merge_by_topic_name, now_ms, partition_exists
from ..security import authorizer as acl


async def handle(conn, header, req):
    ctx = conn.ctx
    layout, wanted = [], []   # layout: [(name, None, [(partition, error or None: the coordinator's)])]
    for t in req.topics or []:  # (DELETE on the group: the dispatcher's, AUTHORIZATION)
        parts = []
        readable = conn.authorize(acl.READ, acl.TOPIC, t.name)
        for p in t.partitions or []:
            if not readable:
                parts.append((p.partition_index, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            elif not partition_exists(ctx, t.name, p.partition_index):
                parts.append((p.partition_index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            else:
                parts.append((p.partition_index, None))
                wanted.append((t.name, p.partition_index))
        layout.append((t.name, None, parts))
    top, result = coordinator(conn).delete_offsets(req.group_id, wanted, now_ms())
    if top != ErrorCode.NONE:
        return {"error_code": int(top), "throttle_time_ms": 0, "topics": []}
    answers = [result.get(tp, ErrorCode.NONE) for tp in wanted]
    return {"error_code": 0, "throttle_time_ms": 0, "topics": [
        {"name": name, "partitions": [{"partition_index": p, "error_code": err} for p, err in parts]}
        for name, _, parts in merge_by_topic_name(layout, answers)]}
