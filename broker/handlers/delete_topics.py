"""DeleteTopics (20): by name (v0-5) or by name/id (v6)."""
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.protocol.schema import ZERO_UUID
from ..context import now_ms
from ..security import authorizer as acl


async def handle(conn, header, req):
    """Kafka (ControllerApis.deleteTopics) refuses an entry with both a name and an id, or
    neither, and every entry of a name or id given twice (INVALID_REQUEST), and shuffles its
    answers (so that their positions tell nothing); ours follow the request."""
    ctx = conn.ctx
    if header.api_version >= 6:
        wanted = [(t.name, t.topic_id) for t in req.topics]
    else:
        wanted = [(n, ZERO_UUID) for n in req.topic_names]
    if not ctx.config["delete.topic.enable"]:
        # Kafka checks this before anything else and answers every entry as given, without a
        # message (before v3, which has no TOPIC_DELETION_DISABLED, the request is invalid)
        code = ErrorCode.TOPIC_DELETION_DISABLED if header.api_version >= 3 else ErrorCode.INVALID_REQUEST
        return {"throttle_time_ms": 0, "responses": [{"name": n, "topic_id": i, "error_code": int(code),
                                                      "error_message": None} for n, i in wanted]}
    names = [n for n, i in wanted if n is not None and i == ZERO_UUID]
    ids = [i for n, i in wanted if n is None and i != ZERO_UUID]
    out, duplicates = [], set()
    for name, topic_id in wanted:
        res = {"name": name, "topic_id": topic_id, "error_code": 0, "error_message": None}
        try:
            if name is None and topic_id == ZERO_UUID:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Neither topic name nor id were specified.")
            if name is not None and topic_id != ZERO_UUID:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "You may not specify both topic name and topic id.")
            if (names.count(name) if name is not None else ids.count(topic_id)) > 1:
                key = name if name is not None else topic_id
                if key in duplicates:
                    continue  # one answer per name or id given more than once
                duplicates.add(key)
                raise KafkaError(ErrorCode.INVALID_REQUEST,
                                 "Duplicate topic name." if name is not None else "Duplicate topic id.")
            if name is None:
                info = ctx.topics.by_id(topic_id)
                if info is None:
                    raise KafkaError(ErrorCode.UNKNOWN_TOPIC_ID)
                name = info.name
                if conn.authorize(acl.DESCRIBE, acl.TOPIC, name):  # Kafka: the name only to who may see it
                    res["name"] = name
            if not conn.authorize(acl.DELETE, acl.TOPIC, name):  # Kafka: before whether it exists
                raise KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")
            info = ctx.topics.topics().get(name)
            if info is None:
                raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            res["topic_id"] = info.topic_id
            ctx.topics.delete(name)
            # Kafka's group coordinator then tombstones the topic's committed offsets
            ctx.group_coordinator.on_topic_deleted(name, now_ms())
            ctx.replicas.notify_data()
        except KafkaError as e:
            res.update(error_code=e.code, error_message=e.message)
        out.append(res)
    return {"throttle_time_ms": 0, "responses": out}
