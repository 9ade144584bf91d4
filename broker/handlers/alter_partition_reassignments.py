"""AlterPartitionReassignments (45, KIP-455; v1 KIP-860): on one node every partition's replica
set is this node, and it is the only target a reassignment can have (Kafka's controller,
ReplicationControlManager.alterPartitionReassignment): a target of exactly this node completes at
once; an empty list, a node named twice or any other node id (no such broker is registered) is
INVALID_REPLICA_ASSIGNMENT; a cancellation (replicas null) finds no reassignment in progress,
NO_REASSIGNMENT_IN_PROGRESS. Each partition is answered in request order. A timeout of 0 or less
fails the whole request with REQUEST_TIMED_OUT (the controller's deadline has passed), as does
a principal without ALTER on the cluster (authorization.py), with CLUSTER_AUTHORIZATION_FAILED
(recorded: reassign/*)."""
from minikafka.protocol.errors import ErrorCode

NOT_AUTHORIZED = "Request is not authorized: it needs ALTER permission."  # Kafka names the request


def error_response(req, code: ErrorCode, message: str | None = None, version: int = 0) -> dict:
    """AlterPartitionReassignmentsRequest.getErrorResponse: the error at the top and in every
    partition (refused by authorization.py: Kafka's controller's message, which names the request)."""
    if code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED:
        message = NOT_AUTHORIZED
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message,
            "allow_replication_factor_change": req.allow_replication_factor_change,
            "responses": [{"name": t.name, "partitions": [
                {"partition_index": p.partition_index, "error_code": int(code), "error_message": message}
                for p in t.partitions]} for t in req.topics]}


def _outcome(ctx, topics, name: str, p) -> tuple[ErrorCode, str | None]:
    info = topics.get(name)
    if info is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {name}."
    if not 0 <= p.partition_index < info.num_partitions:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {name}:{p.partition_index}."
    if p.replicas is None:
        return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None
    if not p.replicas:
        return ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty replica list."
    seen = set()
    for node in p.replicas:   # (validateManualPartitionAssignment: in list order)
        if node in seen:
            return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"The manual partition assignment includes the broker {node} more than once.")
        seen.add(node)
        if node != ctx.node_id:
            return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"The manual partition assignment includes broker {node}, but no such broker is registered.")
    # the target is the partition's replica set already (the replication factor is unchanged)
    return ErrorCode.NONE, None


async def handle(conn, header, req):
    ctx = conn.ctx
    if req.timeout_ms <= 0:
        return error_response(req, ErrorCode.REQUEST_TIMED_OUT)
    topics = ctx.topics.topics()
    responses = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            code, message = _outcome(ctx, topics, t.name, p)
            parts.append({"partition_index": p.partition_index, "error_code": int(code), "error_message": message})
        responses.append({"name": t.name, "partitions": parts})
    # Kafka's controller leaves the message null when it did anything, and empty when the
    # request named no topic at all (recorded: reassign/unknown)
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None if req.topics else "",
            "allow_replication_factor_change": req.allow_replication_factor_change, "responses": responses}
