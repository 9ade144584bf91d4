"""Shared by CreateAcls, DescribeAcls, DeleteAcls: the authorizer must be on (Kafka answers
SECURITY_DISABLED without one), and the caller needs ALTER (create, delete) or DESCRIBE on
the cluster."""
from minikafka.protocol.errors import ErrorCode
from ..security.authorizer import CLUSTER, CLUSTER_NAME

SECURITY_DISABLED_MESSAGE = "No Authorizer is configured."


def refusal(conn, operation: int):
    """(error code, message) when the request may not run, else None."""
    if conn.broker.authorizer is None:
        return int(ErrorCode.SECURITY_DISABLED), SECURITY_DISABLED_MESSAGE
    if not conn.authorize(operation, CLUSTER, CLUSTER_NAME):
        return int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED), "Cluster authorization failed."
    return None


def filter_of(f) -> dict:
    return {"resource_type": f.resource_type_filter, "resource_name": f.resource_name_filter,
            "pattern_type": f.pattern_type_filter,
            "principal": f.principal_filter, "host": f.host_filter,
            "operation": f.operation, "permission": f.permission_type}
