"""DescribeLogDirs (35): each log dir with the size of every partition in it
(ReplicaManager.describeLogDirs). ``topics`` null means every partition; asked-for
partitions this broker lacks are left out. A partition moving to another dir
(AlterReplicaLogDirs, broker/log_dirs.py) is listed twice: its current replica, and its
future replica in the target dir with ``is_future_key`` and, as offset lag, how far the copy
is behind (the current replica's log end offset minus the copy's); a current replica's lag is
max(HW - LEO, 0) = 0. v4+: the volume's total and usable bytes (Java's FileStore.getTotalSpace
/ getUsableSpace, from statvfs)."""
import os

from minikafka.protocol.errors import ErrorCode


def _space(path: str) -> tuple[int, int]:
    st = os.statvfs(path)
    return st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize


async def handle(conn, header, req):
    wanted = None
    if req.topics is not None:
        wanted = {(t.topic, p) for t in req.topics for p in t.partitions}
    results = []
    for d, held in conn.ctx.log_dirs.describe(wanted):
        by_topic: dict[str, list] = {}
        for lg, future, lag in held:
            by_topic.setdefault(lg.topic, []).append({
                "partition_index": lg.partition, "partition_size": lg.size, "offset_lag": lag,
                "is_future_key": future})
        r = {"error_code": 0, "log_dir": d, "is_cordoned": False,
             "topics": [{"name": name, "partitions": parts} for name, parts in by_topic.items()]}
        try:
            r["total_bytes"], r["usable_bytes"] = _space(d)
        except OSError:
            r = {"error_code": int(ErrorCode.KAFKA_STORAGE_ERROR), "log_dir": d, "topics": []}
        results.append(r)
    return {"throttle_time_ms": 0, "error_code": 0, "results": results}
