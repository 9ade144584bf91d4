"""FindCoordinator (10): this broker coordinates every group and transactional id.

Like Kafka, the internal topic behind the coordinator is created on first use.

Kafka 4.1's answers (recorded: cluster_apis/find_coordinator/*): v1-3 carry the error's
message, "NONE" when there is none (Errors.NONE.message()); v4+'s entries an empty one. An
empty group or transactional id has a coordinator like any other. Key type 2 (SHARE, KIP-932)
is INVALID_REQUEST before v6; at v6 Kafka answers the share coordinator, which minikafka does
not serve (no share groups: INVALID_REQUEST, DIFFERENCES.md). An unknown key type fails the
whole request (FindCoordinatorRequest.getErrorResponse): INVALID_REQUEST with its message in
every entry.
"""
from minikafka.protocol.errors import ErrorCode
from ..security import authorizer as acl
from .common import AUTH_MESSAGES


GROUP, TRANSACTION, SHARE = 0, 1, 2
# Errors.INVALID_REQUEST.message(): the exception's default text
INVALID_REQUEST_MESSAGE = ("This most likely occurs because of a request being malformed by the client library or "
                           "the message was sent to an incompatible broker. See the broker logs for more details.")
NO_SHARE_GROUPS = "Share groups are not served"


def _one(ctx, conn, key, key_type, version):
    host, port = ctx.advertised_address(conn.listener_name)
    batched = version >= 4
    out = {"key": key, "node_id": ctx.node_id, "host": host, "port": port, "error_code": 0,
           "error_message": "" if batched else "NONE"}
    refused = dict(out, node_id=-1, host="", port=-1)
    if key_type == SHARE:
        # before v6 (per key, as Kafka's getCoordinator); at v6 minikafka has no share coordinator
        msg = NO_SHARE_GROUPS if version >= 6 else ("" if batched else INVALID_REQUEST_MESSAGE)
        return dict(refused, error_code=int(ErrorCode.INVALID_REQUEST), error_message=msg)
    # Kafka: DESCRIBE on the group or transactional id, before anything else is looked at
    if key_type == GROUP and not conn.authorize(acl.DESCRIBE, acl.GROUP, key):
        code = ErrorCode.GROUP_AUTHORIZATION_FAILED
    elif key_type == TRANSACTION and not conn.authorize(acl.DESCRIBE, acl.TRANSACTIONAL_ID, key):
        code = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    else:
        code = None
    if code is not None:
        # Kafka 4.1: the message in v0-3's single answer, an empty one in v4+'s list
        return dict(refused, error_code=int(code), error_message="" if batched else AUTH_MESSAGES[code])
    ctx.topics.ensure_coordinator_topic(key_type)
    return out


async def handle(conn, header, req):
    ctx = conn.ctx
    v = header.api_version
    if req.key_type not in (GROUP, TRANSACTION, SHARE):
        # CoordinatorType.forId throws: the whole request's error response
        refused = {"node_id": -1, "host": "", "port": -1, "error_code": int(ErrorCode.INVALID_REQUEST),
                   "error_message": INVALID_REQUEST_MESSAGE}
        if v >= 4:
            return {"throttle_time_ms": 0, "coordinators": [dict(refused, key=k) for k in req.coordinator_keys]}
        return dict(refused, throttle_time_ms=0)
    if v >= 4:
        return {"throttle_time_ms": 0, "coordinators": [_one(ctx, conn, k, req.key_type, v)
                                                        for k in req.coordinator_keys]}
    one = _one(ctx, conn, req.key, req.key_type, v)
    one.pop("key")
    return dict(one, throttle_time_ms=0)
