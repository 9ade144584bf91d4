"""DeleteGroups (42): remove empty groups and their offsets (tombstones in __consumer_offsets)."""
from .group_common import coordinator, now_ms

API_KEY = 42
VERSIONS = (0, 2)


async def handle(conn, header, req):
    names = list(req.groups_names or [])
    result = coordinator(conn).delete_groups(names, now_ms())
    return {"throttle_time_ms": 0,
            "results": [{"group_id": g, "error_code": int(result[g])} for g in dict.fromkeys(names)]}
