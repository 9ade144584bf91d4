"""Admin APIs stock clients send: DeleteRecords (21), AlterConfigs (33),
IncrementalAlterConfigs (44), DescribeLogDirs (35), ElectLeaders (43),
DescribeTopicPartitions (75), SaslHandshake (17) / SaslAuthenticate (36).

Exact error codes through raw frames (tests/rawclient.py); the client paths
through kafka-python's KafkaAdminClient, confluent-kafka's AdminClient and the
Java AdminClient 4.1 (tests/java/AdminTool.java)."""
from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request

import pytest

from harness import free_port, wait_until
from minikafka.protocol import records as rec
from minikafka.protocol.errors import ErrorCode
from rawclient import RawClient, make_batch

TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


# ------------------------------------------------------------------ helpers
def produce(c: RawClient, topic: str, partition: int, n: int, per_batch: int = 1) -> None:
    for i in range(0, n, per_batch):
        r = c.produce(topic, partition, make_batch([b"v%d" % j for j in range(i, min(n, i + per_batch))]))
        assert r.error_code == 0, r


def delete_records(c: RawClient, topic: str, offsets: dict[int, int], version: int = 2) -> dict[int, tuple[int, int]]:
    body = {"topics": [{"name": topic, "partitions": [{"partition_index": p, "offset": o} for p, o in offsets.items()]}],
            "timeout_ms": 10000}
    resp = c.request(21, version, body)
    assert [t.name for t in resp.topics] == [topic]
    return {p.partition_index: (p.error_code, p.low_watermark) for p in resp.topics[0].partitions}


def incremental(c: RawClient, resources: list[tuple[int, str, list[tuple]]], validate_only=False, version=1):
    body = {"resources": [{"resource_type": rt, "resource_name": name,
                           "configs": [{"name": k, "config_operation": op, "value": v} for k, op, v in cfgs]}
                          for rt, name, cfgs in resources], "validate_only": validate_only}
    return [(r.error_code, r.error_message) for r in c.request(44, version, body).responses]


def legacy_alter(c: RawClient, resources: list[tuple[int, str, dict]], validate_only=False, version=2):
    body = {"resources": [{"resource_type": rt, "resource_name": name,
                           "configs": [{"name": k, "value": v} for k, v in cfgs.items()]}
                          for rt, name, cfgs in resources], "validate_only": validate_only}
    return [(r.error_code, r.error_message) for r in c.request(33, version, body).responses]


def topic_overrides(c: RawClient, topic: str) -> dict[str, str]:
    body = {"resources": [{"resource_type": TOPIC, "resource_name": topic, "configuration_keys": None}],
            "include_synonyms": False, "include_documentation": False}
    r = c.request(32, 4, body).results[0]
    assert r.error_code == 0, r
    return {e.name: e.value for e in r.configs if e.config_source == 1}


def earliest(c: RawClient, topic: str, partition: int) -> int:
    return c.list_offset(topic, partition, timestamp=-2)


@pytest.fixture
def admin(broker):
    from kafka.admin import KafkaAdminClient
    a = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=30000)
    yield a
    a.close()


@pytest.fixture
def raw(broker):
    with RawClient.to(broker.bootstrap) as c:
        yield c


# ------------------------------------------------------------------ ApiVersions
def test_advertised_versions(raw):
    keys = {k.api_key: (k.min_version, k.max_version) for k in raw.request(18, 3, {
        "client_software_name": "t", "client_software_version": "1"}).api_keys}
    assert keys[21] == (0, 2) and keys[33] == (0, 2) and keys[44] == (0, 1) and keys[35] == (1, 4)  # Kafka 4.1 closes the connection on v5 (recorded)
    assert keys[43] == (0, 2) and keys[75] == (0, 0) and keys[17] == (0, 1) and keys[36] == (0, 2)
    assert keys[48] == keys[49] == (0, 1)  # client quotas, Kafka 4.1's versions
    assert (keys[38], keys[39], keys[40], keys[41]) == ((1, 3), (1, 2), (1, 2), (1, 3))  # delegation tokens
    assert keys[50] == keys[51] == (0, 0) and keys[29] == keys[30] == keys[31] == (1, 3)  # SCRAM users, ACLs


