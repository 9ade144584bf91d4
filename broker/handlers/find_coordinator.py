"""FindCoordinator (10): this broker coordinates every group and transactional id.

Like Kafka, the internal topic behind the coordinator is created on first use.
"""
from minikafka.protocol.errors import ErrorCode
from ..security import authorizer as acl
from .common import AUTH_MESSAGES

API_KEY = 10
VERSIONS = (0, 6)

GROUP, TRANSACTION = 0, 1


def _one(broker, conn, key, key_type, batched=False):
    host, port = broker.advertised_address(conn.listener_name)
    # Kafka 4.1 (recorded): v4's entries carry an empty message, v0-3's answer none
    out = {"key": key, "node_id": broker.node_id, "host": host, "port": port, "error_code": 0,
           "error_message": "" if batched else None}
    if key_type not in (GROUP, TRANSACTION):
        return dict(out, node_id=-1, host="", port=-1, error_code=ErrorCode.INVALID_REQUEST,
                    error_message=f"Unsupported key type {key_type}")
    if key_type == TRANSACTION and not key:
        return dict(out, node_id=-1, host="", port=-1, error_code=ErrorCode.INVALID_REQUEST,
                    error_message="Transactional id must not be empty")
    # Kafka: DESCRIBE on the group or transactional id, before anything else is looked at
    if key_type == GROUP and not conn.authorize(acl.DESCRIBE, acl.GROUP, key):
        code = ErrorCode.GROUP_AUTHORIZATION_FAILED
    elif key_type == TRANSACTION and not conn.authorize(acl.DESCRIBE, acl.TRANSACTIONAL_ID, key):
        code = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    else:
        code = None
    if code is not None:
        # Kafka 4.1: the message in v0-3's single answer, an empty one in v4+'s list
        return dict(out, node_id=-1, host="", port=-1, error_code=int(code),
                    error_message="" if batched else AUTH_MESSAGES[code])
    broker.ensure_coordinator_topic(key_type)
    return out


async def handle(conn, header, req):
    broker = conn.broker
    if header.api_version >= 4:
        return {"throttle_time_ms": 0, "coordinators": [_one(broker, conn, k, req.key_type, True) for k in req.coordinator_keys]}
    one = _one(broker, conn, req.key, req.key_type)
    one.pop("key")
    return dict(one, throttle_time_ms=0)
