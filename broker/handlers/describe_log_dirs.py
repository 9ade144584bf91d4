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
    broker = conn.broker
    lm = broker.logs
    wanted = None
    if req.topics is not None:
        wanted = {(t.topic, p) for t in req.topics for p in t.partitions}
    replicas = [(lg, lm.log_dir_of(lg.topic, lg.partition), False) for lg in lm.logs()]
    replicas += [(lg, lm.future_log_dir_of(lg.topic, lg.partition), True) for lg in lm.future_logs()]
    replicas.sort(key=lambda r: (r[0].topic, r[0].partition))
    results = []
    for d in lm.log_dirs:
        by_topic: dict[str, list] = {}
        for lg, where, future in replicas:
            if where != d or (wanted is not None and (lg.topic, lg.partition) not in wanted):
                continue
            if future:
                current = lm.get_log(lg.topic, lg.partition)
                lag = current.log_end_offset - lg.log_end_offset if current is not None else -1
            else:
                lag = max(lg.high_watermark - lg.log_end_offset, 0)
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
