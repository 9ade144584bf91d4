"""Partition moves between log dirs (AlterReplicaLogDirs): Kafka's future replicas and its
ReplicaAlterLogDirsThread, one task per moving partition.

A move creates the partition's future replica in the target dir (storage.log_manager) and copies
the current replica into it chunk by chunk, as a follower fetches: ``replica.fetch.max.bytes``
(1 MiB) from the copy's end, appended with the batches' own offsets and epochs in a worker
thread, while clients keep producing to and consuming from the current replica. When the copy is
within one chunk of the end and flushed, the rest is copied and the replicas are swapped in one
step on the event loop, with no append in between (Kafka does it under the partition's lock):
the current replica's last records are in the copy, fsynced, before the partition is assigned to
the target dir. The old replica's dir is then removed in a worker thread.

The copy is throttled by the dynamic broker config
``replica.alter.log.dirs.io.max.bytes.per.second`` (Kafka's alter-log-dirs replication quota: a
rate over ``replication.quota.window.num`` (11) windows of one second; no chunk is copied while
the rate is above it). A move to the partition's current dir cancels a move in progress, as one
to a third dir replaces it. A restart resumes the moves whose copy was under way (the future
replicas found at start)."""
from __future__ import annotations

import logging
import os
import time

import trio

from minikafka.protocol.errors import ErrorCode, KafkaError

log = logging.getLogger("minikafka.broker")

CHUNK = 1 << 20            # Kafka's replica.fetch.max.bytes default: one fetch of a partition
FLUSH_EVERY = 64 << 20     # fsync the copy this often, so a crash leaves little of it to recover
THROTTLE_CONFIG = "replica.alter.log.dirs.io.max.bytes.per.second"
QUOTA_WINDOWS, QUOTA_WINDOW_S = 11, 1.0   # Kafka's replication.quota.window.num / .size.seconds
LONG_MAX = 2**63 - 1


class Rate:
    """Kafka's Rate over sampled windows, as its quota check measures it: the bytes of the last
    ``windows`` windows over the time they span, at least ``windows - 1`` windows."""

    def __init__(self, windows: int = QUOTA_WINDOWS, window_s: float = QUOTA_WINDOW_S):
        self.windows, self.window_s = windows, window_s
        self.samples: list[list[float]] = []   # [window start, bytes]

    def record(self, n: int, now: float) -> None:
        if not self.samples or now - self.samples[-1][0] >= self.window_s:
            self.samples.append([now, 0])
        self.samples[-1][1] += n

    def measure(self, now: float) -> float:
        self.samples = [s for s in self.samples if now - s[0] < self.windows * self.window_s]
        if not self.samples:
            return 0.0
        elapsed = max(now - self.samples[0][0], (self.windows - 1) * self.window_s)
        return sum(s[1] for s in self.samples) / elapsed


