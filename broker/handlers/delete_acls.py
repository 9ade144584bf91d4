"""DeleteAcls (31): remove the bindings matching each filter; each filter lists what it removed."""
from minikafka.protocol.errors import ErrorCode
from ..security.authorizer import filter_matches
from .acls_common import filter_of, refusal


def error_response(req, code: ErrorCode, message: str | None, version: int) -> dict:
    """DeleteAclsRequest.getErrorResponse: the error in every filter's result."""
    return {"throttle_time_ms": 0, "filter_results": [
        {"error_code": int(code), "error_message": message, "matching_acls": []} for _ in req.filters]}


async def handle(conn, header, req):
    refused = refusal(conn)
    if refused:
        return error_response(req, *refused, header.api_version)
    bindings = conn.ctx.authorizer.bindings
    results, doomed = [], set()
    for flt in req.filters:
        f = filter_of(flt)
        matched = [b for b in bindings if filter_matches(f, b)]
        doomed.update(matched)
        results.append({"error_code": 0, "error_message": None, "matching_acls": [
            {"error_code": 0, "error_message": None, "resource_type": b.resource_type, "resource_name": b.resource_name,
             "pattern_type": b.pattern_type, "principal": b.principal, "host": b.host, "operation": b.operation,
             "permission_type": b.permission} for b in matched]})
    if doomed:
        conn.ctx.remove_acls(doomed)
    return {"throttle_time_ms": 0, "filter_results": results}