# ------------------------------------------------------------------ DeleteRecords
def test_delete_records_semantics_raw(raw, unique_topic):
    t = unique_topic("dr")
    assert raw.create_topic(t, 2) == 0
    produce(raw, t, 0, 10)
    produce(raw, t, 1, 3)
    assert delete_records(raw, t, {0: 4, 1: -1}) == {0: (0, 4), 1: (0, 3)}  # -1: up to the high watermark
    assert earliest(raw, t, 0) == 4 and earliest(raw, t, 1) == 3
    p = raw.fetch(t, 0, 0)
    # Kafka answers an out-of-range fetch without offsets (ReplicaManager.createLogReadResult)
    assert p.error_code == ErrorCode.OFFSET_OUT_OF_RANGE and (p.high_watermark, p.log_start_offset) == (-1, -1)
    p = raw.fetch(t, 0, 4)
    assert p.error_code == 0 and p.log_start_offset == 4
    # at or below the log start offset: nothing changes, the current low watermark comes back
    assert delete_records(raw, t, {0: 2}) == {0: (0, 4)}
    assert delete_records(raw, t, {0: 10}, version=0) == {0: (0, 10)}  # == HW is allowed
    assert delete_records(raw, t, {0: 11}) == {0: (ErrorCode.OFFSET_OUT_OF_RANGE, -1)}
    assert delete_records(raw, t, {0: -2}) == {0: (ErrorCode.OFFSET_OUT_OF_RANGE, -1)}
    assert delete_records(raw, t, {7: 0}) == {7: (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)}
    assert delete_records(raw, "no-such-topic-dr", {0: 0}) == {0: (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)}
    # appends continue after the new log start offset
    produce(raw, t, 0, 2)
    assert raw.list_offset(t, 0) == 12 and earliest(raw, t, 0) == 10


def test_delete_records_policy_and_internal_topics(raw, unique_topic):
    compact, both = unique_topic("drc"), unique_topic("drb")
    assert raw.create_topic(compact, 1, {"cleanup.policy": "compact"}) == 0
    assert raw.create_topic(both, 1, {"cleanup.policy": "compact,delete"}) == 0
    for t in (compact, both):
        raw.produce(t, 0, make_batch([b"a", b"b"], keys=[b"k1", b"k2"]))
    assert delete_records(raw, compact, {0: 1}) == {0: (ErrorCode.POLICY_VIOLATION, -1)}
    assert delete_records(raw, both, {0: 1}) == {0: (0, 1)}
    # FindCoordinator creates __consumer_offsets; internal topics are refused
    assert raw.request(10, 3, {"key": "drgroup", "key_type": 0}).error_code == 0
    assert delete_records(raw, "__consumer_offsets", {0: 0}) == {0: (ErrorCode.INVALID_TOPIC_EXCEPTION, -1)}


def test_delete_records_survives_restart(broker_factory, unique_topic):
    b = broker_factory()
    t = unique_topic("drr")
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic(t, 1, {"segment.bytes": "300"}) == 0
        produce(c, t, 0, 30)
        assert delete_records(c, t, {0: 17}) == {0: (0, 17)}
    b.restart(kill=True)
    with RawClient.to(b.bootstrap) as c:
        assert earliest(c, t, 0) == 17
        assert delete_records(c, t, {0: 5}) == {0: (0, 17)}
    # whole segments below the new start are gone from disk
    bases = sorted(int(p.stem) for p in b.partition_dir(t, 0).glob("*.log"))
    assert bases[0] <= 17 and (len(bases) == 1 or bases[1] > 17), bases


def test_delete_records_past_an_open_transaction_moves_the_lso(raw, unique_topic):
    # Kafka's LSO is max(first unstable offset, log start offset): deleting the start of an
    # open transaction lifts the LSO with the log start (found by test_txn_invariants.py).
    t, tid = unique_topic("drtxn"), unique_topic("drtxn-tid")
    assert raw.create_topic(t, 1) == 0
    init = raw.init_producer_id(tid)
    pid, epoch = init.producer_id, init.producer_epoch
    assert raw.add_partitions_to_txn(tid, pid, epoch, t, [0]) == {0: 0}
    assert raw.produce(t, 0, make_batch([b"open"], pid, epoch, 0, True), transactional_id=tid).error_code == 0
    produce(raw, t, 0, 2)  # non-transactional records after the open transaction's start
    assert raw.list_offset(t, 0, isolation=1) == 0
    assert delete_records(raw, t, {0: 2}) == {0: (0, 2)}
    p = raw.fetch(t, 0, 2, isolation=1)
    assert (p.error_code, p.log_start_offset, p.last_stable_offset, p.high_watermark) == (0, 2, 2, 3)
    assert raw.list_offset(t, 0, isolation=1) == 2
    assert raw.end_txn(tid, pid, epoch, commit=False) == 0
    assert raw.list_offset(t, 0, isolation=1) == 4


