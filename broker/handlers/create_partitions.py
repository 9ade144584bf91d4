"""CreatePartitions (37)."""
from collections import Counter

from minikafka.protocol.errors import ErrorCode, KafkaError
from ..security import authorizer as acl
from .create_topics import MAX_RECORDS_PER_USER_OP, validate_manual_partition_assignment


async def handle(conn, header, req):
    """Kafka (ControllerApis.createPartitions) answers the topics it passes to the controller in
    request order, then one INVALID_REQUEST entry per name given more than once."""
    ctx = conn.ctx
    seen = Counter(t.name for t in req.topics)
    out = [_grow(conn, ctx, t, req.validate_only) for t in req.topics if seen[t.name] == 1]
    out += [{"name": n, "error_code": int(ErrorCode.INVALID_REQUEST), "error_message": "Duplicate topic name."}
            for n, c in seen.items() if c > 1]
    return {"throttle_time_ms": 0, "results": out}


def _grow(conn, ctx, t, validate_only: bool) -> dict:
    res = {"name": t.name, "error_code": 0, "error_message": None}
    try:
        if not conn.authorize(acl.ALTER, acl.TOPIC, t.name):  # Kafka: ALTER on the topic, no message
            return dict(res, error_code=int(ErrorCode.TOPIC_AUTHORIZATION_FAILED))
        info = ctx.topics.topics().get(t.name)
        if info is None:  # Kafka gives no message
            return dict(res, error_code=int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
        if t.count == info.num_partitions:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {info.num_partitions} partition(s).")
        if t.count < info.num_partitions:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS, f"The topic {t.name} currently has "
                             f"{info.num_partitions} partition(s); {t.count} would not be an increase.")
        added = t.count - info.num_partitions
        if added > MAX_RECORDS_PER_USER_OP:
            # one PartitionRecord each, past the controller's limit: Kafka does not catch this
            # one, the topic gets UNKNOWN_SERVER_ERROR without a message (recorded)
            return dict(res, error_code=int(ErrorCode.UNKNOWN_SERVER_ERROR))
        if t.assignments is not None:
            if len(t.assignments) != added:
                raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Attempted to add {added} additional "
                                 f"partition(s), but only {len(t.assignments)} assignment(s) were specified.")
            for a in t.assignments:
                validate_manual_partition_assignment(ctx, a.broker_ids)
        if not validate_only:
            ctx.topics.add_partitions(t.name, t.count)
    except KafkaError as e:
        res.update(error_code=e.code, error_message=e.message)
    return res
