"""Small metadata files in Kafka's formats: offset checkpoints, meta.properties,
partition.metadata, the clean-shutdown marker, plus Kafka-style UUID strings.

All writes go through :func:`atomic_write` (temp file + fsync + rename + dir fsync).
"""
from __future__ import annotations

import base64
import json
import logging
import os
import time
import uuid

log = logging.getLogger("minikafka.storage")

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
META_PROPERTIES = "meta.properties"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
PARTITION_METADATA_FILE = "partition.metadata"


# ---------------------------------------------------------------------------
# UUIDs as Kafka prints them (base64url, no padding, 22 chars)
# ---------------------------------------------------------------------------

def uuid_to_base64(u: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(u.bytes).decode("ascii").rstrip("=")


def uuid_from_base64(s: str) -> uuid.UUID:
    s = s.strip()
    raw = base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
    if len(raw) != 16:
        raise ValueError(f"Invalid Kafka UUID string {s!r}")
    return uuid.UUID(bytes=raw)


def random_kafka_uuid() -> uuid.UUID:
    """Like Kafka's ``Uuid.randomUuid()``: never the reserved zero/one ids, never a string starting with '-'."""
    while True:
        u = uuid.uuid4()
        if u.int in (0, 1):
            continue
        if uuid_to_base64(u).startswith("-"):
            continue
        return u


# ---------------------------------------------------------------------------
# reads and atomic writes
# ---------------------------------------------------------------------------

def read_file(path: str) -> bytes | None:
    """The whole file, or None if it does not exist. Plain descriptor reads: a start reads a
    few small files per partition, and Python's buffered file objects cost more than the I/O."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


def fsync_path(path: str) -> None:
    """fsync a file by path; a file that no longer exists is skipped (deleted meanwhile)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_fd_or_path(fd: int | None, path: str) -> None:
    """fsync through an open descriptor, or by path when there is none or it was closed
    concurrently (a flush in a worker thread can race a segment roll)."""
    if fd is not None:
        try:
            os.fsync(fd)
            return
        except OSError:
            pass
    fsync_path(path)


def fsync_dir(path: str) -> None:
    """Best effort: some file systems refuse fsync on directories."""
    try:
        fsync_path(path)
    except OSError:
        pass


def atomic_write(path: str, data: bytes | str) -> None:
    """Write ``data`` to ``path`` via ``path.tmp`` + fsync + rename (+ fsync of the directory)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    tmp = path + ".tmp"
    with open(tmp, "wb", buffering=0) as f:
        f.write(data)
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(os.path.dirname(path) or ".")


# ---------------------------------------------------------------------------
# offset checkpoint files ("0", count, "topic partition offset" lines)
# ---------------------------------------------------------------------------

class OffsetCheckpointFile:
    """Kafka's ``OffsetCheckpointFile`` (version 0)."""

    VERSION = 0

    def __init__(self, path: str):
        self.path = path

    def write(self, offsets: dict[tuple[str, int], int]) -> None:
        lines = [str(self.VERSION), str(len(offsets))]
        for (topic, partition), offset in sorted(offsets.items()):
            lines.append(f"{topic} {partition} {offset}")
        atomic_write(self.path, "\n".join(lines) + "\n")

    def read(self) -> dict[tuple[str, int], int]:
        """Entries of the file; {} if missing. A malformed file is logged and ignored."""
        try:
            with open(self.path, "r", encoding="utf-8") as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return {}
        try:
            if not lines:
                return {}
            version = int(lines[0].strip())
            if version != self.VERSION:
                raise ValueError(f"unrecognised version {version}")
            count = int(lines[1].strip())
            out = {}
            for line in lines[2:]:
                if not line.strip():
                    continue
                topic, partition, offset = line.split()
                out[(topic, int(partition))] = int(offset)
            if len(out) != count:
                raise ValueError(f"expected {count} entries but found {len(out)}")
            return out
        except (ValueError, IndexError) as e:
            log.warning("Ignoring malformed checkpoint file %s: %s", self.path, e)
            return {}


# ---------------------------------------------------------------------------
# Java .properties (meta.properties)
# ---------------------------------------------------------------------------

def read_properties(path: str) -> dict[str, str]:
    out = {}
    with open(path, "r", encoding="utf-8") as f:
        for raw in f:
            line = raw.strip()
            if not line or line[0] in "#!":
                continue
            for i, ch in enumerate(line):
                if ch in "=:":
                    out[line[:i].strip()] = line[i + 1:].strip()
                    break
            else:
                out[line] = ""
    return out


def write_properties(path: str, props: dict[str, str]) -> None:
    stamp = time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime())
    body = "#\n#" + stamp + "\n" + "".join(f"{k}={v}\n" for k, v in props.items())
    atomic_write(path, body)


# ---------------------------------------------------------------------------
# partition.metadata ("version: 0", "topic_id: <base64>")
# ---------------------------------------------------------------------------

def write_partition_metadata(dir_path: str, topic_id: uuid.UUID) -> None:
    atomic_write(os.path.join(dir_path, PARTITION_METADATA_FILE),
                 f"version: 0\ntopic_id: {uuid_to_base64(topic_id)}\n")


def read_partition_metadata(dir_path: str) -> uuid.UUID | None:
    path = os.path.join(dir_path, PARTITION_METADATA_FILE)
    data = read_file(path)
    if data is None:
        return None
    text = data.decode("utf-8", "replace")
    fields = {}
    for line in text.splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            fields[k.strip()] = v.strip()
    try:
        if fields.get("version") != "0":
            raise ValueError(f"unsupported version {fields.get('version')!r}")
        return uuid_from_base64(fields["topic_id"])
    except (KeyError, ValueError) as e:
        log.warning("Ignoring malformed %s: %s", path, e)
        return None


# ---------------------------------------------------------------------------
# clean shutdown marker
# ---------------------------------------------------------------------------

def write_clean_shutdown(log_dir: str, broker_epoch: int = -1) -> None:
    atomic_write(os.path.join(log_dir, CLEAN_SHUTDOWN_FILE),
                 json.dumps({"version": 0, "brokerEpoch": broker_epoch}))


def has_clean_shutdown(log_dir: str) -> bool:
    return os.path.exists(os.path.join(log_dir, CLEAN_SHUTDOWN_FILE))


def remove_clean_shutdown(log_dir: str) -> None:
    try:
        os.unlink(os.path.join(log_dir, CLEAN_SHUTDOWN_FILE))
        fsync_dir(log_dir)
    except FileNotFoundError:
        pass
