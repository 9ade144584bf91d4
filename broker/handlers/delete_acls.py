"""DeleteAcls (31): remove the bindings matching each filter; each filter lists what it removed."""
from ..security.authorizer import ALTER, filter_matches
from .acls_common import filter_of, refusal


async def handle(conn, header, req):
    refused = refusal(conn, ALTER)
    if refused:
        return {"throttle_time_ms": 0, "filter_results": [
            {"error_code": refused[0], "error_message": refused[1], "matching_acls": []} for _ in req.filters]}
    bindings = conn.broker.authorizer.bindings
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
        conn.broker.remove_acls(doomed)
    return {"throttle_time_ms": 0, "filter_results": results}
