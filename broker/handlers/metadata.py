"""Metadata (3): this single node leads every partition (at the partition's leader epoch);
auto-creates topics per config."""
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.protocol.schema import ZERO_UUID
from .common import CLUSTER_AUTHORIZED_OPS, NO_AUTH_OPS, TOPIC_AUTHORIZED_OPS, topic_name_error

API_KEY = 3
VERSIONS = (0, 12)


def topic_entry(broker, info, ops=NO_AUTH_OPS):
    parts = [{
        "error_code": 0, "partition_index": p, "leader_id": broker.node_id,
        "leader_epoch": broker.logs.leader_epoch(info.name, p),
        "replica_nodes": [broker.node_id], "isr_nodes": [broker.node_id], "offline_replicas": [],
    } for p in range(info.num_partitions)]
    return {"error_code": 0, "name": info.name, "topic_id": info.topic_id, "is_internal": broker.is_internal(info.name),
            "partitions": parts, "topic_authorized_operations": ops}


async def handle(conn, header, req):
    broker = conn.broker
    version = header.api_version
    topics = broker.logs.topics()
    ops = TOPIC_AUTHORIZED_OPS if version >= 8 and req.include_topic_authorized_operations else NO_AUTH_OPS
    out = []
    if req.topics is None or (version == 0 and not req.topics):
        out = [topic_entry(broker, info, ops) for info in topics.values()]
    else:
        allow_create = req.allow_auto_topic_creation if version >= 4 else True
        for t in req.topics:
            name = t.name
            if name is None and t.topic_id != ZERO_UUID:
                info = broker.topic_by_id(t.topic_id)
                if info is None:
                    out.append({"error_code": ErrorCode.UNKNOWN_TOPIC_ID, "name": None, "topic_id": t.topic_id,
                                "partitions": [], "topic_authorized_operations": NO_AUTH_OPS})
                else:
                    out.append(topic_entry(broker, info, ops))
                continue
            info = topics.get(name)
            if info is None:
                err = topic_name_error(name)
                if err is None and allow_create and broker.config["auto.create.topics.enable"] and not broker.is_internal(name):
                    try:
                        info = broker.create_topic(name)
                    except KafkaError as e:
                        err = e.code
                elif err is None:
                    err = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                if info is None:
                    out.append({"error_code": err, "name": name, "topic_id": ZERO_UUID, "partitions": [],
                                "topic_authorized_operations": NO_AUTH_OPS})
                    continue
            out.append(topic_entry(broker, info, ops))
    host, port = broker.advertised_address(conn.listener_name)
    return {
        "throttle_time_ms": 0,
        "brokers": [{"node_id": broker.node_id, "host": host, "port": port, "rack": None}],
        "cluster_id": broker.logs.cluster_id,
        "controller_id": broker.node_id,
        "topics": out,
        "cluster_authorized_operations": CLUSTER_AUTHORIZED_OPS
        if 8 <= version <= 10 and req.include_cluster_authorized_operations else NO_AUTH_OPS,
    }
