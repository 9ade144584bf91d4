"""OffsetCommit (8): store a group's consumed positions in __consumer_offsets.

Generation -1 with an empty member id is a "simple" commit (no group
management), accepted while the group is Empty. v2-4 carry a retention time
(an explicit expire timestamp); v10 names topics by id (KIP-848, unstable here)."""
from minikafka.protocol.errors import ErrorCode

from minikafka.coordinator.group import OffsetValue
from .common import resolve_topic
from ..security import authorizer as acl
from .group_common import coordinator, now_ms, partition_exists

API_KEY = 8
VERSIONS = (2, 9)
UNSTABLE_VERSIONS = (2, 10)


async def handle(conn, header, req):
    v = header.api_version
    broker = conn.broker
    now = now_ms()
    retention = req.retention_time_ms if 2 <= v <= 4 else -1
    offsets = {}
    errors = {}
    layout = []  # [(name, topic_id, [tp...])] in request order
    # Kafka: READ on the group (else every partition fails), then READ on each topic
    group_ok = conn.authorize(acl.READ, acl.GROUP, req.group_id)
    for t in req.topics or []:
        name, err = resolve_topic(broker, t.name, t.topic_id, v >= 10)
        if not group_ok:
            err = ErrorCode.GROUP_AUTHORIZATION_FAILED
        elif err is None and not conn.authorize(acl.READ, acl.TOPIC, name):
            err = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        tps = []
        for p in t.partitions or []:
            tp = (name if name is not None else "", p.partition_index)
            key = tp if name is not None else ("\0id", t.topic_id, p.partition_index)
            tps.append(key)
            if err is not None:
                errors[key] = err
            elif not partition_exists(broker, name, p.partition_index):
                errors[key] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                offsets[tp] = OffsetValue(
                    offset=p.committed_offset, leader_epoch=p.committed_leader_epoch,
                    metadata=p.committed_metadata if p.committed_metadata is not None else "",
                    commit_timestamp=now, expire_timestamp=now + retention if retention != -1 else -1)
        layout.append((t.name, t.topic_id, tps))
    result = coordinator(conn).commit_offsets(
        req.group_id, req.member_id or "", req.group_instance_id if v >= 7 else None,
        req.generation_id_or_member_epoch, offsets, now, api_version=v) if offsets else {}
    topics = []
    for name, topic_id, tps in layout:
        parts = []
        for key in tps:
            err = errors.get(key)
            if err is None:
                err = result.get(key, ErrorCode.NONE)
            parts.append({"partition_index": key[-1], "error_code": int(err)})
        topics.append({"name": name, "topic_id": topic_id, "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}
