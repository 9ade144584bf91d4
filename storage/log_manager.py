"""All partition logs of the broker, across ``log.dirs`` (Kafka's ``LogManager``).

Per log dir: ``meta.properties`` (version, node.id, cluster.id, directory.id),
``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``,
``replication-offset-checkpoint``, ``.kafka_cleanshutdown`` (written by
:meth:`LogManager.close`, removed after the next load), ``.lock`` (held
exclusively while a broker uses the dir, see :class:`DirLock`), and one
``<topic>-<partition>`` directory per partition.

Topic metadata (id, partition count, config overrides, each partition's leader
epoch) is what Kafka keeps in its KRaft metadata log; we keep it in
``minikafka-topics.json`` in the first log dir (our analogue of
``metadata.log.dir``), written atomically.

Leader epochs: a partition starts at 0; every broker start moves every partition
on by 2, as a one-node KRaft Kafka does on a restart (the controller fences the
broker, the partition loses its leader: + 1; the broker is unfenced and elected
again: + 1).
"""
from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import shutil
import time
import uuid
from typing import TYPE_CHECKING, Callable, Iterator, Mapping, NamedTuple

from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.storage.checkpoint import (LOG_START_OFFSET_CHECKPOINT, META_PROPERTIES, RECOVERY_POINT_CHECKPOINT,
                                REPLICATION_OFFSET_CHECKPOINT, OffsetCheckpointFile, atomic_write, fsync_dir,
                                has_clean_shutdown, random_kafka_uuid, read_partition_metadata,
                                read_properties, remove_clean_shutdown, uuid_from_base64, uuid_to_base64,
                                write_clean_shutdown, write_properties)
from minikafka.storage.config import ConfigEntry, LogConfig, describe_configs, validate_topic_configs

if TYPE_CHECKING:
    from minikafka.storage.log import UnifiedLog

log = logging.getLogger("minikafka.storage")

TOPICS_FILE = "minikafka-topics.json"
CHECKPOINT_FILES = (RECOVERY_POINT_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT)
MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")


LOCK_FILE = ".lock"


class LogDirLockedError(RuntimeError):
    """Another process holds a log dir's ``.lock``: this broker must not start."""


class DirLock:
    """Kafka's ``FileLock`` on ``<log.dir>/.lock``: an exclusive POSIX record lock
    (``fcntl``, as Java's ``FileChannel.tryLock``), held for the process lifetime so
    that two brokers never write one directory. The kernel drops it when the holder
    dies, even by ``kill -9``, so a stale file never blocks a restart. The holder
    writes its pid into the file, so the refusal can name it."""

    def __init__(self, log_dir: str):
        self.log_dir = log_dir
        self.path = os.path.join(log_dir, LOCK_FILE)
        self._fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = _read_pid(fd)
            os.close(fd)
            raise LogDirLockedError(
                f"Failed to acquire lock on file {LOCK_FILE} in {self.log_dir}. A Kafka instance in another "
                f"process or thread is using this directory"
                + (f" (pid {holder})." if holder else ".")) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the lock
            self._fd = None


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


class TopicInfo(NamedTuple):
    name: str
    topic_id: uuid.UUID
    num_partitions: int
    configs: dict[str, str]          # per-topic overrides only


def validate_topic_name(name: str) -> None:
    """Kafka's ``Topic.validate``: INVALID_TOPIC_EXCEPTION if illegal."""
    if not name:
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, 'Topic name cannot be "." or ".."')
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                         f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} characters, "
                         f"topic name: {name}")
    if not _LEGAL_TOPIC.match(name):
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                         f'Topic name "{name}" is illegal, it contains a character other than ASCII '
                         f"alphanumerics, '.', '_' and '-'")


def _in_parallel(fn, items: list) -> None:
    """``fn`` over ``items`` in a few threads (file system work that waits on the disk; the
    items must be independent). Errors are raised."""
    if len(items) <= 1:
        for item in items:
            fn(item)
        return
    from concurrent.futures import ThreadPoolExecutor  # (topic creation only: not on the start path)
    with ThreadPoolExecutor(max_workers=min(8, len(items))) as pool:
        for f in [pool.submit(fn, item) for item in items]:
            f.result()


def parse_future_dir_name(name: str) -> tuple[str, int] | None:
    """``"t-3.<32 hex digits>-future"`` -> ``("t", 3)`` (Kafka's future replica dir names); None
    for anything else."""
    from minikafka.storage.log import parse_topic_partition_name
    if not name.endswith("-future"):
        return None
    base, _, unique = name[:-len("-future")].rpartition(".")
    if not base or not re.fullmatch(r"[0-9a-f]{32}", unique):
        return None
    return parse_topic_partition_name(base)


def _unify_collision_chars(name: str) -> str:
    return name.replace(".", "_")


