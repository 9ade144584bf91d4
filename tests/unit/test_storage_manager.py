"""storage/log_manager.py, storage/checkpoint.py, storage/config.py."""
from __future__ import annotations

import os
import re
import uuid

import pytest

from minikafka.protocol import records as rec
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.protocol.records import Record
from minikafka.storage.checkpoint import (OffsetCheckpointFile, read_properties, uuid_from_base64, uuid_to_base64)
from minikafka.storage.config import ConfigSource, LogConfig, describe_configs
from minikafka.storage.log_manager import LogManager

TS = 1_700_000_000_000


def batch(n=2, size=200, ts=TS) -> bytes:
    return rec.build_batch([Record(None, ts + i, b"k", b"v" * size, ()) for i in range(n)])


def manager(dirs, **broker_props) -> LogManager:
    lm = LogManager([str(d) for d in dirs], LogConfig.from_broker_properties(broker_props))
    lm.load()
    return lm


def test_new_dirs_get_meta_properties_and_cluster_id(tmp_path):
    lm = manager([tmp_path / "a", tmp_path / "b"])
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", lm.cluster_id)
    for d in ("a", "b"):
        props = read_properties(str(tmp_path / d / "meta.properties"))
        assert props["version"] == "1" and props["node.id"] == "1" and props["cluster.id"] == lm.cluster_id
        assert len(props["directory.id"]) == 22
    ids = {read_properties(str(tmp_path / d / "meta.properties"))["directory.id"] for d in "ab"}
    assert len(ids) == 2
    lm.close()
    lm2 = manager([tmp_path / "a", tmp_path / "b"])
    assert lm2.cluster_id == lm.cluster_id


def test_node_id_mismatch_refused(tmp_path):
    manager([tmp_path]).close()
    with pytest.raises(RuntimeError):
        LogManager([str(tmp_path)], LogConfig(), node_id=2).load()


def test_create_topic_layout_and_restart(tmp_path):
    lm = manager([tmp_path])
    info = lm.create_topic("orders", 3, {"retention.ms": "1000", "cleanup.policy": "compact,delete"})
    assert info.num_partitions == 3 and isinstance(info.topic_id, uuid.UUID)
    for p in range(3):
        d = tmp_path / f"orders-{p}"
        assert (d / "00000000000000000000.log").exists()
        assert (d / "partition.metadata").read_text() == \
            f"version: 0\ntopic_id: {uuid_to_base64(info.topic_id)}\n"
    assert lm.topic_config("orders").retention_ms == 1000
    assert lm.topic_config("orders").cleanup_policy == ("compact", "delete")
    log = lm.get_log("orders", 1)
    log.append(batch())
    assert lm.get_log("orders", 3) is None and lm.get_log("nope", 0) is None
    lm.close()
    assert (tmp_path / ".kafka_cleanshutdown").exists()
    lm2 = manager([tmp_path])
    assert not (tmp_path / ".kafka_cleanshutdown").exists()
    t = lm2.topics()["orders"]
    assert t.topic_id == info.topic_id and t.num_partitions == 3
    assert t.configs == {"retention.ms": "1000", "cleanup.policy": "compact,delete"}
    assert lm2.topic_config("orders").retention_ms == 1000
    assert lm2.get_log("orders", 1).log_end_offset == 2


def test_create_topic_errors(tmp_path):
    lm = manager([tmp_path])
    lm.create_topic("a.b", 1, {})
    cases = [
        (("", 1, {}), ErrorCode.INVALID_TOPIC_EXCEPTION),
        ((".", 1, {}), ErrorCode.INVALID_TOPIC_EXCEPTION),
        (("..", 1, {}), ErrorCode.INVALID_TOPIC_EXCEPTION),
        (("x" * 250, 1, {}), ErrorCode.INVALID_TOPIC_EXCEPTION),
        (("bad/name", 1, {}), ErrorCode.INVALID_TOPIC_EXCEPTION),
        (("sp ace", 1, {}), ErrorCode.INVALID_TOPIC_EXCEPTION),
        (("a.b", 1, {}), ErrorCode.TOPIC_ALREADY_EXISTS),
        (("a_b", 1, {}), ErrorCode.INVALID_TOPIC_EXCEPTION),  # collides with a.b
        (("ok", 0, {}), ErrorCode.INVALID_PARTITIONS),
        (("ok", -3, {}), ErrorCode.INVALID_PARTITIONS),
        (("ok", 1, {"no.such.config": "1"}), ErrorCode.INVALID_CONFIG),
        (("ok", 1, {"retention.ms": "abc"}), ErrorCode.INVALID_CONFIG),
        (("ok", 1, {"retention.ms": "-5"}), ErrorCode.INVALID_CONFIG),
        (("ok", 1, {"cleanup.policy": "shred"}), ErrorCode.INVALID_CONFIG),
        (("ok", 1, {"message.timestamp.type": "Whenever"}), ErrorCode.INVALID_CONFIG),
        (("ok", 1, {"min.insync.replicas": "0"}), ErrorCode.INVALID_CONFIG),
    ]
    for args, code in cases:
        with pytest.raises(KafkaError) as e:
            lm.create_topic(*args)
        assert e.value.code == code, args
    assert "x" * 249 in {lm.create_topic("x" * 249, 1, {}).name}
    assert set(lm.topics()) == {"a.b", "x" * 249}
    assert not (tmp_path / "ok-0").exists()
    assert lm.create_topic("ok", 2, {}, validate_only=True).num_partitions == 2
    assert "ok" not in lm.topics()


