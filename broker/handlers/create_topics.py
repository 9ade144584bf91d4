"""CreateTopics (19)."""
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.storage.config import describe_configs, validate_topic_configs
from ..security import authorizer as acl
from .common import topic_name_error

API_KEY = 19
VERSIONS = (2, 7)


async def handle(conn, header, req):
    broker = conn.broker
    results = []
    cluster_create = conn.authorize(acl.CREATE, acl.CLUSTER, acl.CLUSTER_NAME)
    seen = {}
    for t in req.topics:
        seen[t.name] = seen.get(t.name, 0) + 1
    for t in req.topics:
        res = {"name": t.name, "error_code": 0, "error_message": None, "num_partitions": -1,
               "replication_factor": -1, "configs": None}
        try:
            if seen[t.name] > 1:
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"Create topics request from client contains multiple entries for topic {t.name}")
            if not cluster_create and not conn.authorize(acl.CREATE, acl.TOPIC, t.name):
                res["configs"] = []  # as Kafka 4.1 answers it (recorded)
                raise KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
            err = topic_name_error(t.name)
            if err is not None:
                raise KafkaError(err, f"Topic name {t.name!r} is illegal")
            if t.name in broker.logs.topics():
                raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{t.name}' already exists.")
            if t.assignments:
                if t.num_partitions != -1 or t.replication_factor != -1:
                    raise KafkaError(ErrorCode.INVALID_REQUEST, "Both numPartitions or replicationFactor and replicasAssignments were set.")
                for a in t.assignments:
                    if list(a.broker_ids) != [broker.node_id]:
                        raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Replica assignment {list(a.broker_ids)} is not valid on a single broker")
                n = len(t.assignments)
            else:
                n = broker.config["num.partitions"] if t.num_partitions == -1 else t.num_partitions
            rf = 1 if t.replication_factor == -1 else t.replication_factor
            if n <= 0:
                raise KafkaError(ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value.")
            if rf <= 0:
                raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0, or -1 to use the default value.")
            if rf > 1:
                raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR, f"Unable to replicate the partition {rf} time(s): The target replication factor of {rf} cannot be reached because only 1 broker(s) are registered.")
            configs = {c.name: c.value for c in t.configs}
            validate_topic_configs(configs)
            info = None if req.validate_only else broker.create_topic(t.name, n, configs)
            res.update(num_partitions=n, replication_factor=1)
            if info is not None:
                res["topic_id"] = info.topic_id
            res["configs"] = [
                {"name": c.name, "value": c.value, "read_only": c.read_only,
                 "config_source": int(c.source), "is_sensitive": c.is_sensitive}
                for c in describe_configs(broker.default_log_config.with_overrides(configs))
            ]
        except KafkaError as e:
            res.update(error_code=e.code, error_message=e.message)
        results.append(res)
    return {"throttle_time_ms": 0, "topics": results}
