"""Shared by CreateAcls, DescribeAcls, DeleteAcls: the authorizer must be on (Kafka answers
SECURITY_DISABLED without one; with one, ALTER or DESCRIBE on the cluster is the
dispatcher's check, AUTHORIZATION)."""
from minikafka.protocol.errors import ErrorCode

SECURITY_DISABLED_MESSAGE = "No Authorizer is configured."


def refusal(conn):
    """(error code, message) when the request may not run, else None."""
    if conn.ctx.authorizer is None:
        return ErrorCode.SECURITY_DISABLED, SECURITY_DISABLED_MESSAGE
    return None


def filter_of(f) -> dict:
    return {"resource_type": f.resource_type_filter, "resource_name": f.resource_name_filter,
            "pattern_type": f.pattern_type_filter,
            "principal": f.principal_filter, "host": f.host_filter,
            "operation": f.operation, "permission": f.permission_type}
