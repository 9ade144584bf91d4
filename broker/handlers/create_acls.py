"""CreateAcls (30): ACL bindings, validated as Kafka's AclControlManager, stored durably."""
from minikafka.protocol.errors import ErrorCode
from ..security.authorizer import AclBinding, validate_binding
from .acls_common import refusal


def error_response(req, code: ErrorCode, message: str | None, version: int) -> dict:
    """CreateAclsRequest.getErrorResponse: the error in every creation's result."""
    return {"throttle_time_ms": 0, "results": [{"error_code": int(code), "error_message": message}
                                               for _ in req.creations]}


async def handle(conn, header, req):
    refused = refusal(conn)
    if refused:
        return error_response(req, *refused, header.api_version)
    results, new = [], []
    if any(c.operation in (0, 1) or c.permission_type in (0, 1) for c in req.creations):
        # Kafka 4.1 fails the whole request with an unknown server error (recorded): an operation
        # or permission ANY/UNKNOWN cannot be turned into an ACL
        return {"throttle_time_ms": 0, "results": [{"error_code": int(ErrorCode.UNKNOWN_SERVER_ERROR),
                                                    "error_message": None} for _ in req.creations]}
    for c in req.creations:
        b = AclBinding(c.resource_type, c.resource_name, c.resource_pattern_type,
                       c.principal, c.host, c.operation, c.permission_type)
        why = validate_binding(b)
        if why:
            results.append({"error_code": int(ErrorCode.INVALID_REQUEST), "error_message": why})
        else:
            new.append(b)
            results.append({"error_code": 0, "error_message": ""})
    if new:
        conn.ctx.add_acls(new)
    return {"throttle_time_ms": 0, "results": results}
