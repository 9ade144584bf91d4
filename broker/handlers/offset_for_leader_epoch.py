"""OffsetForLeaderEpoch (23): clients validate positions after leader changes (KIP-320).

Answered from the partition's leader epoch cache (storage.leader_epoch): the largest
epoch <= the one asked for and where it ends (the log end offset for the current
epoch), as Kafka's Partition.lastOffsetForLeaderEpoch.
"""
from minikafka.protocol.errors import ErrorCode, KafkaError
from .common import check_leader_epoch
from ..security import authorizer as acl


async def handle(conn, header, req):
    ctx = conn.ctx
    topics = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            r = {"error_code": 0, "partition": p.partition, "leader_epoch": -1, "end_offset": -1}
            try:
                if not conn.authorize(acl.DESCRIBE, acl.TOPIC, t.topic):  # Kafka: DESCRIBE on the topic
                    raise KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                lg = ctx.replicas.require_log(t.topic, p.partition)
                check_leader_epoch(lg, None if p.current_leader_epoch == -1 else p.current_leader_epoch)
                epoch, end = lg.end_offset_for_epoch(p.leader_epoch)
                r.update(leader_epoch=epoch, end_offset=end)
            except KafkaError as e:
                r["error_code"] = int(e.code)
            parts.append(r)
        topics.append({"topic": t.topic, "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}
