"""DescribeCluster (60): one broker, which is also the controller."""
from .common import CLUSTER_AUTHORIZED_OPS, NO_AUTH_OPS

API_KEY = 60
VERSIONS = (0, 1)


async def handle(conn, header, req):
    broker = conn.broker
    host, port = broker.advertised_address(conn.listener_name)
    if header.api_version >= 1 and req.endpoint_type not in (1,):
        # KIP-919: only the broker endpoint type is served here
        return {"error_code": 114, "error_message": "The request was sent to an endpoint of type BROKER",
                "endpoint_type": 1, "cluster_id": broker.logs.cluster_id, "controller_id": -1, "brokers": []}
    return {
        "throttle_time_ms": 0, "error_code": 0, "error_message": None, "endpoint_type": 1,
        "cluster_id": broker.logs.cluster_id, "controller_id": broker.node_id,
        "brokers": [{"broker_id": broker.node_id, "host": host, "port": port, "rack": None, "is_fenced": False}],
        "cluster_authorized_operations": CLUSTER_AUTHORIZED_OPS if req.include_cluster_authorized_operations
        else NO_AUTH_OPS,
    }