class LogManager:
    def __init__(self, log_dirs: list[str], default_config: LogConfig, node_id: int = 1):
        if not log_dirs:
            raise ValueError("at least one log dir is required")
        self.log_dirs = [os.path.abspath(d) for d in log_dirs]
        self.default_config = default_config
        self.node_id = node_id
        self.cluster_id: str | None = None
        self.directory_ids: dict[str, str] = {}
        self._topics: dict[str, TopicInfo] = {}
        self._configs: dict[str, LogConfig] = {}
        self._logs: dict[tuple[str, int], UnifiedLog] = {}
        # each partition's leader epoch (the metadata's; the log stamps it on batches)
        self._leader_epochs: dict[tuple[str, int], int] = {}
        self._log_dir_of: dict[tuple[str, int], str] = {}
        # partitions moving to another log dir (AlterReplicaLogDirs): the copy there, Kafka's
        # "future" replica, in <dir>/<topic>-<partition>.<id>-future
        self._future_logs: dict[tuple[str, int], UnifiedLog] = {}
        self._future_dir_of: dict[tuple[str, int], str] = {}
        # the log dir each partition is assigned to (Kafka's directory assignment in its metadata,
        # KIP-858), kept as directory ids in TOPICS_FILE: a move commits by changing it
        self._assigned: dict[tuple[str, int], str] = {}
        self._assigned_ids: dict[tuple[str, int], str] = {}  # as read, until the dirs' ids are known
        self._locks: list[DirLock] = []
        self._topics_text: str | None = None  # TOPICS_FILE as last read or written ("": none)
        # the KRaft quorum a combined node would report (DescribeQuorum): its epoch, one more each
        # start, and the metadata log's end offset, one more with each metadata change (each
        # write of TOPICS_FILE, where both are kept)
        self.quorum_epoch = 0
        self.metadata_offset = 0
        # per log dir: the entries of each offset checkpoint file as last read or written
        self._checkpointed: dict[str, dict[str, dict[tuple[str, int], int]]] = {}
        self._loaded = False
        self._closed = False
        # What appends leave for the broker, which owns the event loop (storage never calls it):
        # a count of appends (a moved count wakes long-polling fetches) and, once the broker
        # runs the fsyncs itself (defer_flushes), the fsyncs logs ask for (a rolled segment,
        # flush.messages): log -> offset to flush up to. Until then a log fsyncs in its append.
        self.appends = 0
        self.flush_requests: dict[UnifiedLog, int] | None = None

    def defer_flushes(self) -> None:
        """The fsyncs logs ask for are left in ``flush_requests`` (the broker's flusher runs
        them in a worker thread), for every log made from now on."""
        self.flush_requests = {}
        for ulog in self._logs.values():
            ulog.on_flush_needed = self._request_flush

    def take_flush_requests(self) -> dict:
        requests, self.flush_requests = self.flush_requests, {}
        return requests

    def log_dir_failed(self, error: BaseException) -> None:
        """An I/O error in a log dir. Kafka takes the dir offline, and with its only log dir
        gone halts the broker (LogManager.handleLogDirFailure, Exit.halt(1)); so does this
        one. Nothing half-written is trusted: on restart, recovery rebuilds the producer
        state from the log and the transaction coordinator finishes every Prepare*."""
        dirs = ", ".join(self.log_dirs)
        log.critical("Error while writing to the log dir %s: %s. Shutdown broker because all log dirs in %s "
                     "have failed", dirs, error, dirs)
        logging.shutdown()
        os._exit(1)

    # ------------------------------------------------------------------ load
    def load(self) -> None:
        """Lock the log dirs, create/validate them and meta.properties, then load and recover every
        partition. LogDirLockedError if another process holds a dir's lock: nothing in the dir
        has been read or written then."""
        started = time.monotonic()
        for d in self.log_dirs:
            os.makedirs(d, exist_ok=True)
            lock = DirLock(d)
            try:
                lock.acquire()
            except LogDirLockedError:
                self.release_locks()
                raise
            self._locks.append(lock)
        self._load_meta_properties()
        topics_store = self._read_topics_store()
        by_id = {dir_id: d for d, dir_id in self.directory_ids.items()}
        self._assigned = {tp: by_id[i] for tp, i in self._assigned_ids.items() if i in by_id}
        self._resolve_moves()
        configs: dict[str, LogConfig] = {}  # per topic: one LogConfig for all its partitions
        futures = []  # (dir, entry, clean) of the future replicas, loaded once the current ones are
        for d in self.log_dirs:
            with os.scandir(d) as it:
                dir_entries = sorted((e.name, e.is_dir()) for e in it)
            has_logs = any(is_dir for _, is_dir in dir_entries)
            clean = has_clean_shutdown(d) or not has_logs
            if not clean:
                log.info("Log dir %s: no clean shutdown marker; recovering unflushed segments", d)
            checkpoints = self._checkpointed.setdefault(d, {})
            for name in CHECKPOINT_FILES:
                checkpoints[name] = OffsetCheckpointFile(os.path.join(d, name)).read()
            recovery, starts = checkpoints[RECOVERY_POINT_CHECKPOINT], checkpoints[LOG_START_OFFSET_CHECKPOINT]
            for entry, is_dir in dir_entries:
                if not is_dir:
                    continue
                path = os.path.join(d, entry)
                if entry.endswith("-delete"):
                    log.info("Removing partially deleted log directory %s", path)
                    shutil.rmtree(path, ignore_errors=True)
                    continue
                if entry.endswith("-future"):
                    futures.append((d, entry, clean))
                    continue
                if entry.endswith("-stray"):
                    log.warning("Ignoring log directory %s", path)
                    continue
                from minikafka.storage.log import parse_topic_partition_name
                tp = parse_topic_partition_name(entry)
                if tp is None:
                    log.warning("Ignoring directory %s: not a <topic>-<partition> name", path)
                    continue
                topic, partition = tp
                if tp in self._logs:
                    log.error("Duplicate log directories for %s-%d (%s and %s); ignoring the second",
                              topic, partition, self._log_dir_of[tp], d)
                    continue
                info = topics_store.get(topic)
                if info is None:
                    tid = read_partition_metadata(path) or random_kafka_uuid()
                    log.warning("Adopting log directory %s for a topic missing from %s", path, TOPICS_FILE)
                    info = TopicInfo(topic, tid, partition + 1, {})
                    topics_store[topic] = info
                elif partition >= info.num_partitions:
                    log.warning("Adopting partition directory %s beyond the topic's %d partitions",
                                path, info.num_partitions)
                    info = info._replace(num_partitions=partition + 1)
                    topics_store[topic] = info
                config = configs.get(topic)
                if config is None:
                    config = configs[topic] = self._config_for(info.configs)
                from minikafka.storage.log import UnifiedLog
                ulog = UnifiedLog(path, topic, partition, config, topic_id=info.topic_id,
                                  log_start_offset=starts.get(tp, 0), recovery_point=recovery.get(tp, 0),
                                  had_clean_shutdown=clean)
                self._register(ulog, d)
        for d, entry, clean in futures:
            self._load_future(d, entry, clean, topics_store, configs)
        # topics whose partition directories are missing (e.g. removed by hand): recreate them empty
        for name, info in topics_store.items():
            self._topics[name] = info
            config = configs.get(name)
            self._configs[name] = config if config is not None else self._config_for(info.configs)
            for p in range(info.num_partitions):
                if (name, p) not in self._logs:
                    log.warning("Partition %s-%d has no log directory; creating an empty one", name, p)
                    self._create_partition_log(info, p, self._leader_epochs.get((name, p), 0))
        self._lead_every_partition()
        for d in self.log_dirs:
            remove_clean_shutdown(d)
        self._loaded = True
        self.checkpoint()  # the files that changed (a recovery point cut to a truncated log end, ...)
        log.info("Loaded %d logs in %dms", len(self._logs), (time.monotonic() - started) * 1000)  # Kafka's line

    def _lead_every_partition(self) -> None:
        """This start is a restart of the one broker: each partition's leader epoch moves on by
        2 (fenced, then elected again). The new epochs are in the topics store (fsynced) before
        any batch carries them; then each log starts its epoch at its log end offset, in memory:
        its epoch cache file is written before the epoch's first batch and fsynced before that
        batch is (storage.leader_epoch), so a start writes no file per partition."""
        for tp, ulog in self._logs.items():
            self._leader_epochs[tp] = max(self._leader_epochs.get(tp, 0), ulog.leader_epoch) + 2
        self.quorum_epoch += 1   # the one voter elects itself again
        self._write_topics_store()

        for tp, ulog in self._logs.items():
            ulog.become_leader(self._leader_epochs[tp], write=False)

    @staticmethod
    def _sync_leader_epoch_caches(logs: list[UnifiedLog]) -> None:
        """fsync the epoch cache files of new partitions (in parallel)."""
        _in_parallel(lambda ulog: ulog.leader_epoch_cache.flush(), logs)

    @property
    def metadata_directory_id(self):
        """The directory id of the first log dir, which holds the metadata (Kafka's metadata.log.dir)."""
        return uuid_from_base64(self.directory_ids[self.log_dirs[0]])

    def leader_epoch(self, topic: str, partition: int) -> int:
        """The partition's current leader epoch (-1 if there is no such partition)."""
        ulog = self._logs.get((topic, partition))
        return ulog.leader_epoch if ulog is not None else -1

    def _config_for(self, overrides: Mapping[str, str]) -> LogConfig:
        try:
            return self.default_config.with_overrides(overrides)
        except KafkaError as e:
            log.warning("Ignoring invalid stored topic configs %s: %s", dict(overrides), e)
            good = {}
            for k, v in overrides.items():
                try:
                    validate_topic_configs({k: v})
                    good[k] = v
                except KafkaError:
                    pass
            return self.default_config.with_overrides(good)

    def _load_meta_properties(self) -> None:
        found: dict[str, dict[str, str]] = {}
        for d in self.log_dirs:
            p = os.path.join(d, META_PROPERTIES)
            if os.path.exists(p):
                found[d] = read_properties(p)
        cluster_ids = {props.get("cluster.id") for props in found.values() if props.get("cluster.id")}
        if len(cluster_ids) > 1:
            raise RuntimeError(f"Log dirs disagree on cluster.id: {sorted(cluster_ids)}")
        for d, props in found.items():
            stored_node = props.get("node.id", props.get("broker.id"))
            if stored_node is not None and int(stored_node) != self.node_id:
                raise RuntimeError(f"Stored node id {stored_node} in {os.path.join(d, META_PROPERTIES)} doesn't "
                                   f"match the configured node id {self.node_id}")
        self.cluster_id = cluster_ids.pop() if cluster_ids else uuid_to_base64(random_kafka_uuid())
        for d in self.log_dirs:
            props = found.get(d, {})
            dir_id = props.get("directory.id") or uuid_to_base64(random_kafka_uuid())
            self.directory_ids[d] = dir_id
            wanted = {"node.id": str(self.node_id), "directory.id": dir_id, "version": "1",
                      "cluster.id": self.cluster_id}
            if any(props.get(k) != v for k, v in wanted.items()):
                write_properties(os.path.join(d, META_PROPERTIES), wanted)

    # ------------------------------------------------------------------ topics store
    @property
    def _topics_path(self) -> str:
        return os.path.join(self.log_dirs[0], TOPICS_FILE)

    def _read_topics_store(self) -> dict[str, TopicInfo]:
        try:
            with open(self._topics_path, "r", encoding="utf-8") as f:
                text = f.read()
            doc = json.loads(text)
        except FileNotFoundError:
            self._topics_text = ""
            return {}
        except (ValueError, OSError) as e:
            log.error("Cannot read %s (%s); rebuilding topic metadata from the partition directories",
                      self._topics_path, e)
            return {}
        self._topics_text = text
        quorum = doc.get("quorum") or {}
        try:
            self.quorum_epoch, self.metadata_offset = int(quorum.get("epoch", 0)), int(quorum.get("offset", 0))
        except (TypeError, ValueError):
            log.error("Ignoring a malformed quorum entry in %s", self._topics_path)
        out = {}
        for name, t in doc.get("topics", {}).items():
            try:
                out[name] = TopicInfo(name, uuid_from_base64(t["topic_id"]), int(t["num_partitions"]),
                                      {str(k): str(v) for k, v in t.get("configs", {}).items()})
                for p, epoch in enumerate(t.get("leader_epochs", [])):  # absent: written before epochs moved
                    self._leader_epochs[(name, p)] = int(epoch)
                for p, dir_id in enumerate(t.get("log_dirs", [])):  # absent: written before log dir moves
                    if dir_id:
                        self._assigned_ids[(name, p)] = str(dir_id)
            except (KeyError, ValueError) as e:
                log.error("Ignoring malformed entry for topic %s in %s: %s", name, self._topics_path, e)
        return out

    def _write_topics_store(self) -> None:
        """Write TOPICS_FILE if anything in it changed; each write is one more metadata offset."""
        def text(offset: int) -> str:
            if not (self._topics or self._topics_text):
                return ""  # (a start without topics writes none)
            doc = {"version": 1, "quorum": {"epoch": self.quorum_epoch, "offset": offset}, "topics": {
                name: {"topic_id": uuid_to_base64(t.topic_id), "num_partitions": t.num_partitions,
                       "configs": dict(t.configs),
                       "leader_epochs": [self._leader_epochs.get((name, p), 0) for p in range(t.num_partitions)],
                       "log_dirs": [self._assigned_dir_id((name, p)) for p in range(t.num_partitions)]}
                for name, t in sorted(self._topics.items())}}
            return json.dumps(doc, indent=1, sort_keys=True) + "\n"
        if text(self.metadata_offset) != self._topics_text:
            new = text(self.metadata_offset + 1)
            atomic_write(self._topics_path, new)
            self._topics_text = new
            self.metadata_offset += 1

    def _assigned_dir_id(self, tp: tuple[str, int]) -> str | None:
        d = self._assigned.get(tp) or self._log_dir_of.get(tp)
        return self.directory_ids.get(d) if d is not None else None

    # ------------------------------------------------------------------ helpers
    def _register(self, ulog: UnifiedLog, log_dir: str) -> None:
        tp = (ulog.topic, ulog.partition)
        self._logs[tp] = ulog
        self._log_dir_of[tp] = log_dir
        self._assigned[tp] = log_dir
        ulog.on_log_start_offset_change = self._on_log_start_offset_change
        ulog.on_append = self._count_append
        if self.flush_requests is not None:
            ulog.on_flush_needed = self._request_flush

    def _count_append(self) -> None:
        self.appends += 1

    def _request_flush(self, ulog: UnifiedLog, upto: int) -> None:
        if upto > self.flush_requests.get(ulog, -1):
            self.flush_requests[ulog] = upto

    def _on_log_start_offset_change(self, ulog: UnifiedLog) -> None:
        d = self._log_dir_of.get((ulog.topic, ulog.partition))
        if d is not None and not self._closed:
            self._checkpoint_log_start_offsets(d)

    def _next_log_dir(self) -> str:
        """The log dir holding the fewest partitions (Kafka's ``nextLogDirs``)."""
        counts = {d: 0 for d in self.log_dirs}
        for d in list(self._log_dir_of.values()) + list(self._future_dir_of.values()):
            counts[d] = counts.get(d, 0) + 1
        return min(self.log_dirs, key=lambda d: (counts[d], self.log_dirs.index(d)))

    def _create_partition_log(self, info: TopicInfo, partition: int, leader_epoch: int = 0) -> UnifiedLog:
        d = self._next_log_dir()
        path = os.path.join(d, f"{info.name}-{partition}")
        from minikafka.storage.log import UnifiedLog
        ulog = UnifiedLog(path, info.name, partition, self._configs[info.name], topic_id=info.topic_id)
        self._register(ulog, d)
        # a new partition starts at leader epoch 0 (its cache file is fsynced by the caller)
        self._leader_epochs[(info.name, partition)] = leader_epoch
        ulog.become_leader(leader_epoch)
        return ulog

    def _require_topic(self, name: str) -> TopicInfo:
        info = self._topics.get(name)
        if info is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                             "This server does not host this topic-partition.")
        return info

    # ------------------------------------------------------------------ topic admin
    def topics(self) -> dict[str, TopicInfo]:
        return dict(self._topics)

    def topic_config(self, name: str) -> LogConfig:
        self._require_topic(name)
        return self._configs[name]

    def describe_topic_configs(self, name: str, names: list[str] | None = None,
                               include_synonyms: bool = False) -> list[ConfigEntry]:
        return describe_configs(self.topic_config(name), names, include_synonyms)

    def create_topic(self, name: str, num_partitions: int, configs: Mapping[str, str] | None = None, *,
                     validate_only: bool = False, topic_id: uuid.UUID | None = None) -> TopicInfo:
        validate_topic_name(name)
        if name in self._topics:
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        unified = _unify_collision_chars(name)
        for existing in self._topics:
            if _unify_collision_chars(existing) == unified:
                raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                                 f"Topic '{name}' collides with existing topic: {existing}")
        if num_partitions is None or num_partitions < 1:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS,
                             "Number of partitions was set to an invalid non-positive value.")
        configs = {k: str(v) for k, v in (configs or {}).items()}
        config = self.default_config.with_overrides(configs)  # INVALID_CONFIG
        info = TopicInfo(name, topic_id or random_kafka_uuid(), num_partitions, configs)
        if validate_only:
            return info
        self._topics[name] = info
        self._configs[name] = config
        try:
            for p in range(num_partitions):
                self._create_partition_log(info, p)
        except OSError as e:
            for p in range(num_partitions):
                ulog = self._logs.pop((name, p), None)
                self._log_dir_of.pop((name, p), None)
                self._leader_epochs.pop((name, p), None)
                if ulog is not None:
                    ulog.delete()
            del self._topics[name]
            del self._configs[name]
            raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, f"Cannot create logs for topic {name}: {e}") from e
        self._sync_leader_epoch_caches([self._logs[(name, p)] for p in range(num_partitions)])
        self._write_topics_store()
        log.info("Created topic %s with %d partitions (id %s)", name, num_partitions, uuid_to_base64(info.topic_id))
        return info

    def delete_topic(self, name: str) -> None:
        """Delete the topic and its logs. Crash-safe like Kafka: partition directories are first
        renamed to ``<topic>-<partition>.<id>-delete`` (removed on the next load if a crash
        interrupts), then the topic leaves the metadata store, then the files go."""
        info = self._require_topic(name)
        doomed = []
        for p in range(info.num_partitions):
            future = self.abandon_future((name, p))
            if future is not None:
                doomed.append(future.dir)  # (renamed; its mover closes it)
            ulog = self._logs.pop((name, p), None)
            self._log_dir_of.pop((name, p), None)
            self._leader_epochs.pop((name, p), None)
            self._assigned.pop((name, p), None)
            if ulog is None:
                continue
            ulog.close()
            target = f"{ulog.dir}.{uuid.uuid4().hex}-delete"
            try:
                os.rename(ulog.dir, target)
                doomed.append(target)
            except OSError as e:
                log.error("Cannot rename %s for deletion: %s", ulog.dir, e)
                doomed.append(ulog.dir)
        del self._topics[name]
        del self._configs[name]
        self._write_topics_store()
        for path in doomed:
            shutil.rmtree(path, ignore_errors=True)
        self.checkpoint()
        log.info("Deleted topic %s", name)

    def add_partitions(self, name: str, new_total: int, *, validate_only: bool = False) -> TopicInfo:
        info = self._require_topic(name)
        if new_total is None or new_total <= info.num_partitions:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS,
                             f"Topic currently has {info.num_partitions} partitions, which is higher than or "
                             f"equal to the requested {new_total}.")
        new_info = info._replace(num_partitions=new_total)
        if validate_only:
            return new_info
        for p in range(info.num_partitions, new_total):
            self._create_partition_log(new_info, p)
        self._sync_leader_epoch_caches([self._logs[(name, p)] for p in range(info.num_partitions, new_total)])
        self._topics[name] = new_info
        self._write_topics_store()
        return new_info

    def set_default_config(self, default_config: LogConfig) -> None:
        """New broker-wide topic defaults (dynamic broker configs): every topic's config is
        its overrides over them again, applied to its open logs at once."""
        self.default_config = default_config
        for name, info in list(self._topics.items()):
            self._apply_config(info, default_config.with_overrides(info.configs))

    def _apply_config(self, info: TopicInfo, config: LogConfig) -> None:
        """A topic's config from now on, also in its open logs and their segments."""
        self._configs[info.name] = config
        for p in range(info.num_partitions):
            ulog = self._logs.get((info.name, p))
            if ulog is not None:
                ulog.config = config
                for seg in ulog.segments:
                    seg.index_interval_bytes = config.index_interval_bytes

    def alter_topic_configs(self, name: str, configs: Mapping[str, str], *, validate_only: bool = False) -> TopicInfo:
        """Replace the topic's whole override set (AlterConfigs semantics; IncrementalAlterConfigs
        callers merge SET/DELETE/APPEND/SUBTRACT into the full set first)."""
        info = self._require_topic(name)
        configs = {k: str(v) for k, v in configs.items()}
        config = self.default_config.with_overrides(configs)  # INVALID_CONFIG
        new_info = info._replace(configs=configs)
        if validate_only:
            return new_info
        self._topics[name] = new_info
        self._apply_config(new_info, config)
        self._write_topics_store()
        return new_info

    # ------------------------------------------------------------------ logs
    def get_log(self, topic: str, partition: int) -> UnifiedLog | None:
        return self._logs.get((topic, partition))

    def logs(self) -> Iterator[UnifiedLog]:
        return iter(list(self._logs.values()))

    def log_dir_of(self, topic: str, partition: int) -> str | None:
        return self._log_dir_of.get((topic, partition))

    # ------------------------------------------------------------------ moves between log dirs
    # Kafka's future replicas (AlterReplicaLogDirs): a partition moving to another log dir is
    # copied into <target>/<topic>-<partition>.<id>-future while its current replica keeps
    # serving; once the copy has caught up, the swap (replace_current_with_future) first assigns
    # the partition to the target dir in TOPICS_FILE (the commit point, as Kafka's controller
    # records the new directory before the broker promotes the copy), then renames the copy to
    # <topic>-<partition> and the old replica to <topic>-<partition>.<id>-delete. A restart
    # finishes whatever a crash interrupted by the assignment (_resolve_moves): exactly one copy
    # is the partition's, the other goes.
    def future_log(self, topic: str, partition: int) -> UnifiedLog | None:
        return self._future_logs.get((topic, partition))

    def future_logs(self) -> list[UnifiedLog]:
        return list(self._future_logs.values())

    def future_log_dir_of(self, topic: str, partition: int) -> str | None:
        return self._future_dir_of.get((topic, partition))

    def check_log_dir(self, path: str) -> str:
        """``path`` as one of ``log.dirs`` (Kafka compares the absolute path as given), else
        LOG_DIR_NOT_FOUND."""
        if path not in self.log_dirs:
            raise KafkaError(ErrorCode.LOG_DIR_NOT_FOUND, f"Log dir {path} is not found in the config.")
        return path

    def create_future(self, topic: str, partition: int, log_dir: str) -> UnifiedLog:
        """Start the copy of a partition in ``log_dir``: an empty future replica beginning at the
        current replica's first batch at its log start offset. Its dir's checkpoints name it at
        once, so no older entry there is taken for it after a crash."""
        tp = (topic, partition)
        current = self._logs[tp]
        from minikafka.storage.log import UnifiedLog
        path = os.path.join(log_dir, f"{topic}-{partition}.{uuid.uuid4().hex}-future")
        start = current.log_start_offset
        if start < current.log_end_offset:
            start = current.batch_base_at(start)
        future = UnifiedLog(path, topic, partition, self._configs[topic], topic_id=current.topic_id,
                            log_start_offset=start)
        fsync_dir(log_dir)
        self._future_logs[tp] = future
        self._future_dir_of[tp] = log_dir
        self.checkpoint()
        log.info("Created the future replica of %s-%d in %s (moving from %s)", topic, partition, log_dir,
                 self._log_dir_of[tp])
        return future

    def abandon_future(self, tp: tuple[str, int]) -> UnifiedLog | None:
        """Cancel a partition's move: its future replica's dir is renamed ``-delete`` now (a restart
        then removes it, rather than resuming the move) and the replica is forgotten; its mover
        closes it and removes the dir. Returns the abandoned replica (None if there was none)."""
        future = self._future_logs.pop(tp, None)
        d = self._future_dir_of.pop(tp, None)
        if future is None:
            return None
        target = f"{future.dir.rsplit('.', 1)[0]}.{uuid.uuid4().hex}-delete"
        try:
            os.rename(future.dir, target)
            fsync_dir(d)
            future.dir = target
        except OSError as e:
            log.error("Cannot rename %s for deletion: %s", future.dir, e)
        log.info("Removed the future replica of %s-%d in %s", tp[0], tp[1], d)
        return future

    def replace_current_with_future(self, topic: str, partition: int,
                                    fault: Callable[[str], None] | None = None) -> UnifiedLog:
        """The swap, once the future replica holds everything the current one does and is
        flushed (the caller made sure, with no append in between): assign the partition to the
        future's dir (commit point), rename the future replica's dir to the partition's, the old
        one's to ``-delete``. Returns the partition's log from now on (the future replica
        reopened under its new name); the old replica is closed, its dir removed by the caller
        (:meth:`remove_deleted_dir`). ``fault(point)`` is called between the steps (the broker's
        fault injection: ``logdir.before_commit``, ``.after_commit``, ``.after_future_rename``,
        ``.after_swap``)."""
        fault = fault or (lambda point: None)
        tp = (topic, partition)
        current, future = self._logs[tp], self._future_logs[tp]
        source, target = self._log_dir_of[tp], self._future_dir_of[tp]
        if future.log_end_offset != current.log_end_offset:
            raise RuntimeError(f"{topic}-{partition}: the future replica ends at {future.log_end_offset}, "
                               f"the current one at {current.log_end_offset}")
        if current.log_start_offset > future.log_start_offset:
            future.delete_records_before(current.log_start_offset)
        if future.leader_epoch_cache.latest_epoch != current.leader_epoch:
            future.become_leader(current.leader_epoch)
        future.flush()
        future.close()
        fault("logdir.before_commit")
        # commit point: the partition's dir is the target from now on
        self._assigned[tp] = target
        self._write_topics_store()
        fault("logdir.after_commit")
        name = os.path.join(target, f"{topic}-{partition}")
        os.rename(future.dir, name)
        fsync_dir(target)
        fault("logdir.after_future_rename")
        verifications = current.producer_state.verifications
        start, recovery = current.log_start_offset, future.recovery_point
        current.close()
        doomed = f"{current.dir}.{uuid.uuid4().hex}-delete"
        os.rename(current.dir, doomed)
        fsync_dir(source)
        current.dir = doomed
        fault("logdir.after_swap")
        from minikafka.storage.log import UnifiedLog
        moved = UnifiedLog(name, topic, partition, self._configs[topic], topic_id=current.topic_id,
                           log_start_offset=start, recovery_point=recovery)
        moved.become_leader(current.leader_epoch, write=False)
        moved.producer_state.verifications.update(verifications)  # transactional appends verified meanwhile
        del self._future_logs[tp], self._future_dir_of[tp]
        self._register(moved, target)
        self.checkpoint()
        log.info("The current replica of %s-%d is replaced with the future replica: moved from %s to %s",
                 topic, partition, source, target)
        return moved

    @staticmethod
    def remove_deleted_dir(path: str) -> None:
        """Remove a ``-delete`` dir (a moved partition's old replica, a cancelled future one);
        any thread. A crash meanwhile leaves it for the next start, which removes it."""
        shutil.rmtree(path, ignore_errors=True)

    def _resolve_moves(self) -> None:
        """Finish the moves a crash interrupted, before anything is loaded (Kafka's
        recoverAbandonedFutureLogs, by the directory assignment): a future replica in the dir
        the partition is assigned to passed the commit point and becomes the partition's log
        (the old copy goes); of two current copies (a crash between the swap's renames) the one
        in the assigned dir stays. Any other future replica is a copy still being made: its move
        goes on after the start."""
        from minikafka.storage.log import parse_topic_partition_name
        currents: dict[tuple[str, int], list[str]] = {}
        futures: dict[tuple[str, int], list[tuple[str, str]]] = {}
        for d in self.log_dirs:
            with os.scandir(d) as it:
                names = sorted(e.name for e in it if e.is_dir())
            for name in names:
                if name.endswith("-future"):
                    tp = parse_future_dir_name(name)
                    if tp is not None:
                        futures.setdefault(tp, []).append((d, name))
                elif not name.endswith(("-delete", "-stray")):
                    tp = parse_topic_partition_name(name)
                    if tp is not None:
                        currents.setdefault(tp, []).append(d)
        for tp in sorted(set(currents) | set(futures)):
            cs, fs = currents.get(tp, []), futures.get(tp, [])
            if len(cs) <= 1 and not fs:
                continue
            assigned = self._assigned.get(tp)
            name = f"{tp[0]}-{tp[1]}"
            promote = next((f for f in fs if f[0] == assigned and assigned not in cs), None)
            if promote is None and not cs and fs:
                promote = fs[0]
                log.warning("Partition %s-%d has a future replica in %s and no current one: promoting it",
                            tp[0], tp[1], promote[0])
            if promote is not None:
                log.info("Completing the move of %s-%d to %s interrupted by a crash", tp[0], tp[1], promote[0])
                for d in cs:
                    self._doom(os.path.join(d, name))
                os.rename(os.path.join(promote[0], promote[1]), os.path.join(promote[0], name))
                fsync_dir(promote[0])
                self._assigned[tp] = promote[0]
                fs = [f for f in fs if f is not promote]
                cs = [promote[0]]
            elif len(cs) > 1:
                keep = assigned if assigned in cs else cs[0]
                log.warning("Partition %s-%d has copies in %s: keeping the one in %s", tp[0], tp[1], cs, keep)
                for d in cs:
                    if d != keep:
                        self._doom(os.path.join(d, name))
                cs = [keep]
            kept = False
            for d, fname in fs:
                if not kept and d not in cs:
                    kept = True  # loaded as the future replica: the move resumes
                    continue
                self._doom(os.path.join(d, fname))

    @staticmethod
    def _doom(path: str) -> None:
        target = f"{path.rsplit('-future', 1)[0] if path.endswith('-future') else path}.{uuid.uuid4().hex}-delete"
        log.info("Removing %s", path)
        os.rename(path, target)
        fsync_dir(os.path.dirname(path))
        shutil.rmtree(target, ignore_errors=True)

    def _load_future(self, d: str, entry: str, clean: bool, topics_store: dict, configs: dict) -> None:
        tp = parse_future_dir_name(entry)
        path = os.path.join(d, entry)
        info = topics_store.get(tp[0]) if tp is not None else None
        if tp is None or info is None or tp not in self._logs or tp in self._future_logs:
            log.warning("Removing future replica %s: no partition of a known topic to move", path)
            self._doom(path)
            return
        config = configs.get(tp[0])
        if config is None:
            config = configs[tp[0]] = self._config_for(info.configs)
        checkpoints = self._checkpointed.get(d, {})
        from minikafka.storage.log import UnifiedLog
        future = UnifiedLog(path, tp[0], tp[1], config, topic_id=info.topic_id,
                            log_start_offset=checkpoints.get(LOG_START_OFFSET_CHECKPOINT, {}).get(tp, 0),
                            recovery_point=checkpoints.get(RECOVERY_POINT_CHECKPOINT, {}).get(tp, 0),
                            had_clean_shutdown=clean)
        self._future_logs[tp] = future
        self._future_dir_of[tp] = d
        log.info("Loaded the future replica of %s-%d in %s at offset %d: its move goes on", tp[0], tp[1], d,
                 future.log_end_offset)

    def cleanup(self, now_ms: int | None = None) -> int:
        """Retention for every log; returns the number of segments deleted."""
        if now_ms is None:
            now_ms = int(time.time() * 1000)
        total = 0
        for ulog in list(self._logs.values()):
            try:
                total += ulog.delete_old_segments(now_ms)
            except OSError as e:
                log.error("Retention failed for %s: %s", ulog.name, e)
        return total

    def expire_producers(self, now_ms: int, expiration_ms: int) -> int:
        """``producer.id.expiration.ms`` housekeeping for every log: drop producer state idle
        longer than ``expiration_ms`` (no open transaction). Returns how many were dropped."""
        n = 0
        for ulog in list(self._logs.values()):
            n += ulog.expire_producers(now_ms, expiration_ms)
        return n

    def flush_all(self) -> None:
        for ulog in list(self._logs.values()):
            ulog.flush()

    def checkpoint(self) -> None:
        """Write the recovery point, log start offset and high watermark checkpoints of every
        log dir; a file whose entries did not change since it was last written or read is
        left as it is (each write is an fsync and a rename)."""
        for d in self.log_dirs:
            logs = self._logs_in(d)
            self._write_checkpoint(d, RECOVERY_POINT_CHECKPOINT,
                                   {(l.topic, l.partition): l.recovery_point for l in logs})
            self._write_checkpoint(d, REPLICATION_OFFSET_CHECKPOINT,
                                   {(l.topic, l.partition): l.high_watermark for l in logs})
            self._checkpoint_log_start_offsets(d, logs)

    def _write_checkpoint(self, d: str, name: str, entries: dict[tuple[str, int], int]) -> None:
        known = self._checkpointed.setdefault(d, {})
        if known.get(name) == entries:
            return
        OffsetCheckpointFile(os.path.join(d, name)).write(entries)
        known[name] = entries

    def _logs_in(self, d: str) -> list[UnifiedLog]:
        """The logs in dir ``d``: current replicas and future ones (whose offsets Kafka checkpoints
        in their dir alike)."""
        return ([self._logs[tp] for tp, ld in self._log_dir_of.items() if ld == d and tp in self._logs]
                + [self._future_logs[tp] for tp, ld in self._future_dir_of.items() if ld == d])

    def _checkpoint_log_start_offsets(self, d: str, logs: list[UnifiedLog] | None = None) -> None:
        if logs is None:
            logs = self._logs_in(d)
        # like Kafka, only logs whose start offset is above their first segment's base offset
        self._write_checkpoint(d, LOG_START_OFFSET_CHECKPOINT,
                               {(l.topic, l.partition): l.log_start_offset for l in logs
                                if l.log_start_offset > l.segments[0].base_offset})

    def close(self) -> None:
        """Flush everything, write checkpoints, close the logs, then mark a clean shutdown."""
        if self._closed:
            return
        self.flush_all()
        for ulog in self._future_logs.values():
            ulog.flush()
        self.checkpoint()
        for ulog in list(self._logs.values()) + list(self._future_logs.values()):
            ulog.close()
        self._closed = True
        for d in self.log_dirs:
            write_clean_shutdown(d)
        self.release_locks()

    def release_locks(self) -> None:
        """Let another broker use the dirs (after :meth:`close`; the process exit does it too)."""
        for lock in self._locks:
            lock.release()
        self._locks = []
