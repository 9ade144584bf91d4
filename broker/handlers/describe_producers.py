"""DescribeProducers (61): active producers of partitions, from storage's producer state (KIP-664)."""
from minikafka.protocol.errors import ErrorCode, KafkaError
from ..security import authorizer as acl


async def handle(conn, header, req):
    ctx = conn.ctx
    topics = []
    for t in req.topics:
        parts = []
        for p in t.partition_indexes:
            r = {"partition_index": p, "error_code": 0, "error_message": None, "active_producers": []}
            try:
                if not conn.authorize(acl.READ, acl.TOPIC, t.name):  # Kafka: READ on the topic
                    raise KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                lg = ctx.replicas.require_log(t.name, p)
                r["active_producers"] = [
                    {"producer_id": e.producer_id, "producer_epoch": e.producer_epoch, "last_sequence": e.last_sequence,
                     "last_timestamp": e.last_timestamp, "coordinator_epoch": e.coordinator_epoch,
                     "current_txn_start_offset": e.current_txn_first_offset}
                    for e in lg.active_producers()
                ]
            except KafkaError as e:
                r.update(error_code=int(e.code), error_message=e.message)
            parts.append(r)
        topics.append({"name": t.name, "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}
