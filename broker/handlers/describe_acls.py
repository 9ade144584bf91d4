"""DescribeAcls (29): the bindings matching a filter, grouped by resource pattern."""
from minikafka.protocol.errors import ErrorCode
from ..security.authorizer import filter_matches
from .acls_common import filter_of, refusal


def error_response(req, code: ErrorCode, message: str | None, version: int) -> dict:
    """DescribeAclsRequest.getErrorResponse: the error and its message, no resources."""
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message, "resources": []}


async def handle(conn, header, req):
    refused = refusal(conn)
    if refused:
        return error_response(req, *refused, header.api_version)
    f = filter_of(req)
    groups: dict = {}
    for b in conn.ctx.authorizer.bindings:
        if filter_matches(f, b):
            groups.setdefault((b.resource_type, b.resource_name, b.pattern_type), []).append(
                {"principal": b.principal, "host": b.host, "operation": b.operation, "permission_type": b.permission})
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": "",
            "resources": [{"resource_type": t, "resource_name": n, "pattern_type": p, "acls": acls}
                          for (t, n, p), acls in groups.items()]}
