"""DescribeCluster (60): one broker, which is also the controller. v2 (KIP-1073) adds
include_fenced_brokers and each broker's is_fenced: this broker is never fenced, so both
answers are the same (as Kafka 4.1's, recorded: cluster_apis/describe_cluster)."""
from minikafka.protocol.errors import ErrorCode
from ..security import authorizer as acl
from .common import NO_AUTH_OPS


BROKER, CONTROLLER = 1, 2   # KIP-919 endpoint types


async def handle(conn, header, req):
    ctx = conn.ctx
    host, port = ctx.advertised_address(conn.listener_name)
    if header.api_version >= 1 and req.endpoint_type != BROKER:
        # KIP-919: a broker serves the broker endpoint type; the controller's is MISMATCHED, any
        # other UNSUPPORTED (Kafka 4.1's words, recorded: cluster_apis/describe_cluster)
        if req.endpoint_type == CONTROLLER:
            code, msg = ErrorCode.MISMATCHED_ENDPOINT_TYPE, ("The request was sent to an endpoint of type BROKER, "
                                                             "but we wanted an endpoint of type CONTROLLER")
        else:
            code, msg = ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, f"Unsupported endpoint type {req.endpoint_type}"
        return {"error_code": int(code), "error_message": msg,
                "endpoint_type": BROKER, "cluster_id": ctx.topics.cluster_id, "controller_id": -1, "brokers": []}
    return {
        "throttle_time_ms": 0, "error_code": 0, "error_message": None, "endpoint_type": 1,
        "cluster_id": ctx.topics.cluster_id, "controller_id": ctx.node_id,
        "brokers": [{"broker_id": ctx.node_id, "host": host, "port": port, "rack": None, "is_fenced": False}],
        "cluster_authorized_operations": (conn.authorized_operations(acl.CLUSTER, acl.CLUSTER_NAME)
                                          if req.include_cluster_authorized_operations else NO_AUTH_OPS),
    }