def test_delete_topic_and_add_partitions(tmp_path):
    lm = manager([tmp_path])
    lm.create_topic("t", 2, {})
    lm.get_log("t", 0).append(batch())
    lm.add_partitions("t", 4)
    assert lm.topics()["t"].num_partitions == 4 and lm.get_log("t", 3) is not None
    for n in (4, 3):
        with pytest.raises(KafkaError) as e:
            lm.add_partitions("t", n)
        assert e.value.code == ErrorCode.INVALID_PARTITIONS
    with pytest.raises(KafkaError) as e:
        lm.add_partitions("missing", 5)
    assert e.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    lm.delete_topic("t")
    assert "t" not in lm.topics() and not any(n.startswith("t-") for n in os.listdir(tmp_path))
    with pytest.raises(KafkaError) as e:
        lm.delete_topic("t")
    assert e.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    lm.close()
    lm2 = manager([tmp_path])
    assert lm2.topics() == {}
    # the name can be reused with a new id
    lm2.create_topic("t", 1, {})
    assert lm2.get_log("t", 0).log_end_offset == 0


def test_alter_topic_configs_applies_and_persists(tmp_path):
    lm = manager([tmp_path])
    lm.create_topic("t", 1, {"retention.ms": "1000"})
    lm.alter_topic_configs("t", {"segment.bytes": "5000"})
    assert lm.topic_config("t").retention_ms == 604800000  # replaced, not merged
    assert lm.get_log("t", 0).config.segment_bytes == 5000
    with pytest.raises(KafkaError) as e:
        lm.alter_topic_configs("t", {"segment.bytes": "x"})
    assert e.value.code == ErrorCode.INVALID_CONFIG
    lm.close()
    assert manager([tmp_path]).topic_config("t").segment_bytes == 5000


def test_checkpoint_files_kafka_format(tmp_path):
    lm = manager([tmp_path], **{"log.segment.bytes": "1000"})
    lm.create_topic("t", 2, {})
    log = lm.get_log("t", 0)
    for _ in range(10):
        log.append(batch())
    log.delete_records_before(7)
    lm.flush_all()
    lm.checkpoint()
    text = (tmp_path / "recovery-point-offset-checkpoint").read_text()
    assert text.splitlines()[:2] == ["0", "2"] and "t 0 20" in text.splitlines() and "t 1 0" in text.splitlines()
    assert (tmp_path / "replication-offset-checkpoint").read_text().splitlines() == ["0", "2", "t 0 20", "t 1 0"]
    assert (tmp_path / "log-start-offset-checkpoint").read_text().splitlines() == ["0", "1", "t 0 7"]
    assert OffsetCheckpointFile(str(tmp_path / "log-start-offset-checkpoint")).read() == {("t", 0): 7}
    assert not any(n.endswith(".tmp") for n in os.listdir(tmp_path))


def test_delete_records_survives_crash(tmp_path):
    lm = manager([tmp_path], **{"log.segment.bytes": "100000"})
    lm.create_topic("t", 1, {})
    log = lm.get_log("t", 0)
    for _ in range(10):
        log.append(batch())
    log.delete_records_before(5)  # inside the only segment: only the checkpoint remembers it
    # crash: no close()
    lm2 = manager([tmp_path], **{"log.segment.bytes": "100000"})
    log2 = lm2.get_log("t", 0)
    assert log2.log_start_offset == 5 and log2.log_end_offset == 20


def test_crash_recovery_through_manager(tmp_path):
    lm = manager([tmp_path], **{"log.segment.bytes": "3000"})
    lm.create_topic("t", 1, {})
    log = lm.get_log("t", 0)
    for _ in range(20):
        log.append(batch())
    lm.checkpoint()  # recovery point 0 (never flushed)
    for _ in range(5):
        log.append(batch())
    path = log.active_segment.log_path
    with open(path, "ab") as f:
        f.write(b"\xde\xad" * 50)
    lm2 = manager([tmp_path], **{"log.segment.bytes": "3000"})
    assert lm2.get_log("t", 0).log_end_offset == 50


