"""DescribeAcls (29): the bindings matching a filter, grouped by resource pattern."""
from ..security.authorizer import DESCRIBE, filter_matches
from .acls_common import filter_of, refusal


async def handle(conn, header, req):
    refused = refusal(conn, DESCRIBE)
    if refused:
        return {"throttle_time_ms": 0, "error_code": refused[0], "error_message": refused[1], "resources": []}
    f = filter_of(req)
    groups: dict = {}
    for b in conn.broker.authorizer.bindings:
        if filter_matches(f, b):
            groups.setdefault((b.resource_type, b.resource_name, b.pattern_type), []).append(
                {"principal": b.principal, "host": b.host, "operation": b.operation, "permission_type": b.permission})
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": "",
            "resources": [{"resource_type": t, "resource_name": n, "pattern_type": p, "acls": acls}
                          for (t, n, p), acls in groups.items()]}
