"""ListGroups (16): every classic group; v4 filters by state (KIP-518), v5 by type (KIP-848)."""
from .group_common import coordinator

API_KEY = 16
VERSIONS = (0, 5)


async def handle(conn, header, req):
    v = header.api_version
    groups = coordinator(conn).list_groups(req.states_filter if v >= 4 else None,
                                           req.types_filter if v >= 5 else None)
    return {"throttle_time_ms": 0, "error_code": 0, "groups": groups}
