"""CreatePartitions (37)."""
from minikafka.protocol.errors import ErrorCode, KafkaError
from ..security import authorizer as acl

API_KEY = 37
VERSIONS = (0, 3)


async def handle(conn, header, req):
    broker = conn.broker
    out = []
    for t in req.topics:
        res = {"name": t.name, "error_code": 0, "error_message": None}
        try:
            if not conn.authorize(acl.ALTER, acl.TOPIC, t.name):  # Kafka: ALTER on the topic
                raise KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")
            info = broker.logs.topics().get(t.name)
            if info is None:
                raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            if t.count <= info.num_partitions:
                raise KafkaError(ErrorCode.INVALID_PARTITIONS,
                                 f"Topic currently has {info.num_partitions} partitions, which is higher than the requested {t.count}.")
            if t.assignments is not None:
                for a in t.assignments:
                    if list(a.broker_ids) != [broker.node_id]:
                        raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT)
            if not req.validate_only:
                broker.logs.add_partitions(t.name, t.count)
        except KafkaError as e:
            res.update(error_code=e.code, error_message=e.message)
        out.append(res)
    return {"throttle_time_ms": 0, "results": out}
