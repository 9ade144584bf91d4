"""CreateTopics (19)."""
from collections import Counter

from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.storage.config import describe_configs, validate_topic_configs
from ..security import authorizer as acl
from .common import topic_name_error


# Kafka's controller writes a topic as one TopicRecord, one PartitionRecord per partition and one
# ConfigRecord per config, and refuses a user operation of more records than this
# (QuorumController.MAX_RECORDS_PER_USER_OP), and a request asking for more partitions in all:
# POLICY_VIOLATION, validate_only too (recorded: admin_topics/create/record_limit)
MAX_RECORDS_PER_USER_OP = 10000


async def handle(conn, header, req):
    """Kafka (ControllerApis.createTopics) answers the topics it passes to the controller in
    request order, then one INVALID_REQUEST entry per name given more than once, then the
    topics the principal may not create."""
    ctx = conn.ctx
    cluster_create = conn.authorize(acl.CREATE, acl.CLUSTER, acl.CLUSTER_NAME)
    seen = Counter(t.name for t in req.topics)
    duplicates = [n for n, c in seen.items() if c > 1]
    refused = [n for n in seen if n not in duplicates and not cluster_create
               and not conn.authorize(acl.CREATE, acl.TOPIC, n)]
    passed = [t for t in req.topics if seen[t.name] == 1 and t.name not in refused]
    if sum(_partitions(ctx, t) for t in passed) > MAX_RECORDS_PER_USER_OP:
        results = [_failed(t.name, ErrorCode.POLICY_VIOLATION, "Excessively large number of partitions per request.")
                   for t in passed]
    else:
        # a topic's configs and layout are answered only to who may DESCRIBE_CONFIGS it (Kafka: the
        # controller's describable topics; the others get TOPIC_AUTHORIZATION_FAILED for their configs)
        results = [_create(ctx, t, req.validate_only, conn.authorize(acl.DESCRIBE_CONFIGS, acl.TOPIC, t.name))
                   for t in passed]
    results += [_failed(n, ErrorCode.INVALID_REQUEST, "Duplicate topic name.") for n in duplicates]
    results += [_failed(n, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.") for n in refused]
    return {"throttle_time_ms": 0, "topics": results}


def _partitions(ctx, t) -> int:
    """The partitions a CreateTopics entry asks for (0 for a count that is refused anyway)."""
    if t.assignments:
        return len(t.assignments)
    return max(ctx.config["num.partitions"] if t.num_partitions == -1 else t.num_partitions, 0)


def _failed(name: str, code: ErrorCode, message: str | None) -> dict:
    return {"name": name, "error_code": int(code), "error_message": message, "num_partitions": -1,
            "replication_factor": -1, "configs": []}


def _create(ctx, t, validate_only: bool, describable: bool) -> dict:
    try:
        err = topic_name_error(t.name)
        if err is not None:
            raise KafkaError(err, f"Topic name {t.name!r} is illegal")
        if t.name in ctx.topics.topics():
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{t.name}' already exists.")
        if t.assignments:
            if t.num_partitions != -1:
                raise KafkaError(ErrorCode.INVALID_REQUEST,
                                 "A manual partition assignment was specified, but numPartitions was not set to -1.")
            if t.replication_factor != -1:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "A manual partition assignment was specified, "
                                                            "but replicationFactor was not set to -1.")
            if sorted(a.partition_index for a in t.assignments) != list(range(len(t.assignments))):
                raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 "partitions should be a consecutive 0-based integer sequence")
            for a in t.assignments:
                validate_manual_partition_assignment(ctx, a.broker_ids)
            n = len(t.assignments)
        else:
            n = ctx.config["num.partitions"] if t.num_partitions == -1 else t.num_partitions
        rf = 1 if t.replication_factor == -1 else t.replication_factor
        if n <= 0:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value.")
        if rf <= 0:
            raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0, or -1 to use the default value.")
        if rf > 1:
            raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR, f"Unable to replicate the partition {rf} time(s): The target replication factor of {rf} cannot be reached because only 1 broker(s) are registered.")
        configs = {c.name: c.value for c in t.configs}
        for k, v in configs.items():
            if v is None:
                raise KafkaError(ErrorCode.INVALID_CONFIG, f"Null value not supported for topic configs: {k}")
        validate_topic_configs(configs)
        if 1 + n + len(configs) > MAX_RECORDS_PER_USER_OP:
            raise KafkaError(ErrorCode.POLICY_VIOLATION, "Unable to perform excessively large batch operation.")
        # validate_only runs every check of a creation (a name colliding with an existing one's
        # included) and answers the topic id the topic would have had
        info = ctx.topics.create(t.name, n, configs, validate_only=True) if validate_only \
            else ctx.topics.create(t.name, n, configs)
    except KafkaError as e:
        return _failed(t.name, e.code, e.message)
    if not describable:
        return {"name": t.name, "topic_id": info.topic_id, "error_code": 0, "error_message": None,
                "num_partitions": -1, "replication_factor": -1, "configs": [],
                "topic_config_error_code": int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)}
    # Kafka lists the topic's configs by name
    entries = sorted(describe_configs(ctx.topics.default_log_config.with_overrides(configs)), key=lambda c: c.name)
    return {"name": t.name, "topic_id": info.topic_id, "error_code": 0, "error_message": None,
            "num_partitions": n, "replication_factor": 1,
            "configs": [{"name": c.name, "value": c.value, "read_only": c.read_only,
                         "config_source": int(c.source), "is_sensitive": c.is_sensitive} for c in entries]}


def validate_manual_partition_assignment(ctx, broker_ids) -> None:
    """Kafka's ReplicationControlManager.validateManualPartitionAssignment, for CreateTopics and
    CreatePartitions: a partition's replica list is not empty, names registered brokers (this
    one) and none twice."""
    ids = list(broker_ids)
    if not ids:
        raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                         "The manual partition assignment includes an empty replica list.")
    for b in ids:
        if b != ctx.node_id:
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment "
                             f"includes broker {b}, but no such broker is registered.")
    if len(ids) > 1:
        raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment "
                         f"includes the broker {ids[0]} more than once.")