def test_cleanup_retention(tmp_path):
    lm = manager([tmp_path], **{"log.segment.bytes": "2000", "log.retention.ms": "10000"})
    lm.create_topic("short", 1, {})
    lm.create_topic("forever", 1, {"retention.ms": "-1"})
    lm.create_topic("compacted", 1, {"cleanup.policy": "compact"})
    for t in ("short", "forever", "compacted"):
        for i in range(10):
            lm.get_log(t, 0).append(batch(ts=TS))
    deleted = lm.cleanup(now_ms=TS + 60_000)
    assert deleted > 0
    assert lm.get_log("short", 0).log_start_offset == 20
    assert lm.get_log("forever", 0).log_start_offset == 0
    assert lm.get_log("compacted", 0).log_start_offset == 0


def test_multiple_log_dirs_spread_partitions(tmp_path):
    lm = manager([tmp_path / "a", tmp_path / "b"])
    lm.create_topic("t", 4, {})
    where = {p: lm.log_dir_of("t", p) for p in range(4)}
    assert sorted(where.values()).count(str(tmp_path / "a")) == 2
    for p in range(4):
        lm.get_log("t", p).append(batch())
    lm.close()
    lm2 = manager([tmp_path / "a", tmp_path / "b"])
    assert {p: lm2.log_dir_of("t", p) for p in range(4)} == where
    assert all(lm2.get_log("t", p).log_end_offset == 2 for p in range(4))


def test_adopts_unknown_partition_dirs(tmp_path):
    lm = manager([tmp_path])
    lm.create_topic("t", 1, {})
    lm.get_log("t", 0).append(batch())
    tid = lm.topics()["t"].topic_id
    lm.close()
    os.unlink(tmp_path / "minikafka-topics.json")
    lm2 = manager([tmp_path])
    assert lm2.topics()["t"].topic_id == tid and lm2.get_log("t", 0).log_end_offset == 2


def test_uuid_base64():
    u = uuid.UUID("12345678-1234-5678-1234-567812345678")
    s = uuid_to_base64(u)
    assert len(s) == 22 and "=" not in s and uuid_from_base64(s) == u


def test_log_config_from_broker_properties_and_describe():
    base = LogConfig.from_broker_properties({"log.retention.hours": "2", "log.segment.bytes": "5000",
                                             "message.max.bytes": "2000000", "unrelated": "x"})
    assert base.retention_ms == 7_200_000 and base.segment_bytes == 5000 and base.max_message_bytes == 2_000_000
    assert LogConfig.from_broker_properties({"log.retention.ms": "5", "log.retention.hours": "2"}).retention_ms == 5
    assert LogConfig.from_broker_properties({"log.retention.hours": "-1"}).retention_ms == -1
    cfg = base.with_overrides({"retention.ms": "100"})
    entries = {e.name: e for e in describe_configs(cfg, include_synonyms=True)}
    assert entries["retention.ms"].value == "100" and entries["retention.ms"].source == ConfigSource.TOPIC_CONFIG
    # log.retention.hours is no synonym of retention.ms in Kafka's answer: its broker synonyms start
    # at log.retention.ms, which is not set and has no default (admin_configs/describe/topic_all)
    assert [s.source for s in entries["retention.ms"].synonyms] == [ConfigSource.TOPIC_CONFIG]
    assert base.with_overrides({}).retention_ms == 7_200_000
    assert {e.name: e for e in describe_configs(base)}["retention.ms"].source == ConfigSource.DEFAULT_CONFIG
    assert entries["segment.bytes"].source == ConfigSource.STATIC_BROKER_CONFIG
    assert entries["cleanup.policy"].value == "delete" and entries["cleanup.policy"].source == ConfigSource.DEFAULT_CONFIG
    assert entries["flush.messages"].value == "9223372036854775807"
    assert entries["preallocate"].value == "false"
    assert all(not e.read_only and not e.is_sensitive for e in entries.values())
    assert [e.name for e in describe_configs(cfg, ["retention.ms", "bogus"])] == ["retention.ms"]
    with pytest.raises(KafkaError) as e:
        LogConfig.from_broker_properties({"log.segment.bytes": "huge"})
    assert e.value.code == ErrorCode.INVALID_CONFIG


def test_invalid_config_messages_are_kafkas():
    # recorded from Kafka 4.1: CreateTopics (validate_only) answers and broker start-up
    cases = [({"cleanup.policy": "compact,banana"},
              "Invalid value banana for configuration cleanup.policy: String must be one of: compact, delete"),
             ({"compression.type": "banana"}, "Invalid value banana for configuration compression.type:"
              " String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"),
             ({"retention.ms": "-5"}, "Invalid value -5 for configuration retention.ms: Value must be at least -1")]
    for overrides, message in cases:
        with pytest.raises(KafkaError) as e:
            LogConfig().with_overrides(overrides)
        assert e.value.code == ErrorCode.INVALID_CONFIG and e.value.message == message
    # a broker property is named as such, not by the topic config it sets
    with pytest.raises(KafkaError) as e:
        LogConfig.from_broker_properties({"log.cleanup.policy": "banana"})
    assert e.value.message == ("Invalid value banana for configuration log.cleanup.policy:"
                               " String must be one of: compact, delete")
