"""Metadata (3): this single node leads every partition (at the partition's leader epoch);
auto-creates topics per config. v13 adds a top-level error code (KIP-1102, REBOOTSTRAP_REQUIRED),
which a broker that is not a proxy leaves at 0 (recorded: newest/metadata_v13)."""
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.protocol.schema import ZERO_UUID
from ..security import authorizer as acl
from .common import NO_AUTH_OPS, topic_name_error


def topic_entry(ctx, info, ops=NO_AUTH_OPS):
    parts = [{
        "error_code": 0, "partition_index": p, "leader_id": ctx.node_id,
        "leader_epoch": ctx.topics.leader_epoch(info.name, p),
        "replica_nodes": [ctx.node_id], "isr_nodes": [ctx.node_id], "offline_replicas": [],
    } for p in range(info.num_partitions)]
    return {"error_code": 0, "name": info.name, "topic_id": info.topic_id, "is_internal": ctx.topics.is_internal(info.name),
            "partitions": parts, "topic_authorized_operations": ops}


def _refused(name, code) -> dict:
    return {"error_code": code, "name": name, "topic_id": ZERO_UUID, "is_internal": False, "partitions": [],
            "topic_authorized_operations": NO_AUTH_OPS}


def error_response(req, code: ErrorCode, message: str | None = None, version: int = 0) -> dict:
    """MetadataRequest.getErrorResponse: every asked-for topic with the error, no brokers (and
    nowhere for a message)."""
    return {"throttle_time_ms": 0, "brokers": [], "cluster_id": None, "controller_id": -1,
            "topics": [{"error_code": int(code), "name": t.name or "", "topic_id": t.topic_id, "is_internal": False,
                        "partitions": [], "topic_authorized_operations": NO_AUTH_OPS} for t in req.topics or []],
            "cluster_authorized_operations": NO_AUTH_OPS}


async def handle(conn, header, req):
    ctx = conn.ctx
    version = header.api_version
    topics = ctx.topics.topics()
    want_ops = version >= 8 and req.include_topic_authorized_operations

    def entry(info):
        ops = conn.authorized_operations(acl.TOPIC, info.name) if want_ops else NO_AUTH_OPS
        return topic_entry(ctx, info, ops)

    def describable(name):
        return conn.authorize(acl.DESCRIBE, acl.TOPIC, name)

    out = []
    if req.topics is not None and version < 12 and any(t.name is None or t.topic_id != ZERO_UUID for t in req.topics):
        # KafkaApis: topic ids (and null names) only from v12 on: InvalidRequestException, the
        # whole request's error response (recorded: cluster_apis/metadata/topic_ids)
        return error_response(req, ErrorCode.INVALID_REQUEST)
    if req.topics is not None and any(t.name is None and t.topic_id == ZERO_UUID for t in req.topics):
        # neither a name nor an id: Kafka's handler fails unexpectedly (recorded:
        # cluster_apis/metadata/internal_and_null_name)
        return error_response(req, ErrorCode.UNKNOWN_SERVER_ERROR)
    ids = [] if req.topics is None else list(dict.fromkeys(t.topic_id for t in req.topics if t.topic_id != ZERO_UUID))
    if req.topics is None or (version == 0 and not req.topics):
        # every topic: those the principal may not describe are left out (Kafka's KafkaApis)
        out = [entry(info) for info in topics.values() if describable(info.name)]
    else:
        # Kafka's order (KafkaApis.handleTopicMetadataRequest): unknown topic ids, the topics it
        # knows, the unknown names, then those the principal may not create or describe
        allow_create = req.allow_auto_topic_creation if version >= 4 else True
        unknown_ids, known, missing, refused = [], [], [], []
        for topic_id in ids:
            # any topic id: Kafka looks up the ids only and ignores every name in the request
            info = ctx.topics.by_id(topic_id)
            if info is None:
                unknown_ids.append({"error_code": ErrorCode.UNKNOWN_TOPIC_ID, "name": None, "topic_id": topic_id,
                                    "partitions": [], "topic_authorized_operations": NO_AUTH_OPS})
            elif not describable(info.name):
                refused.append(dict(_refused(None, ErrorCode.TOPIC_AUTHORIZATION_FAILED), topic_id=topic_id))
            else:
                known.append(entry(info))
        # the names, each once (a set in Kafka)
        for name in ([] if ids else dict.fromkeys(t.name for t in req.topics)):
            if not describable(name):
                refused.append(_refused(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                continue
            info = topics.get(name)
            if info is not None:
                known.append(entry(info))
                continue
            err = topic_name_error(name)
            if err is None and allow_create and ctx.config["auto.create.topics.enable"] and not ctx.topics.is_internal(name):
                if not (conn.authorize(acl.CREATE, acl.CLUSTER, acl.CLUSTER_NAME)
                        or conn.authorize(acl.CREATE, acl.TOPIC, name)):
                    refused.append(_refused(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED))  # may describe, not create
                    continue
                # Kafka's broker asks the controller to create the topic and answers at once,
                # before it knows the topic: UNKNOWN_TOPIC_OR_PARTITION this time
                err = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                try:
                    ctx.topics.create(name)
                except KafkaError as e:
                    err = e.code
            elif err is None:
                err = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            # Kafka flags an internal topic's name as internal even when the topic is gone (recorded)
            missing.append({"error_code": err, "name": name, "topic_id": ZERO_UUID, "partitions": [],
                            "is_internal": ctx.topics.is_internal(name), "topic_authorized_operations": NO_AUTH_OPS})
        out = unknown_ids + known + missing + refused
    host, port = ctx.advertised_address(conn.listener_name)
    return {
        "throttle_time_ms": 0,
        "brokers": [{"node_id": ctx.node_id, "host": host, "port": port, "rack": None}],
        "cluster_id": ctx.topics.cluster_id,
        "controller_id": ctx.node_id,
        "topics": out,
        "cluster_authorized_operations": (conn.authorized_operations(acl.CLUSTER, acl.CLUSTER_NAME)
                                          if 8 <= version <= 10 and req.include_cluster_authorized_operations
                                          else NO_AUTH_OPS),
        "error_code": 0,  # v13 (KIP-1102): Kafka's broker sets no top-level error
    }