class LogDirMover:
    """This node's log dirs as requests see them: what each holds (DescribeLogDirs) and the
    moves between them (AlterReplicaLogDirs)."""

    def __init__(self, logs, replicas, dynamic_configs, node_id: int):
        self._logs = logs  # the LogManager
        self._replicas = replicas
        self._dynamic_configs = dynamic_configs
        self._node_id = node_id
        self.rate = Rate()   # one quota for all moves, as Kafka's
        self._nursery = None
        self.fault_point = os.environ.get("MINIKAFKA_FAULT") or None  # docs/operations.md, "Fault injection"

    async def run(self) -> None:
        """The broker's background service (scheduler.Service): resume the moves a restart
        interrupted, then run each move AlterReplicaLogDirs starts, until shutdown."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            for future in self._logs.future_logs():
                self._spawn((future.topic, future.partition), future)
            await trio.sleep_forever()

    # ------------------------------------------------------------------ what they hold
    def describe(self, wanted: set | None) -> list[tuple[str, list[tuple]]]:
        """[(log dir, [(log, future, offset lag)])] for DescribeLogDirs, the partitions in
        ``wanted`` ((topic, partition) pairs; None: all), in partition order. A future replica's
        lag is how far its copy is behind the current replica."""
        lm = self._logs
        replicas = [(lg, lm.log_dir_of(lg.topic, lg.partition), False) for lg in lm.logs()]
        replicas += [(lg, lm.future_log_dir_of(lg.topic, lg.partition), True) for lg in lm.future_logs()]
        replicas.sort(key=lambda r: (r[0].topic, r[0].partition))
        out = []
        for d in lm.log_dirs:
            held = []
            for lg, where, future in replicas:
                if where != d or (wanted is not None and (lg.topic, lg.partition) not in wanted):
                    continue
                if future:
                    current = lm.get_log(lg.topic, lg.partition)
                    lag = current.log_end_offset - lg.log_end_offset if current is not None else -1
                else:
                    lag = max(lg.high_watermark - lg.log_end_offset, 0)
                held.append((lg, future, lag))
            out.append((d, held))
        return out

    def _spawn(self, tp, future) -> None:
        if self._nursery is not None:
            self._nursery.start_soon(self._move, tp, future)

    # ------------------------------------------------------------------ the request
    def alter(self, topic: str, partition: int, path: str) -> None:
        """One partition of an AlterReplicaLogDirs (Kafka's ReplicaManager.alterReplicaLogDirs):
        raises KafkaError with the partition's error."""
        lm = self._logs
        if len(f"{topic}-{partition}.{'0' * 32}-future") > 255:
            raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, "The topic name is too long.")
        lm.check_log_dir(path)
        tp = (topic, partition)
        future_dir = lm.future_log_dir_of(topic, partition)
        if future_dir is not None and future_dir != path:
            # another destination (the current dir included): the move in progress stops
            lm.abandon_future(tp)
        current = self._replicas.get_log(topic, partition)
        if current is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.")
        if lm.log_dir_of(topic, partition) == path or lm.future_log_dir_of(topic, partition) == path:
            return
        self._spawn(tp, lm.create_future(topic, partition, path))

    def _fault(self, point: str) -> None:
        """MINIKAFKA_FAULT: exit as kill -9 at that point of a swap."""
        if self.fault_point == point:
            log.error("fault injection: exiting at %s", point)
            os._exit(86)

    # ------------------------------------------------------------------ the copy
    def throttle(self) -> int:
        """The alter-log-dirs quota in bytes/s (this node's dynamic config, else the cluster-wide
        default; unthrottled without either)."""
        dynamic = self._dynamic_configs.broker
        for layer in (str(self._node_id), ""):
            value = dynamic.get(layer, {}).get(THROTTLE_CONFIG)
            if value is not None:
                try:
                    return int(value)
                except ValueError:
                    pass
        return LONG_MAX

    async def _wait_for_quota(self) -> None:
        await trio.lowlevel.checkpoint()  # (a turn for others at every step of a copy)
        while True:
            bound = self.throttle()
            if bound >= LONG_MAX or self.rate.measure(time.monotonic()) <= bound:
                return
            await trio.sleep(0.1)

    async def _move(self, tp, future) -> None:
        lm = self._logs
        flushed_bytes = 0
        swapped = False
        try:
            while True:
                await self._wait_for_quota()
                current = lm.get_log(*tp)
                if current is None or lm.future_log(*tp) is not future:
                    return  # cancelled, or the topic was deleted
                leo = current.log_end_offset
                if future.log_end_offset > leo:
                    await trio.to_thread.run_sync(future.truncate_to, leo)
                    continue
                start = current.log_start_offset
                if future.log_end_offset < start and future.log_end_offset < current.batch_base_at(start):
                    # the current replica's start passed the copy's end (retention, DeleteRecords)
                    await trio.to_thread.run_sync(future.truncate_fully_and_start_at, current.batch_base_at(start))
                    continue
                # (from the batch holding the log start offset when the copy starts inside it)
                r = (current.read(max(future.log_end_offset, start), CHUNK, max_offset=leo)
                     if future.log_end_offset < leo else None)
                # within a chunk of the end: the read reached the log end in the active segment
                near_end = (r is None or r.slice is None
                            or (len(r.slice) < CHUNK and future.log_end_offset >= current.active_segment.base_offset))
                if near_end and future.recovery_point < future.log_end_offset:
                    await trio.to_thread.run_sync(future.flush)  # (appends may come meanwhile)
                    continue
                if near_end and self._replicas.appending(*tp):
                    # a large append's bytes are being written: its offsets are not the log's yet
                    async with self._replicas.append_lock(*tp):
                        pass
                    continue
                if near_end:
                    # the rest, then the swap, without yielding: no append comes in between
                    if r is not None and r.slice is not None:
                        n = future.append_as_follower(r.slice.read())
                        self.rate.record(n, time.monotonic())
                    if future.log_end_offset != current.log_end_offset:
                        continue
                    lm.replace_current_with_future(*tp, fault=self._fault)
                    swapped = True
                    self._replicas.notify_data()
                    await trio.to_thread.run_sync(lm.remove_deleted_dir, current.dir)  # (renamed -delete)
                    return
                data = await trio.to_thread.run_sync(r.slice.read)
                if lm.future_log(*tp) is not future:
                    return
                n = await trio.to_thread.run_sync(future.append_as_follower, data)
                self.rate.record(n, time.monotonic())
                flushed_bytes += n
                if flushed_bytes >= FLUSH_EVERY:
                    flushed_bytes = 0
                    await trio.to_thread.run_sync(future.flush)
        except OSError as e:
            if lm.future_log(*tp) is future:
                self._replicas.log_dir_failed(e)
            # else: the copy was abandoned while a step ran (its dir renamed or removed)
        except KafkaError as e:
            if lm.future_log(*tp) is future:
                log.error("Moving %s-%d to another log dir failed: %s; the move is abandoned", tp[0], tp[1], e)
                lm.abandon_future(tp)
        finally:
            if not swapped and lm.future_log(*tp) is not future:
                # abandoned: close it here, where no step runs any more, and remove its files (at
                # shutdown the next start does: its dir is named -delete)
                future.close_handlers()
                await trio.to_thread.run_sync(lm.remove_deleted_dir, future.dir)
