"""OffsetCommit (8): store a group's consumed positions in __consumer_offsets.

Generation -1 with an empty member id is a "simple" commit (no group
management), accepted while the group is Empty. v2-4 carry a retention time
(an explicit expire timestamp); v10 names topics by id (KIP-848, unstable here)."""
from minikafka.protocol.errors import ErrorCode

from minikafka.coordinator.group import OffsetValue
from .common import resolve_topic
from ..security import authorizer as acl
from .group_common import coordinator, merge_refused_first, now_ms, partition_exists


def error_response(req, code: ErrorCode, message: str | None, version: int) -> dict:
    """OffsetCommitRequest.getErrorResponse: the code in every partition, topics as asked."""
    return {"throttle_time_ms": 0, "topics": [
        {"name": t.name, "topic_id": t.topic_id, "partitions": [
            {"partition_index": p.partition_index, "error_code": int(code)} for p in t.partitions or []]}
        for t in req.topics or []]}


async def handle(conn, header, req):
    v = header.api_version
    ctx = conn.ctx
    now = now_ms()
    retention = req.retention_time_ms if 2 <= v <= 4 else -1
    # one entry per request partition, in order: a partition named twice is answered and written
    # twice, as Kafka does (the later accepted one stays)
    entries = []     # [(tp, OffsetValue)] handed to the coordinator
    layout = []      # [(name, topic_id, [(partition, error or None: the coordinator's next answer)])]
    # (READ on the group: the dispatcher's, AUTHORIZATION), then READ on each topic
    for t in req.topics or []:
        name, err = resolve_topic(ctx, t.name, t.topic_id, v >= 10)
        if err is None and not conn.authorize(acl.READ, acl.TOPIC, name):
            err = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        parts = []
        for p in t.partitions or []:
            if err is not None:
                parts.append((p.partition_index, err))
            elif not partition_exists(ctx, name, p.partition_index):
                parts.append((p.partition_index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            else:
                parts.append((p.partition_index, None))
                entries.append(((name, p.partition_index), OffsetValue(
                    offset=p.committed_offset, leader_epoch=p.committed_leader_epoch,
                    metadata=p.committed_metadata if p.committed_metadata is not None else "",
                    commit_timestamp=now, expire_timestamp=now + retention if retention != -1 else -1)))
        layout.append((t.name, t.topic_id, parts))
    result = coordinator(conn).commit_offsets(
        req.group_id, req.member_id or "", req.group_instance_id if v >= 7 else None,
        req.generation_id_or_member_epoch, entries, now, api_version=v) if entries else []
    topics = [{"name": name, "topic_id": topic_id, "partitions": [
        {"partition_index": p, "error_code": err} for p, err in parts]}
        for name, topic_id, parts in merge_refused_first(layout, result)]
    return {"throttle_time_ms": 0, "topics": topics}
