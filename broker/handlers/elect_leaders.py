"""ElectLeaders (43, KIP-460): one node is every partition's only replica and its
leader, so no election is ever needed (ReplicationControlManager.electLeader):
ELECTION_NOT_NEEDED per named partition (preferred: the preferred replica leads;
unclean: there is a leader), UNKNOWN_TOPIC_OR_PARTITION for partitions we lack.
``topic_partitions`` null means every partition: then, as in Kafka, partitions
needing no election are left out (each topic still listed, with no results).
An unknown election type fails the whole request with INVALID_REQUEST, a timeout of 0 or
less with REQUEST_TIMED_OUT (the controller's deadline has passed)."""
from minikafka.protocol.errors import ErrorCode


PREFERRED, UNCLEAN = 0, 1
NOT_NEEDED = "Leader election not needed for topic partition."  # Errors.ELECTION_NOT_NEEDED.message()
# Kafka's controller: ClusterAuthorizationException("Request <the request> is not authorized."), in
# every partition's result (recorded: cluster_apis/dtp/authorization)
NOT_AUTHORIZED = "Request is not authorized."


def error_response(req, code: ErrorCode, message: str | None = None, version: int = 0) -> dict:
    """ElectLeadersRequest.getErrorResponse: the error at the top and in every named partition
    (refused by AUTHORIZATION: Kafka's controller's message, not the error's default)."""
    if code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED:
        message = NOT_AUTHORIZED
    return {"throttle_time_ms": 0, "error_code": int(code), "replica_election_results": [
        {"topic": t.topic, "partition_result": [{"partition_id": p, "error_code": int(code), "error_message": message}
                                                for p in t.partitions]}
        for t in (req.topic_partitions or [])]}


async def handle(conn, header, req):
    ctx = conn.ctx
    topics = ctx.topics.topics()
    if req.timeout_ms <= 0:
        # the controller's deadline has passed before the election runs: TimeoutException, no
        # message (recorded: cluster_apis/elect/versions_and_types, timeouts 0 and -1)
        return error_response(req, ErrorCode.REQUEST_TIMED_OUT)
    if req.election_type not in (PREFERRED, UNCLEAN):
        return error_response(req, ErrorCode.INVALID_REQUEST, f"Unknown election type {req.election_type}")
    results = []
    if req.topic_partitions is None:
        results = [{"topic": name, "partition_result": []} for name in sorted(topics)]
    else:
        for t in req.topic_partitions:
            parts = []
            for p in t.partitions:
                info = topics.get(t.topic)
                if info is None:
                    code, msg = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {t.topic}"
                elif not 0 <= p < info.num_partitions:
                    code, msg = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {t.topic}-{p}"
                else:
                    code, msg = ErrorCode.ELECTION_NOT_NEEDED, NOT_NEEDED
                parts.append({"partition_id": p, "error_code": int(code), "error_message": msg})
            results.append({"topic": t.topic, "partition_result": parts})
    return {"throttle_time_ms": 0, "error_code": 0, "replica_election_results": results}
