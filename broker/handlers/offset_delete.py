"""OffsetDelete (47): remove committed offsets of partitions a group no longer
consumes (KIP-496). Allowed for an empty group, or for topics a consumer
group is not subscribed to (else GROUP_SUBSCRIBED_TO_TOPIC)."""
from minikafka.protocol.errors import ErrorCode

from .group_common import coordinator, now_ms, partition_exists
from ..security import authorizer as acl

API_KEY = 47
VERSIONS = (0, 0)


async def handle(conn, header, req):
    broker = conn.broker
    layout, wanted, errors = [], [], {}
    if not conn.authorize(acl.DELETE, acl.GROUP, req.group_id):  # Kafka: DELETE on the group, READ on topics
        return {"error_code": int(ErrorCode.GROUP_AUTHORIZATION_FAILED), "throttle_time_ms": 0, "topics": []}
    for t in req.topics or []:
        tps = []
        readable = conn.authorize(acl.READ, acl.TOPIC, t.name)
        for p in t.partitions or []:
            tp = (t.name, p.partition_index)
            tps.append(tp)
            if not readable:
                errors[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif not partition_exists(broker, t.name, p.partition_index):
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                wanted.append(tp)
        layout.append((t.name, tps))
    top, result = coordinator(conn).delete_offsets(req.group_id, wanted, now_ms())
    if top != ErrorCode.NONE:
        return {"error_code": int(top), "throttle_time_ms": 0, "topics": []}
    # Kafka's KafkaApis answers the partitions it refuses itself (authorization, unknown partition)
    # first, in request order, and then merges the coordinator's answer into that: a topic
    # already there gets the coordinator's partitions after its refused ones, the others follow
    topics: dict[str, list] = {}
    for name, tps in layout:
        for tp in tps:
            if tp in errors:
                topics.setdefault(name, []).append({"partition_index": tp[1], "error_code": int(errors[tp])})
    for name, tps in layout:
        for tp in tps:
            if tp not in errors:
                topics.setdefault(name, []).append(
                    {"partition_index": tp[1], "error_code": int(result.get(tp, ErrorCode.NONE))})
    return {"error_code": 0, "throttle_time_ms": 0,
            "topics": [{"name": name, "partitions": parts} for name, parts in topics.items()]}