def test_delete_records_into_an_open_transactions_batch_across_kill9(broker_factory, unique_topic):
    """Kafka 4.1 (conformance log_start/delete_records_inside_open_txn): with the log start offset
    inside an open transaction's batch, the LSO is that batch's base offset (Kafka keeps the first
    unstable offset as offset metadata of max(first unstable offset, log start), which is the
    batch holding it), below the log start; after kill -9 too; the commit releases the rest."""
    t, tid = unique_topic("drmid"), unique_topic("drmid-tid")
    b = broker_factory()
    with RawClient.to(b.bootstrap) as raw:
        assert raw.create_topic(t, 1) == 0
        init = raw.init_producer_id(tid)
        pid, epoch = init.producer_id, init.producer_epoch
        produce(raw, t, 0, 2, per_batch=2)  # 0-1
        assert raw.add_partitions_to_txn(tid, pid, epoch, t, [0]) == {0: 0}
        assert raw.produce(t, 0, make_batch([b"x", b"y"], pid, epoch, 0, True), transactional_id=tid).base_offset == 2
        assert delete_records(raw, t, {0: 3}) == {0: (0, 3)}
    for restarted in (False, True):
        if restarted:
            b.restart(kill=True)
        with RawClient.to(b.bootstrap) as raw:
            p = raw.fetch(t, 0, 3, isolation=1)
            assert (p.error_code, p.log_start_offset, p.last_stable_offset, p.high_watermark, p.records or b"") == \
                (0, 3, 2, 4, b""), restarted
            assert raw.list_offset(t, 0, isolation=1) == 2
    with RawClient.to(b.bootstrap) as raw:
        assert raw.end_txn(tid, pid, epoch, commit=True) == 0
        wait_until(lambda: raw.list_offset(t, 0, isolation=1) == 5, 10)
        p = raw.fetch(t, 0, 3, isolation=1)
        assert p.last_stable_offset == 5 and [h.base_offset for _, h in rec.iter_batch_headers(p.records)] == [2, 4]


def test_delete_records_kafka_python(broker, admin, raw, unique_topic):
    from kafka import TopicPartition
    import kafka.errors as Errors
    t = unique_topic("drk")
    assert raw.create_topic(t, 2) == 0
    produce(raw, t, 0, 6)
    produce(raw, t, 1, 6)
    res = admin.delete_records({TopicPartition(t, 0): 2, TopicPartition(t, 1): -1})
    assert {tp.partition: r["low_watermark"] for tp, r in res.items()} == {0: 2, 1: 6}
    with pytest.raises(Errors.OffsetOutOfRangeError):
        admin.delete_records({TopicPartition(t, 0): 100})
    from kafka import KafkaConsumer
    cons = KafkaConsumer(bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest",
                         enable_auto_commit=False, consumer_timeout_ms=5000)
    cons.assign([TopicPartition(t, 0)])
    got = [m.offset for m in cons]
    cons.close()
    assert got == [2, 3, 4, 5]


def test_delete_records_confluent(broker, raw, unique_topic):
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient
    t = unique_topic("drc")
    assert raw.create_topic(t, 1) == 0
    produce(raw, t, 0, 5)
    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    futs = a.delete_records([TopicPartition(t, 0, 3)], request_timeout=20)
    (fut,) = futs.values()
    assert fut.result(timeout=30).low_watermark == 3
    assert earliest(raw, t, 0) == 3


