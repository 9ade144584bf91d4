"""DescribeLogDirs (35): each log dir with the size of every partition in it
(ReplicaManager.describeLogDirs). ``topics`` null means every partition; asked-for
partitions this broker lacks are left out. No future logs (no
AlterReplicaLogDirs), so ``is_future_key`` is false and the offset lag is
max(HW - LEO, 0) = 0. v4+: the volume's total and usable bytes (Java's
FileStore.getTotalSpace / getUsableSpace, from statvfs)."""
import os

from minikafka.protocol.errors import ErrorCode


def _space(path: str) -> tuple[int, int]:
    st = os.statvfs(path)
    return st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize


async def handle(conn, header, req):
    broker = conn.broker
    lm = broker.logs
    wanted = None
    if req.topics is not None:
        wanted = {(t.topic, p) for t in req.topics for p in t.partitions}
    results = []
    for d in lm.log_dirs:
        by_topic: dict[str, list] = {}
        for lg in sorted(lm.logs(), key=lambda l: (l.topic, l.partition)):
            if lm.log_dir_of(lg.topic, lg.partition) != d:
                continue
            if wanted is not None and (lg.topic, lg.partition) not in wanted:
                continue
            by_topic.setdefault(lg.topic, []).append({
                "partition_index": lg.partition, "partition_size": lg.size,
                "offset_lag": max(lg.high_watermark - lg.log_end_offset, 0), "is_future_key": False})
        r = {"error_code": 0, "log_dir": d, "is_cordoned": False,
             "topics": [{"name": name, "partitions": parts} for name, parts in by_topic.items()]}
        try:
            r["total_bytes"], r["usable_bytes"] = _space(d)
        except OSError:
            r = {"error_code": int(ErrorCode.KAFKA_STORAGE_ERROR), "log_dir": d, "topics": []}
        results.append(r)
    return {"throttle_time_ms": 0, "error_code": 0, "results": results}
