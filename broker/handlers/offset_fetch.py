"""OffsetFetch (9): a group's committed offsets.

v0-7 ask for one group (topics null from v2 = every committed partition),
v8+ for several groups at once; v7+ `require_stable` answers
UNSTABLE_OFFSET_COMMIT for partitions with a pending transactional commit
(KIP-447); v10 names topics by id (unstable here)."""
from minikafka.protocol.errors import ErrorCode

from .common import resolve_topic
from ..security import authorizer as acl
from .group_common import coordinator, topic_id_of


def _fetch_group(conn, group_id, topics, require_stable, by_id, member_id=None, member_epoch=-1):
    """(group error, [ {name, topic_id, partitions:[...]} ])"""
    ctx = conn.ctx
    coord = coordinator(conn)
    wanted = None
    layout = []  # (name, topic_id, [(partition, error or None)])
    if topics is not None:
        wanted = []
        for t in topics:
            name, err = resolve_topic(ctx, getattr(t, "name", None), getattr(t, "topic_id", None), by_id)
            if err is None and not conn.authorize(acl.DESCRIBE, acl.TOPIC, name):
                err = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            parts = []
            for p in t.partition_indexes or []:
                parts.append((p, err))
                if err is None:
                    wanted.append((name, p))
            layout.append((name, getattr(t, "topic_id", None), parts))
    if conn.authorize(acl.DESCRIBE, acl.GROUP, group_id):  # Kafka: DESCRIBE on the group
        group_err, rows = coord.fetch_offsets(group_id, wanted, require_stable, member_id, member_epoch)
    else:
        group_err, rows = ErrorCode.GROUP_AUTHORIZATION_FAILED, []
    found = {tp: (val, err) for tp, val, err in rows}
    if topics is None:
        by_topic = {}
        for (name, p), (val, err) in found.items():
            if not conn.authorize(acl.DESCRIBE, acl.TOPIC, name):
                continue  # all topics asked for: those it may not describe are left out
            by_topic.setdefault(name, []).append((p, None))
        layout = [(name, topic_id_of(ctx, name) if by_id else None, sorted(parts))
                  for name, parts in sorted(by_topic.items())]
    out = []
    for name, topic_id, parts in layout:
        plist = []
        for p, err in parts:
            val, perr = found.get((name, p), (None, ErrorCode.NONE)) if err is None else (None, err)
            if group_err != ErrorCode.NONE:
                perr = group_err
            plist.append({
                "partition_index": p,
                "committed_offset": val.offset if val is not None else -1,
                "committed_leader_epoch": val.leader_epoch if val is not None else -1,
                "metadata": val.metadata if val is not None else "",
                "error_code": int(perr),
            })
        out.append({"name": name or "", "topic_id": topic_id, "partitions": plist})
    return group_err, out


async def handle(conn, header, req):
    v = header.api_version
    require_stable = bool(req.require_stable) if v >= 7 else False
    if v >= 8:
        groups = []
        for g in req.groups or []:
            err, topics = _fetch_group(conn, g.group_id, g.topics, require_stable, v >= 10,
                                       g.member_id if v >= 9 else None, g.member_epoch if v >= 9 else -1)
            groups.append({"group_id": g.group_id, "error_code": int(err),
                           "topics": topics if err == ErrorCode.NONE else []})
        return {"throttle_time_ms": 0, "groups": groups}
    topics = req.topics
    if v < 2 and topics is None:
        topics = []
    err, out = _fetch_group(conn, req.group_id, topics, require_stable, False)
    if v >= 2 and err != ErrorCode.NONE:
        out = []
    return {"throttle_time_ms": 0, "topics": out, "error_code": int(err)}