# ------------------------------------------------------------------ Incremental / legacy AlterConfigs
def test_incremental_alter_configs_ops_raw(raw, unique_topic):
    t = unique_topic("iac")
    assert raw.create_topic(t, 1, {"retention.ms": "1000000"}) == 0
    assert incremental(raw, [(TOPIC, t, [("segment.ms", SET, "3600000"), ("retention.ms", DELETE, None),
                                         ("cleanup.policy", APPEND, "compact")])]) == [(0, None)]
    # APPEND starts from the Kafka default ("delete") when the topic has no override
    assert topic_overrides(raw, t) == {"segment.ms": "3600000", "cleanup.policy": "delete,compact"}
    assert incremental(raw, [(TOPIC, t, [("cleanup.policy", SUBTRACT, "delete")])]) == [(0, None)]
    assert topic_overrides(raw, t)["cleanup.policy"] == "compact"
    # validate_only: answered, nothing changes
    assert incremental(raw, [(TOPIC, t, [("segment.ms", SET, "7")])], validate_only=True) == [(0, None)]
    assert topic_overrides(raw, t)["segment.ms"] == "3600000"
    # deleting a key that is not set (or unknown) is a no-op
    assert incremental(raw, [(TOPIC, t, [("no.such.config", DELETE, None)])]) == [(0, None)]

    def code(resources, **kw):
        return [e for e, _ in incremental(raw, resources, **kw)]
    assert code([(TOPIC, t, [("retention.ms", APPEND, "5")])]) == [ErrorCode.INVALID_CONFIG]
    assert code([(TOPIC, t, [("no.such.config", SET, "1")])]) == [ErrorCode.INVALID_CONFIG]
    assert code([(TOPIC, t, [("retention.ms", SET, "soon")])]) == [ErrorCode.INVALID_CONFIG]
    assert code([(TOPIC, t, [("cleanup.policy", SET, "shred")])]) == [ErrorCode.INVALID_CONFIG]
    assert code([(TOPIC, t, [("retention.ms", SET, None)])]) == [ErrorCode.INVALID_REQUEST]
    assert code([(TOPIC, t, [("retention.ms", SET, "1"), ("retention.ms", DELETE, None)])]) == [ErrorCode.INVALID_REQUEST]
    # an unknown operation: Kafka 4.1's OpType.forId throws (admin_configs/incremental/list_ops)
    assert code([(TOPIC, t, [("retention.ms", 7, "1")])]) == [ErrorCode.UNKNOWN_SERVER_ERROR]
    assert code([(TOPIC, "no-such-topic-iac", [("retention.ms", SET, "1")])]) == [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    assert code([(TOPIC, "", [("retention.ms", SET, "1")])]) == [ErrorCode.INVALID_REQUEST]
    assert code([(TOPIC, "bad/name", [])]) == [ErrorCode.INVALID_TOPIC_EXCEPTION]
    assert code([(TOPIC, t, []), (TOPIC, t, [])]) == [ErrorCode.INVALID_REQUEST] * 2
    assert code([(99, "x", [])]) == [ErrorCode.INVALID_REQUEST]
    # a failed resource changes nothing (all keys or none)
    assert code([(TOPIC, t, [("segment.ms", SET, "1"), ("retention.ms", SET, "x")])]) == [ErrorCode.INVALID_CONFIG]
    assert topic_overrides(raw, t)["segment.ms"] == "3600000"


def test_broker_and_logger_resources_raw(raw):
    err = incremental(raw, [(BROKER, "1", [("log.dirs", SET, "/elsewhere")])])
    assert err == [(ErrorCode.INVALID_REQUEST, "Cannot update these configs dynamically: Set(log.dirs)")]
    assert incremental(raw, [(BROKER, "", [("num.partitions", SET, "3")])])[0][0] == ErrorCode.INVALID_REQUEST
    assert incremental(raw, [(BROKER, "1", [("log.retention.ms", DELETE, None)])]) == [(0, None)]
    assert incremental(raw, [(BROKER, "1", [("num.partitions", APPEND, "3")])])[0][0] == ErrorCode.INVALID_CONFIG
    assert incremental(raw, [(BROKER, "2", [])])[0][0] == ErrorCode.INVALID_REQUEST
    assert incremental(raw, [(BROKER, "one", [])])[0][0] == ErrorCode.INVALID_REQUEST
    assert legacy_alter(raw, [(BROKER, "1", {"node.id": "5"})])[0][0] == ErrorCode.INVALID_REQUEST
    # a dynamic key with a bad value: INVALID_REQUEST naming it; unknown keys are accepted (as Kafka)
    assert incremental(raw, [(BROKER, "1", [("log.retention.ms", SET, "soon")])], validate_only=True)[0][0] \
        == ErrorCode.INVALID_REQUEST
    assert incremental(raw, [(BROKER, "1", [("no.such.key", SET, "1")])], validate_only=True) == [(0, None)]
    assert legacy_alter(raw, [(BROKER_LOGGER, "1", {"root": "INFO"})])[0][0] == ErrorCode.INVALID_REQUEST

    def logger_levels():
        body = {"resources": [{"resource_type": BROKER_LOGGER, "resource_name": "1", "configuration_keys": None}],
                "include_synonyms": False, "include_documentation": False}
        r = raw.request(32, 4, body).results[0]
        assert r.error_code == 0, r
        return {e.name: e.value for e in r.configs}
    assert "root" in logger_levels() and "minikafka.storage" in logger_levels()
    assert incremental(raw, [(BROKER_LOGGER, "1", [("minikafka.storage", SET, "DEBUG")])]) == [(0, None)]
    assert logger_levels()["minikafka.storage"] == "DEBUG"
    assert incremental(raw, [(BROKER_LOGGER, "1", [("minikafka.storage", SET, "TRACE")])], validate_only=True) == [(0, None)]
    assert logger_levels()["minikafka.storage"] == "DEBUG"
    assert incremental(raw, [(BROKER_LOGGER, "1", [("minikafka.storage", DELETE, None)])]) == [(0, None)]
    assert logger_levels()["minikafka.storage"] == logger_levels()["root"]
    bad = {
        ("minikafka.storage", SET, "LOUD"): ErrorCode.INVALID_CONFIG,
        ("no.such.logger", SET, "INFO"): ErrorCode.INVALID_CONFIG,
        ("root", DELETE, None): ErrorCode.INVALID_REQUEST,
        ("root", APPEND, "INFO"): ErrorCode.INVALID_REQUEST,
    }
    for entry, code in bad.items():
        assert incremental(raw, [(BROKER_LOGGER, "1", [entry])])[0][0] == code, entry
    assert incremental(raw, [(BROKER_LOGGER, "7", [])])[0][0] == ErrorCode.INVALID_REQUEST


def test_legacy_alter_configs_replaces_the_override_set(raw, unique_topic):
    t = unique_topic("lac")
    assert raw.create_topic(t, 1, {"retention.ms": "1000000", "segment.ms": "3600000"}) == 0
    assert legacy_alter(raw, [(TOPIC, t, {"max.message.bytes": "2048"})]) == [(0, None)]
    assert topic_overrides(raw, t) == {"max.message.bytes": "2048"}
    assert legacy_alter(raw, [(TOPIC, t, {})], validate_only=True, version=0) == [(0, None)]
    assert topic_overrides(raw, t) == {"max.message.bytes": "2048"}
    assert legacy_alter(raw, [(TOPIC, t, {"max.message.bytes": None})])[0][0] == ErrorCode.INVALID_REQUEST
    assert legacy_alter(raw, [(TOPIC, t, {"bogus": "1"})])[0][0] == ErrorCode.INVALID_CONFIG
    assert legacy_alter(raw, [(TOPIC, "no-such-topic-lac", {})])[0][0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert legacy_alter(raw, [(TOPIC, t, {})]) == [(0, None)]
    assert topic_overrides(raw, t) == {}


def test_altered_configs_take_effect_and_survive_restart(broker_factory, unique_topic):
    b = broker_factory()
    t = unique_topic("eff")
    big = make_batch([b"x" * 3000])
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic(t, 1) == 0
        assert c.produce(t, 0, big).error_code == 0
        assert incremental(c, [(TOPIC, t, [("max.message.bytes", SET, "1000"),
                                           ("message.timestamp.type", SET, "LogAppendTime")])]) == [(0, None)]
        assert c.produce(t, 0, big).error_code == ErrorCode.MESSAGE_TOO_LARGE
        r = c.produce(t, 0, make_batch([b"small"], timestamp=1000))
        assert r.error_code == 0 and r.log_append_time_ms > 1000
    b.restart(kill=True)
    with RawClient.to(b.bootstrap) as c:
        assert topic_overrides(c, t) == {"max.message.bytes": "1000", "message.timestamp.type": "LogAppendTime"}
        assert c.produce(t, 0, big).error_code == ErrorCode.MESSAGE_TOO_LARGE
        assert incremental(c, [(TOPIC, t, [("max.message.bytes", DELETE, None)])]) == [(0, None)]
        assert c.produce(t, 0, big).error_code == 0


def test_kafka_python_alter_and_describe_configs(admin, raw, unique_topic):
    from kafka.admin import ConfigResource, ConfigResourceType
    from kafka.admin._configs import AlterConfigOp
    t = unique_topic("kpc")
    assert raw.create_topic(t, 1) == 0
    res = admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, t, {"retention.ms": "123456",
                                                                            "cleanup.policy": (AlterConfigOp.APPEND, "compact")})])
    assert res == {"topic": {t: "OK"}}
    assert topic_overrides(raw, t) == {"retention.ms": "123456", "cleanup.policy": "delete,compact"}
    desc = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, t)])
    assert "123456" in repr(desc) and "delete,compact" in repr(desc)
    # the legacy API (incremental=False): kafka-python fills in the other modified keys
    res = admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, t, {"retention.ms": "654321"})],
                              incremental=False)
    assert res == {"topic": {t: "OK"}}
    assert topic_overrides(raw, t) == {"retention.ms": "654321", "cleanup.policy": "delete,compact"}
    res = admin.reset_configs([ConfigResource(ConfigResourceType.TOPIC, t, ["retention.ms"])])
    assert res == {"topic": {t: "OK"}}
    assert topic_overrides(raw, t) == {"cleanup.policy": "delete,compact"}
    res = admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, t, {"retention.ms": "x"})])
    assert "InvalidConfig" in res["topic"][t] or "INVALID_CONFIG" in res["topic"][t].upper(), res


