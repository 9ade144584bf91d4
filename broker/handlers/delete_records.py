"""DeleteRecords (21): advance a partition's log start offset (KIP-107).

Kafka's order of checks (KafkaApis.handleDeleteRecordsRequest,
ReplicaManager.deleteRecordsOnLocalLog, Partition.deleteRecordsOnLeader):
unknown partition -> UNKNOWN_TOPIC_OR_PARTITION; internal topic ->
INVALID_TOPIC_EXCEPTION; cleanup.policy without ``delete`` -> POLICY_VIOLATION;
offset -1 means the high watermark; another negative offset or one beyond the
high watermark -> OFFSET_OUT_OF_RANGE. Errors carry low watermark -1. An offset
at or below the current log start offset changes nothing and answers the current
log start offset. One replica: the low watermark is this log's start offset at
once, so nothing waits for ``timeout_ms``.
"""
from minikafka.protocol.errors import ErrorCode, KafkaError
from ..security import authorizer as acl


HIGH_WATERMARK = -1  # DeleteRecordsRequest.HIGH_WATERMARK
INVALID_LOW_WATERMARK = -1


def _delete(ctx, topic: str, partition: int, offset: int) -> int:
    lg = ctx.replicas.get_log(topic, partition)
    if lg is None:
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if ctx.topics.is_internal(topic):
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Cannot delete records of internal topic {topic}")
    if not lg.config.delete_enabled:
        raise KafkaError(ErrorCode.POLICY_VIOLATION,
                         f"Records of partition {topic}-{partition} can not be deleted due to the configured policy")
    target = lg.high_watermark if offset == HIGH_WATERMARK else offset
    if target < 0:
        raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE, f"The offset {target} for partition {topic}-{partition} is not valid")
    return lg.delete_records_before(target)


async def handle(conn, header, req):
    ctx = conn.ctx
    topics = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            r = {"partition_index": p.partition_index, "low_watermark": INVALID_LOW_WATERMARK, "error_code": 0}
            try:
                if not conn.authorize(acl.DELETE, acl.TOPIC, t.name):  # Kafka: DELETE on the topic
                    raise KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                r["low_watermark"] = _delete(ctx, t.name, p.partition_index, p.offset)
            except KafkaError as e:
                r["error_code"] = int(e.code)
            except OSError:
                r["error_code"] = int(ErrorCode.KAFKA_STORAGE_ERROR)
            parts.append(r)
        topics.append({"name": t.name, "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}
