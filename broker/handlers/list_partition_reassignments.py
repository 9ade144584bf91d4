"""ListPartitionReassignments (46, KIP-455): a reassignment on one node completes when it is made
(alter_partition_reassignments.py), so none is ever in progress and the answer lists nothing,
whatever it names (Kafka's controller lists only reassigning partitions of known topics). A
principal without DESCRIBE on the cluster (authorization.py) gets CLUSTER_AUTHORIZATION_FAILED, its named partitions
echoed with empty replica lists (ListPartitionReassignmentsRequest.getErrorResponse; recorded:
reassign/authorization)."""
from minikafka.protocol.errors import ErrorCode

NOT_AUTHORIZED = "Request is not authorized: it needs DESCRIBE permission."


def error_response(req, code: ErrorCode, message: str | None = None, version: int = 0) -> dict:
    if code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED:
        message = NOT_AUTHORIZED
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message, "topics": [
        {"name": t.name, "partitions": [{"partition_index": p, "replicas": [], "adding_replicas": [],
                                         "removing_replicas": []} for p in t.partition_indexes]}
        for t in (req.topics or [])]}


async def handle(conn, header, req):
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "topics": []}