def test_confluent_incremental_alter_and_describe_topics(broker, raw, unique_topic):
    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
    t = unique_topic("cfa")
    assert raw.create_topic(t, 3) == 0
    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    res = ConfigResource(ResourceType.TOPIC, t, incremental_configs=[
        ConfigEntry("retention.ms", "222222", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND)])
    for f in a.incremental_alter_configs([res]).values():
        f.result(timeout=30)
    assert topic_overrides(raw, t) == {"retention.ms": "222222", "cleanup.policy": "delete,compact"}
    bad = ConfigResource(ResourceType.TOPIC, t, incremental_configs=[
        ConfigEntry("retention.ms", "5", incremental_operation=AlterConfigOpType.APPEND)])
    from confluent_kafka import KafkaException
    with pytest.raises(KafkaException) as ei:
        for f in a.incremental_alter_configs([bad]).values():
            f.result(timeout=30)
    assert ei.value.args[0].code() == ErrorCode.INVALID_CONFIG
    (fut,) = a.describe_topics(TopicCollection([t])).values()
    d = fut.result(timeout=30)
    assert d.name == t and [p.id for p in d.partitions] == [0, 1, 2]
    assert all(p.leader.id == 1 and [n.id for n in p.isr] == [1] for p in d.partitions)


# ------------------------------------------------------------------ DescribeLogDirs
def test_describe_log_dirs(broker, admin, raw, unique_topic):
    t = unique_topic("ldir")
    assert raw.create_topic(t, 2) == 0
    produce(raw, t, 1, 5)
    [entry] = admin.describe_log_dirs()
    assert entry["broker"] == 1
    [d] = entry["log_dirs"]
    assert d["error_code"] == 0 and d["log_dir"] == str(broker.data_dir.resolve())
    assert d["total_bytes"] > 0 and 0 < d["usable_bytes"] <= d["total_bytes"]
    parts = {p["partition_index"]: p for tp in d["topics"] if tp["name"] == t for p in tp["partitions"]}
    assert set(parts) == {0, 1}
    for p, info in parts.items():
        on_disk = sum(f.stat().st_size for f in broker.partition_dir(t, p).glob("*.log"))
        assert info["partition_size"] == on_disk and info["offset_lag"] == 0 and not info["is_future_key"]
    assert parts[1]["partition_size"] > 0 and parts[0]["partition_size"] == 0
    # asking for some partitions: only those (missing ones are left out)
    r = raw.request(35, 4, {"topics": [{"topic": t, "partitions": [1, 9]}, {"topic": "nope-ldir", "partitions": [0]}]})
    assert r.error_code == 0
    [res] = r.results
    assert [(x.name, [p.partition_index for p in x.partitions]) for x in res.topics] == [(t, [1])]
    r1 = raw.request(35, 1, {"topics": None})
    assert r1.results[0].log_dir == d["log_dir"]


