"""DescribeTopicPartitions (75, KIP-966): topics and partitions with cursor paging;
the Java AdminClient (3.9+) describes topics with it.

As DescribeTopicPartitionsRequestHandler and KRaftMetadataCache do: an empty topic
list means every topic (unknown ones are then never reported); topics are served
in name order from the cursor on; at most ``response_partition_limit`` partitions
(capped at max.request.partition.size.limit, 2000, and at least 1) per response,
with ``next_cursor`` at the first partition left out. A cursor topic missing from
the asked-for list, or a negative cursor partition, fails the whole request with
INVALID_REQUEST. One node: leader 1, replicas/ISR [1], empty ELR lists. With no
authorizer Kafka reports every TOPIC operation as authorized.
"""
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.schema import ZERO_UUID
from ..security import authorizer as acl
from .common import NO_AUTH_OPS, topic_name_error


MAX_REQUEST_PARTITION_SIZE_LIMIT = 2000  # Kafka's max.request.partition.size.limit default
# AclEntry.supportedOperations(TOPIC): READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7,
# DESCRIBE 8, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, as a 32-bit field
TOPIC_OPERATIONS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))


def error_response(req, code: ErrorCode, message: str | None = None, version: int = 0) -> dict:
    """DescribeTopicPartitionsRequest.getErrorResponse: every asked-for topic with the error (no
    message field)."""
    return {"throttle_time_ms": 0, "next_cursor": None, "topics": [
        {"error_code": int(code), "name": t.name, "topic_id": ZERO_UUID, "is_internal": False, "partitions": []}
        for t in req.topics]}


async def handle(conn, header, req):
    ctx = conn.ctx
    topics = ctx.topics.topics()
    fetch_all = not req.topics
    cursor = req.cursor
    cursor_topic = cursor.topic_name if cursor is not None else ""
    if fetch_all:  # Kafka leaves out the topics the principal may not DESCRIBE
        names = {n for n in topics if n >= cursor_topic and conn.authorize(acl.DESCRIBE, acl.TOPIC, n)}
    else:
        if any(not t.name for t in req.topics):
            # an empty name fails Kafka's handler with an unexpected exception: the whole
            # request's error response, UNKNOWN_SERVER_ERROR (recorded)
            return error_response(req, ErrorCode.UNKNOWN_SERVER_ERROR)
        names = {t.name for t in req.topics if t.name >= cursor_topic}
        if cursor is not None and cursor.topic_name not in names:
            return error_response(req, ErrorCode.INVALID_REQUEST)
    if cursor is not None and cursor.partition_index < 0:
        return error_response(req, ErrorCode.INVALID_REQUEST)
    remaining = max(min(MAX_REQUEST_PARTITION_SIZE_LIMIT, req.response_partition_limit), 1)
    node = ctx.node_id
    out, next_cursor = [], None
    for name in sorted(names):
        if remaining == 0:
            next_cursor = {"topic_name": name, "partition_index": 0}
            break
        if not fetch_all and not conn.authorize(acl.DESCRIBE, acl.TOPIC, name):
            # without the operations (Kafka 4.1, recorded: cluster_apis/dtp/authorization)
            out.append({"error_code": int(ErrorCode.TOPIC_AUTHORIZATION_FAILED), "name": name, "topic_id": ZERO_UUID,
                        "is_internal": False, "partitions": [], "topic_authorized_operations": NO_AUTH_OPS})
            continue
        info = topics.get(name)
        ops = TOPIC_OPERATIONS if conn.ctx.authorizer is None else conn.authorized_operations(acl.TOPIC, name)
        if info is None:
            if not fetch_all:
                out.append({"error_code": int(topic_name_error(name) or ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
                            "name": name, "topic_id": ZERO_UUID, "is_internal": ctx.topics.is_internal(name),
                            "partitions": [], "topic_authorized_operations": TOPIC_OPERATIONS})
            continue
        start = cursor.partition_index if cursor is not None and name == cursor_topic else 0
        upper = min(info.num_partitions, start + remaining)
        parts = [{"error_code": 0, "partition_index": p, "leader_id": node,
                  "leader_epoch": ctx.topics.leader_epoch(name, p),
                  "replica_nodes": [node], "isr_nodes": [node], "eligible_leader_replicas": [],
                  "last_known_elr": [], "offline_replicas": []}
                 for p in range(start, upper)]
        out.append({"error_code": 0, "name": name, "topic_id": info.topic_id, "is_internal": ctx.topics.is_internal(name),
                    "partitions": parts, "topic_authorized_operations": ops})
        if upper < info.num_partitions:
            next_cursor = {"topic_name": name, "partition_index": upper}
            break
        remaining -= len(parts)
    return {"throttle_time_ms": 0, "topics": out, "next_cursor": next_cursor}