# ------------------------------------------------------------------ ElectLeaders
def test_elect_leaders(admin, raw, unique_topic):
    t = unique_topic("el")
    assert raw.create_topic(t, 2) == 0
    for v in (0, 1, 2):
        body = {"election_type": 0, "topic_partitions": [{"topic": t, "partitions": [0, 1, 5]},
                                                         {"topic": "nope-el", "partitions": [0]}], "timeout_ms": 1000}
        r = raw.request(43, v, body)
        got = {(x.topic, p.partition_id): p.error_code for x in r.replica_election_results for p in x.partition_result}
        assert got == {(t, 0): ErrorCode.ELECTION_NOT_NEEDED, (t, 1): ErrorCode.ELECTION_NOT_NEEDED,
                       (t, 5): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ("nope-el", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    r = raw.request(43, 2, {"election_type": 1, "topic_partitions": None, "timeout_ms": 1000})
    assert r.error_code == 0 and t in {x.topic for x in r.replica_election_results}
    assert all(not x.partition_result for x in r.replica_election_results)
    r = raw.request(43, 2, {"election_type": 5, "topic_partitions": [{"topic": t, "partitions": [0]}], "timeout_ms": 1})
    assert r.error_code == ErrorCode.INVALID_REQUEST
    assert r.replica_election_results[0].partition_result[0].error_code == ErrorCode.INVALID_REQUEST
    # kafka-python treats ELECTION_NOT_NEEDED as success
    admin.elect_leaders(0, {t: [0, 1]})


# ------------------------------------------------------------------ DescribeTopicPartitions
def dtp(c, names, limit=2000, cursor=None):
    body = {"topics": [{"name": n} for n in names], "response_partition_limit": limit, "cursor": cursor}
    return c.request(75, 0, body)


def test_describe_topic_partitions_paging(raw, unique_topic):
    a, b = unique_topic("dtpa"), unique_topic("dtpb")
    assert raw.create_topic(a, 3) == 0 and raw.create_topic(b, 2) == 0
    r = dtp(raw, [b, a, "nope-dtp", "bad/name"])
    assert r.next_cursor is None
    by = {t.name: t for t in r.topics}
    assert [t.name for t in r.topics] == sorted([a, b, "nope-dtp", "bad/name"])
    assert by["nope-dtp"].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert by["bad/name"].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    ta = by[a]
    assert ta.error_code == 0 and not ta.is_internal and ta.topic_id.int != 0
    assert [(p.partition_index, p.leader_id, list(p.replica_nodes), list(p.isr_nodes)) for p in ta.partitions] == \
        [(i, 1, [1], [1]) for i in range(3)]
    assert ta.partitions[0].eligible_leader_replicas == [] and ta.partitions[0].last_known_elr == []
    # page through both topics two partitions at a time
    seen, cursor = [], None
    for _ in range(10):
        r = dtp(raw, [a, b], limit=2, cursor=cursor)
        seen += [(t.name, p.partition_index) for t in r.topics for p in t.partitions]
        if r.next_cursor is None:
            break
        cursor = {"topic_name": r.next_cursor.topic_name, "partition_index": r.next_cursor.partition_index}
    assert seen == sorted([(a, i) for i in range(3)] + [(b, i) for i in range(2)])
    # exactly filling the limit with one topic points the cursor at the next topic's start
    r = dtp(raw, [a, b], limit=3)
    assert r.next_cursor.topic_name == b and r.next_cursor.partition_index == 0
    # every topic when none are named (internal ones flagged)
    r = dtp(raw, [])
    assert {a, b} <= {t.name for t in r.topics}
    # cursor must name a listed topic and a valid partition
    r = dtp(raw, [a], cursor={"topic_name": b, "partition_index": 0})
    assert [t.error_code for t in r.topics] == [ErrorCode.INVALID_REQUEST]
    r = dtp(raw, [a], cursor={"topic_name": a, "partition_index": -1})
    assert [t.error_code for t in r.topics] == [ErrorCode.INVALID_REQUEST]


def test_describe_topic_partitions_kafka_python(admin, raw, unique_topic):
    t = unique_topic("dtpk")
    assert raw.create_topic(t, 4) == 0
    res = admin.describe_topic_partitions([t], response_partition_limit=3)
    assert [p["partition_index"] for p in res["topics"][0]["partitions"]] == [0, 1, 2]
    assert res["next_cursor"] == {"topic_name": t, "partition_index": 3}
    res = admin.describe_topic_partitions([t], cursor=res["next_cursor"])
    assert [p["partition_index"] for p in res["topics"][0]["partitions"]] == [3] and res["next_cursor"] is None


# ------------------------------------------------------------------ SASL on a PLAINTEXT listener
def test_sasl_requests_answer_illegal_state(raw):
    for v in (0, 1):
        r = raw.request(17, v, {"mechanism": "PLAIN"})
        assert r.error_code == ErrorCode.ILLEGAL_SASL_STATE and list(r.mechanisms) == []
    r = raw.request(36, 2, {"auth_bytes": b"\0u\0p"})
    assert r.error_code == ErrorCode.ILLEGAL_SASL_STATE
    # the connection stays usable
    assert raw.request(18, 3, {"client_software_name": "t", "client_software_version": "1"}).error_code == 0


# ------------------------------------------------------------------ Java AdminClient 4.1
def admin_tool(java_client, mode: str, *args: str) -> list[dict]:
    cmd = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", java_client.classpath,
           "AdminTool", mode, *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"AdminTool {mode} exited {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"
    lines = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
    assert lines and lines[-1] == {"type": "summary", "ok": True}, r.stdout
    return lines[:-1]


def requests_served(port: int, api: str) -> float:
    from prometheus_client.parser import text_string_to_metric_families
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    return sum(s.value for fam in text_string_to_metric_families(text) for s in fam.samples
               if s.name == "kafka_network_requestmetrics_requests_total" and s.labels.get("request") == api)


def test_java_admin_client(java_client, broker_factory, unique_topic):
    mport = free_port()
    b = broker_factory(overrides={"metrics.listener": f"127.0.0.1:{mport}"})
    t, compact = unique_topic("jadm"), unique_topic("jadmc")
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic(t, 3) == 0
        assert c.create_topic(compact, 1, {"cleanup.policy": "compact"}) == 0
        produce(c, t, 1, 8)
        topic_id = dtp(c, [t]).topics[0].topic_id

    before = requests_served(mport, "DescribeTopicPartitions")
    out = admin_tool(java_client, "describe", "--bootstrap", b.bootstrap, "--topics", f"{t},nope-jadm")
    assert requests_served(mport, "DescribeTopicPartitions") > before  # 4.1 describes with API 75
    desc = {o["name"]: o for o in out}
    assert desc["nope-jadm"]["error"] == "UnknownTopicOrPartitionException"
    d = desc[t]
    assert not d["internal"] and d["topic_id"] != "AAAAAAAAAAAAAAAAAAAAAA"
    import base64
    assert base64.urlsafe_b64decode(d["topic_id"] + "==") == topic_id.bytes
    assert d["partitions"] == [{"partition": i, "leader": 1, "replicas": [1], "isr": [1], "elr": [],
                                "last_known_elr": []} for i in range(3)]

    assert admin_tool(java_client, "delete-records", "--bootstrap", b.bootstrap, "--topic", t,
                      "--partition", "1", "--offset", "5") == [{"type": "deleted", "low_watermark": 5}]
    [e] = admin_tool(java_client, "delete-records", "--bootstrap", b.bootstrap, "--topic", t,
                     "--partition", "1", "--offset", "50")
    assert e["error"] == "OffsetOutOfRangeException", e
    [e] = admin_tool(java_client, "delete-records", "--bootstrap", b.bootstrap, "--topic", compact,
                     "--partition", "0", "--offset", "0")
    assert e["error"] == "PolicyViolationException", e
    with RawClient.to(b.bootstrap) as c:
        assert earliest(c, t, 1) == 5

    [r] = admin_tool(java_client, "alter", "--bootstrap", b.bootstrap, "--topic", t,
                     "--set", "retention.ms=3333333;segment.ms=4444444", "--append", "cleanup.policy=compact")
    assert r == {"type": "altered", "configs": {"retention.ms": "3333333", "segment.ms": "4444444",
                                                "cleanup.policy": "delete,compact"}}, r
    [r] = admin_tool(java_client, "alter", "--bootstrap", b.bootstrap, "--topic", t,
                     "--delete", "segment.ms", "--subtract", "cleanup.policy=compact")
    assert r == {"type": "altered", "configs": {"retention.ms": "3333333", "cleanup.policy": "delete"}}, r
    [r] = admin_tool(java_client, "alter", "--bootstrap", b.bootstrap, "--topic", t, "--set", "retention.ms=soon")
    assert r["error"] == "InvalidConfigurationException", r

    assert admin_tool(java_client, "elect", "--bootstrap", b.bootstrap, "--topic", t, "--partition", "0") == \
        [{"type": "elect", "error": "ElectionNotNeededException"}]


def test_dynamic_broker_config_retention_applies_and_survives_restart(broker_factory, unique_topic):
    """log.retention.ms changed at run time with confluent-kafka's incremental_alter_configs:
    old segments go at the next retention check, without a restart; the setting is
    DYNAMIC_BROKER_CONFIG in DescribeConfigs and is still in force after kill -9."""
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                       ConfigSource, ResourceType)
    b = broker_factory(overrides={"log.retention.check.interval.ms": 100})
    t = unique_topic("dynret")
    hour_ago = int(time.time() * 1000) - 3600_000
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic(t, 1, {"segment.bytes": "300"}) == 0
        for i in range(3):  # a segment each, an hour old
            assert c.produce(t, 0, make_batch([b"x" * 150], timestamp=hour_ago)).error_code == 0
        assert c.list_offset(t, 0, timestamp=-2) == 0
    admin = AdminClient({"bootstrap.servers": b.bootstrap})

    def alter(value, op=AlterConfigOpType.SET):
        res = ConfigResource(ResourceType.BROKER, "1",
                             incremental_configs=[ConfigEntry("log.retention.ms", value, incremental_operation=op)])
        admin.incremental_alter_configs([res])[res].result(30)

    def described():
        res = ConfigResource(ResourceType.BROKER, "1")
        return admin.describe_configs([res])[res].result(30)["log.retention.ms"]

    alter("600000")  # 10 minutes: the hour-old segments are past it
    entry = described()
    assert entry.value == "600000" and entry.source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
    assert not entry.is_read_only
    with RawClient.to(b.bootstrap) as c:
        wait_until(lambda: c.list_offset(t, 0, timestamp=-2) == 3, 15)
    b.kill()
    b.start()
    assert described().value == "600000"
    with RawClient.to(b.bootstrap) as c:
        for i in range(2):
            assert c.produce(t, 0, make_batch([b"y" * 150], timestamp=hour_ago)).error_code == 0
        wait_until(lambda: c.list_offset(t, 0, timestamp=-2) == 5, 15)
    alter(None, AlterConfigOpType.DELETE)
    entry = described()
    # Kafka's log.retention.ms has no default (log.retention.hours' 168 applies): null once the
    # dynamic value is gone (admin_configs/describe/broker)
    assert entry.value is None and entry.source == ConfigSource.DEFAULT_CONFIG.value
