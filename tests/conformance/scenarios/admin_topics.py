"""The admin APIs every team's fixtures use (CreateTopics, DeleteTopics, CreatePartitions,
DescribeConfigs, IncrementalAlterConfigs, AlterConfigs, Metadata) and admin actions racing
transactions: a topic deleted, grown, truncated or made compacted while a transaction has it
open, and what the coordinator, the partition and a re-created topic of the same name then do.

Kafka completes a deletion asynchronously (its brokers learn it from the metadata log a moment
after DeleteTopics answers), so a step after a deletion or a creation polls (``gone``,
``served``) before it looks."""
import uuid

from ..dsl import (TV2, Scenario, Topic, add_offsets, add_partitions, await_txn, batch, call, delete_records,
                   describe_producers, describe_txn, end_txn, fetch, fetch_parts, idem_produce, init_pid, list_offsets,
                   offset_fetch, produce, ref, txn_offset_commit, txn_produce)

ZERO = uuid.UUID(int=0)
RC, RU = 1, 0
MB = 1 << 20
TOPIC, BROKER = 2, 4
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
# ConfigResource types the APIs do not serve for configs (CLUSTER is not a config resource)
UNKNOWN_RESOURCE = 99


# ------------------------------------------------------------------ request builders

def new_topic(name: str, partitions: int = 1, rf: int = 1, assignments=(), configs=None) -> dict:
    return {"name": name, "num_partitions": partitions, "replication_factor": rf,
            "assignments": [{"partition_index": i, "broker_ids": ids} for i, ids in assignments],
            "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}


def create(*topics: dict, v: int = 7, validate_only: bool = False, **kw):
    return call(19, v, {"topics": list(topics), "timeout_ms": 30000, "validate_only": validate_only}, **kw)


def create1(name: str, partitions: int = 1, rf: int = 1, v: int = 7, validate_only: bool = False, **kw):
    return create(new_topic(name, partitions, rf, configs=kw.pop("configs", None)), v=v,
                  validate_only=validate_only, **kw)


def delete_names(*names: str, v: int = 5, **kw):
    return call(20, v, {"topic_names": list(names), "timeout_ms": 30000}, **kw)


def delete_v6(*topics, **kw):
    """DeleteTopics v6: each topic a name (str) or an id (a saved answer's ref, a UUID) or (name, id)."""
    def one(t):
        if isinstance(t, tuple):
            return {"name": t[0], "topic_id": t[1]}
        if isinstance(t, str):
            return {"name": t, "topic_id": ZERO}
        return {"name": None, "topic_id": t}
    return call(20, 6, {"topics": [one(t) for t in topics], "timeout_ms": 30000}, **kw)


def create_parts(name: str, count: int, assignments=None, validate_only: bool = False, v: int = 3, **kw):
    return call(37, v, {"topics": [{"name": name, "count": count, "assignments": None if assignments is None else
                                    [{"broker_ids": ids} for ids in assignments]}],
                        "timeout_ms": 30000, "validate_only": validate_only}, **kw)


def metadata(*names: str, auto: bool = False, v: int = 12, **kw):
    topics = [{"name": n, "topic_id": ZERO} for n in names]
    return call(3, v, {"topics": topics, "allow_auto_topic_creation": auto,
                       "include_topic_authorized_operations": False}, **kw)


def gone(name: str = "{t}", **kw):
    """Metadata until the broker no longer knows the topic (UNKNOWN_TOPIC_OR_PARTITION)."""
    return metadata(name, until={"topics.0.error_code": 3}, **kw)


def served(name: str = "{t}", partition: int = 0, **kw):
    """ListOffsets until the partition's leader serves it (a topic created by a step)."""
    return list_offsets(name, partition, isolation=RU, until={"topics.0.partitions.0.error_code": 0}, **kw)


def describe_cfg(rtype: int, name: str, keys=None, synonyms: bool = False, docs: bool = False, v: int = 4, **kw):
    return call(32, v, {"resources": [{"resource_type": rtype, "resource_name": name, "configuration_keys": keys}],
                        "include_synonyms": synonyms, "include_documentation": docs}, **kw)


def settled(key: str, value, name: str = "{t}", **kw):
    """DescribeConfigs of one topic key until it shows ``value``: Kafka's broker applies a config
    change from the metadata log a moment after the controller answered the alter."""
    return describe_cfg(TOPIC, name, [key], until={"results.0.configs.0.value": value}, **kw)


def incremental(resources, validate_only: bool = False, **kw):
    """IncrementalAlterConfigs: resources = [(type, name, [(key, op, value), ...]), ...]."""
    return call(44, 1, {"resources": [{"resource_type": t, "resource_name": n, "configs": [
        {"name": k, "config_operation": op, "value": val} for k, op, val in entries]} for t, n, entries in resources],
        "validate_only": validate_only}, **kw)


def alter_topic(entries, name: str = "{t}", validate_only: bool = False, **kw):
    return incremental([(TOPIC, name, entries)], validate_only=validate_only, **kw)


def legacy_alter(resources, validate_only: bool = False, v: int = 2, **kw):
    """AlterConfigs: resources = [(type, name, {key: value}), ...]: each resource's whole set."""
    return call(33, v, {"resources": [{"resource_type": t, "resource_name": n, "configs": [
        {"name": k, "value": val} for k, val in cfg.items()]} for t, n, cfg in resources],
        "validate_only": validate_only}, **kw)


def begin(who: str = "a", parts="{t}"):
    return [init_pid(who), add_partitions(who, parts)]


TOPIC_KEYS = ["cleanup.policy", "retention.ms", "min.insync.replicas", "max.message.bytes", "segment.bytes",
              "compression.type", "message.timestamp.type"]

# ------------------------------------------------------------------ admin_race: exactly-once first

SCENARIOS = [
    Scenario("admin_race/delete_topic_open_txn_commit", "A topic deleted while a transaction has written to it; "
             "then EndTxn commit: what it answers, whether the coordinator completes, and that the producer "
             "goes on with another transaction on another topic.", topics={"t": Topic(), "u": Topic()}, steps=[
        *begin(),
        txn_produce("a", ["x", "y"]),
        delete_names("{t}"),
        gone(),
        describe_txn(),
        end_txn("a", commit=True),
        await_txn("CompleteCommit"),
        add_partitions("a", "{u}"),
        txn_produce("a", ["z"], topic="{u}"),
        end_txn("a", commit=True),
        await_txn("CompleteCommit"),
        fetch("{u}"),
    ]),
    Scenario("admin_race/delete_topic_open_txn_abort", "A topic deleted while a transaction has written to it, "
             "then EndTxn abort; the transaction also spans a partition that stays, which gets its marker.",
             topics={"t": Topic(), "u": Topic()}, steps=[
        *begin(parts=[("{t}", 0), ("{u}", 0)]),
        txn_produce("a", ["x"]),
        txn_produce("a", ["y"], topic="{u}"),
        delete_names("{t}"),
        gone(),
        end_txn("a", commit=False),
        await_txn("CompleteAbort"),
        fetch("{u}", isolation=RU),
        list_offsets("{u}", isolation=RC),
    ]),
    Scenario("admin_race/delete_recreate_open_txn_commit", "A topic deleted and re-created (same name, new id) "
             "while a transaction that wrote to the old one is open; then EndTxn commit: does the marker reach "
             "the new topic, what a read_committed Fetch and the LSO of the new topic show, and whether the "
             "old producer leaks into its producer state.", steps=[
        *begin(),
        txn_produce("a", ["old0", "old1"]),
        delete_names("{t}"),
        gone(),
        create1("{t}"),
        served(),
        idem_produce(None, ["new0"]),
        end_txn("a", commit=True),
        await_txn("CompleteCommit"),
        describe_txn(),
        fetch(isolation=RC),
        fetch(isolation=RU),
        list_offsets(isolation=RC),
        describe_producers(),
    ]),
    Scenario("admin_race/delete_recreate_open_txn_abort", "The same race ending in EndTxn abort, and the "
             "producer then writing the new topic in its next transaction.", steps=[
        *begin(),
        txn_produce("a", ["old0"]),
        delete_names("{t}"),
        gone(),
        create1("{t}"),
        served(),
        end_txn("a", commit=False),
        await_txn("CompleteAbort"),
        fetch(isolation=RU),
        add_partitions("a"),
        txn_produce("a", ["new"], seq=1),
        txn_produce("a", ["new"], seq=0),
        end_txn("a", commit=True),
        await_txn("CompleteCommit"),
        fetch(isolation=RC),
        describe_producers(),
    ]),
    Scenario("admin_race/create_partitions_open_txn", "CreatePartitions while a transaction is open on the "
             "topic, then AddPartitionsToTxn of the new partition, a write to it and a commit: both "
             "partitions get their marker.", steps=[
        *begin(),
        txn_produce("a", ["p0"]),
        create_parts("{t}", 2),
        served(partition=1),
        add_partitions("a", [("{t}", 1)]),
        txn_produce("a", ["p1"], partition=1),
        end_txn("a", commit=True),
        await_txn("CompleteCommit"),
        fetch(partition=1, isolation=RC),
        fetch(partition=0, isolation=RC),
    ]),
    Scenario("admin_race/delete_records_past_open_txn_start", "DeleteRecords past an open transaction's first "
             "offset with committed data after it: ListOffsets earliest/latest under both isolation levels, "
             "what read_committed Fetch returns, then the abort.", steps=[
        idem_produce(None, ["p0"]),
        *begin(),
        txn_produce("a", ["x", "y"]),
        idem_produce(None, ["p3"]),
        delete_records(2),
        list_offsets(timestamp=-2, isolation=RC),
        list_offsets(timestamp=-1, isolation=RC),
        list_offsets(timestamp=-1, isolation=RU),
        fetch(offset=2, isolation=RC),
        end_txn("a", commit=False),
        await_txn("CompleteAbort"),
        list_offsets(timestamp=-1, isolation=RC),
        fetch(offset=2, isolation=RC),
    ]),
    Scenario("admin_race/produce_to_deleted_topic", "An idempotent producer writing to a topic that is deleted: "
             "its next batch, DescribeProducers, ListOffsets and Fetch of the gone partition.", steps=[
        init_pid("a", txn=None),
        idem_produce("a", ["x"], seq=0),
        delete_names("{t}"),
        gone(),
        idem_produce("a", ["y"], seq=1),
        describe_producers(),
        list_offsets(isolation=RU),
        fetch(isolation=RU),
    ]),
    Scenario("admin_race/transactional_produce_to_deleted_topic", "A transactional producer's next batch to a "
             "partition of its open transaction after the topic is deleted; then the commit.", steps=[
        *begin(),
        txn_produce("a", ["x"]),
        delete_names("{t}"),
        gone(),
        txn_produce("a", ["y"], seq=1),
        add_partitions("a"),
        end_txn("a", commit=True),
        await_txn("CompleteCommit"),
    ]),
    Scenario("admin_race/compact_with_open_txn", "cleanup.policy=compact set while a transaction with keyed "
             "records is open on the topic; then a record without a key in the same transaction, a keyed one, "
             "and the commit.", steps=[
        *begin(),
        produce(batch("a", ["x"], keys=["k"], transactional=True), txn="{tx}"),
        alter_topic([("cleanup.policy", SET, "compact")]),
        settled("cleanup.policy", "compact"),
        produce(batch("a", ["nokey"], seq=1, transactional=True), txn="{tx}"),
        produce(batch("a", ["y"], seq=1, keys=["k"], transactional=True), txn="{tx}"),
        end_txn("a", commit=True),
        await_txn("CompleteCommit"),
        fetch(isolation=RC),
    ]),
    Scenario("admin_race/stale_topic_id", "After DeleteTopics, Produce v13 and Fetch v13 by the old topic id, "
             "before and after the name is re-created with a new id.", steps=[
        metadata("{t}", save="m"),
        delete_names("{t}"),
        gone(),
        produce(batch(None, ["x"]), topic=ref("m.topics.0.topic_id"), v=13),
        fetch_parts([(("{t}", ref("m.topics.0.topic_id")), 0, 0, MB)], isolation=RU, v=13),
        create1("{t}"),
        served(),
        metadata("{t}"),
        produce(batch(None, ["x"]), topic=ref("m.topics.0.topic_id"), v=13),
        fetch_parts([(("{t}", ref("m.topics.0.topic_id")), 0, 0, MB)], isolation=RU, v=13),
        delete_v6(ref("m.topics.0.topic_id")),
    ]),
]

SCENARIOS += [
    Scenario("admin_race/delete_topic_then_fence", "A new instance of the producer (InitProducerId) while its "
             "transaction is open on a deleted topic: the coordinator aborts it (markers to a gone partition) "
             "and the new epoch begins.", steps=[
        *begin(),
        txn_produce("a", ["x"]),
        delete_names("{t}"),
        gone(),
        init_pid("b", retry_while=(51,)),
        await_txn("Empty"),
    ]),
    Scenario("admin_race/delete_recreate_idempotent", "An idempotent producer's next sequence to a topic deleted "
             "and re-created under the same name (the new partition knows no producer), then from 0.", steps=[
        init_pid("a", txn=None),
        idem_produce("a", ["x"], seq=0),
        idem_produce("a", ["y"], seq=1),
        delete_names("{t}"),
        gone(),
        create1("{t}"),
        served(),
        idem_produce("a", ["z"], seq=2),
        idem_produce("a", ["z"], seq=0),
        describe_producers(),
    ]),
    Scenario("admin_race/txn_offset_commit_deleted_topic", "TxnOffsetCommit in a transaction for a topic deleted "
             "meanwhile, then the commit, and what OffsetFetch shows.", steps=[
        *begin(),
        txn_produce("a", ["x"]),
        add_offsets("a"),
        delete_names("{t}"),
        gone(),
        txn_offset_commit("a", {("{t}", 0): 1}),
        end_txn("a", commit=True),
        await_txn("CompleteCommit"),
        offset_fetch(),
    ]),
    Scenario("admin_race/max_message_bytes_open_txn", "max.message.bytes lowered while a transaction is open on "
             "the topic: the next, larger batch of the transaction is MESSAGE_TOO_LARGE; a small one goes on; "
             "the commit.", steps=[
        *begin(),
        txn_produce("a", ["x"]),
        alter_topic([("max.message.bytes", SET, "100")]),
        settled("max.message.bytes", "100"),
        txn_produce("a", ["y" * 200], seq=1),
        txn_produce("a", ["z"], seq=1),
        end_txn("a", commit=True),
        await_txn("CompleteCommit"),
        fetch(isolation=RC),
    ]),
]

SCENARIOS += [
    Scenario("admin_race/add_partition_before_create_partitions", "AddPartitionsToTxn of a partition the topic "
             "does not have yet, in an open transaction; then CreatePartitions makes it and the same request "
             "succeeds; the commit marks both partitions.", steps=[
        *begin(),
        txn_produce("a", ["p0"]),
        add_partitions("a", [("{t}", 1)]),
        describe_txn(),
        create_parts("{t}", 2),
        served(partition=1),
        add_partitions("a", [("{t}", 1)]),
        txn_produce("a", ["p1"], partition=1),
        end_txn("a", commit=True),
        await_txn("CompleteCommit"),
        fetch(partition=1, isolation=RC),
    ]),
    Scenario("admin_race/v2_delete_recreate_open_txn_commit", "Transactions V2 (Produce v12 adds the partition, "
             "EndTxn v5 bumps the epoch): the topic deleted and re-created while the transaction is open; the "
             "commit marker (with the bumped epoch) and the new topic's producer state.", features=TV2, steps=[
        init_pid("a", v=5),
        txn_produce("a", ["old"], v=12),
        delete_names("{t}"),
        gone(),
        create1("{t}"),
        served(),
        end_txn("a", commit=True, v=5),
        await_txn("CompleteCommit"),
        fetch(isolation=RC),
        describe_producers(),
        produce(batch("a", ["new"], epoch=ref("a.producer_epoch") + 1, transactional=True), txn="{tx}", v=12),
        end_txn("a", commit=True, v=5, epoch=ref("a.producer_epoch") + 1),
        await_txn("CompleteCommit"),
        fetch(isolation=RC),
    ]),
]

# ------------------------------------------------------------------ admin_topics: CreateTopics

SCENARIOS += [
    Scenario("admin_topics/create/invalid_names", "CreateTopics with names Kafka refuses: empty, '.', '..', 250 "
             "characters, a space, a slash, a non-ASCII letter; 249 characters is the longest allowed "
             "(validate_only).", topics={}, steps=[
        create1(""),
        create1("."),
        create1(".."),
        create1("a" * 250),
        create1("bad name"),
        create1("a/b"),
        create1("caf\u00e9"),
        create1("b" * 249, validate_only=True),
    ]),
    Scenario("admin_topics/create/existing_and_collision", "CreateTopics of an existing name (also validate_only), "
             "and of a name that differs from an existing one only by '.' against '_'.", steps=[
        create1("{t}"),
        create1("{t}", validate_only=True),
        create1("{t:_}"),
        create1("{t:_}", validate_only=True),
        metadata("{t:_}"),
    ]),
    Scenario("admin_topics/create/partition_counts", "num_partitions 0, -1 (the broker's num.partitions), "
             "-2, and a huge count (validate_only); replication_factor 2 on one node, 0 and -1.", topics={},
             steps=[
        create1("{a}", partitions=0),
        create1("{b}", partitions=-1, rf=-1),
        create1("{c}", partitions=-2),
        create1("{d}", partitions=100000, validate_only=True),
        create1("{e}", rf=2),
        create1("{f}", rf=0),
        create1("{g}", rf=-2),
        served("{b}"),
        metadata("{b}"),
    ]),
    Scenario("admin_topics/create/manual_assignments", "Replica assignments: this node for two partitions; an "
             "unknown broker; the same broker twice; partition indexes not from 0; assignments with "
             "num_partitions set.", topics={}, steps=[
        create(new_topic("{a}", -1, -1, [(0, [1]), (1, [1])])),
        create(new_topic("{b}", -1, -1, [(0, [7])])),
        create(new_topic("{c}", -1, -1, [(0, [1, 1])])),
        create(new_topic("{d}", -1, -1, [(1, [1])])),
        create(new_topic("{e}", 1, -1, [(0, [1])])),
        create(new_topic("{f}", -1, -1, [(0, [])])),
        served("{a}", 1),
        metadata("{a}"),
    ]),
    Scenario("admin_topics/create/validate_only", "validate_only creates nothing: its answer (v7 topic id, "
             "partitions, configs), then Metadata, then the real creation.", topics={}, steps=[
        create1("{a}", partitions=3, validate_only=True),
        metadata("{a}"),
        create1("{a}", partitions=3),
        served("{a}", 2),
    ]),
    Scenario("admin_topics/create/configs", "CreateTopics with configs: the v5+ answer's configs, an unknown key, "
             "bad values, a value outside its range, a null value.", topics={}, steps=[
        create1("{a}", configs={"cleanup.policy": "compact", "retention.ms": "3600000"}),
        create1("{b}", configs={"no.such.config": "1"}),
        create1("{c}", configs={"retention.ms": "abc"}),
        create1("{d}", configs={"cleanup.policy": "bogus"}),
        create1("{e}", configs={"min.insync.replicas": "0"}),
        create1("{f}", configs={"retention.ms": None}),
        create1("{g}", configs={"compression.type": "zstd", "min.cleanable.dirty.ratio": "1.5"}),
        describe_cfg(TOPIC, "{a}", ["cleanup.policy", "retention.ms"], until={"results.0.error_code": 0}),
    ]),
    Scenario("admin_topics/create/internal_names", "CreateTopics of the internal topics' names (they exist) and "
             "of a new name starting with '__'.", topics={}, steps=[
        create1("__consumer_offsets"),
        create1("__transaction_state", validate_only=True),
        create1("__conformance_new_internal_looking", validate_only=True),
    ]),
    Scenario("admin_topics/create/record_limit", "Kafka's controller writes at most 10000 records for one request: "
             "a topic of 9999 partitions and one of 10000, two topics of 6000 in one request, and CreatePartitions "
             "adding 10000 (all validate_only).", steps=[
        create1("{a}", partitions=9999, validate_only=True),
        create1("{b}", partitions=10000, validate_only=True),
        create(new_topic("{c}", 6000), new_topic("{d}", 6000), validate_only=True),
        create_parts("{t}", 10001, validate_only=True),
        create_parts("{t}", 10002, validate_only=True),
    ]),
    Scenario("admin_topics/create/old_versions", "CreateTopics v4 (no configs in the answer) and v5 (configs, "
             "no topic id).", topics={}, steps=[
        create1("{a}", v=4),
        create1("{b}", v=5, validate_only=True),
        create1("{a}", v=2),
    ]),
    Scenario("admin_topics/create/same_topic_twice", "The same name twice in one CreateTopics, beside a good "
             "one: INVALID_REQUEST for both entries, the other created.", topics={}, steps=[
        create(new_topic("{a}"), new_topic("{b}"), new_topic("{a}", 2)),
        served("{b}"),
        metadata("{a}", "{b}"),
    ]),
    # ------------------------------------------------------------ DeleteTopics
    Scenario("admin_topics/delete/by_name_and_id", "DeleteTopics v6 by id and by name, v5 by name; unknown "
             "names and ids; an entry with both a name and an id; a name deleted twice.",
             topics={"t": Topic(), "u": Topic(), "w": Topic()}, steps=[
        metadata("{t}", save="m"),
        delete_v6(ref("m.topics.0.topic_id")),
        delete_v6("{u}"),
        delete_v6("{nosuch}", uuid.UUID(int=12345)),
        delete_names("{w}", "{nosuch}"),
        gone("{t}"),
        gone("{w}"),
        delete_names("{w}"),
        delete_v6(ref("m.topics.0.topic_id")),
    ]),
    Scenario("admin_topics/delete/both_name_and_id", "DeleteTopics v6 with an entry giving both a name and an id.",
             steps=[
        metadata("{t}", save="m"),
        delete_v6(("{t}", ref("m.topics.0.topic_id"))),
        metadata("{t}"),
    ]),
    Scenario("admin_topics/delete/disabled", "DeleteTopics with delete.topic.enable=false: by name, by id, "
             "unknown; the topic stays.", broker={"delete.topic.enable": "false"}, steps=[
        metadata("{t}", save="m"),
        delete_names("{t}"),
        delete_v6(ref("m.topics.0.topic_id")),
        delete_names("{nosuch}"),
        metadata("{t}"),
    ]),
    Scenario("admin_topics/delete/internal_topics", "DeleteTopics of __consumer_offsets (v5) and "
             "__transaction_state (v6): Kafka 4.1 deletes internal topics like any other (a cluster of its own).",
             topics={}, alone=True, steps=[
        delete_names("__consumer_offsets"),
        delete_v6("__transaction_state"),
        gone("__consumer_offsets"),
        gone("__transaction_state"),
    ]),
    # ------------------------------------------------------------ CreatePartitions
    Scenario("admin_topics/create_partitions/counts", "CreatePartitions to fewer, the same, more (validate_only, "
             "then for real), for an unknown topic, and the same topic twice in one request.",
             topics={"t": Topic(partitions=2)}, steps=[
        create_parts("{t}", 1),
        create_parts("{t}", 2),
        create_parts("{t}", 4, validate_only=True),
        metadata("{t}"),
        create_parts("{t}", 3),
        served(partition=2),
        create_parts("{nosuch}", 3),
        call(37, 3, {"topics": [{"name": "{t}", "count": 5, "assignments": None},
                                {"name": "{t}", "count": 6, "assignments": None}],
                     "timeout_ms": 30000, "validate_only": False}),
        metadata("{t}"),
    ]),
    Scenario("admin_topics/create_partitions/assignments", "CreatePartitions with assignments: this node; an "
             "unknown broker; too few and too many entries for the new count; the same broker twice.",
             steps=[
        create_parts("{t}", 2, [[7]]),
        create_parts("{t}", 3, [[1]]),
        create_parts("{t}", 2, [[1], [1]]),
        create_parts("{t}", 2, [[1, 1]]),
        create_parts("{t}", 2, [[1]]),
        served(partition=1),
        create_parts("{t}", 0),
    ]),
    # ------------------------------------------------------------ Metadata
    Scenario("admin_topics/metadata/recreated_topic_id", "Metadata v12 of a deleted and re-created name: a new "
             "topic id; Metadata by the old id.", steps=[
        metadata("{t}", save="m"),
        delete_names("{t}"),
        gone(),
        create1("{t}", partitions=2),
        served(partition=1),
        metadata("{t}"),
        call(3, 12, {"topics": [{"name": None, "topic_id": ref("m.topics.0.topic_id")}],
                     "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}),
    ]),
    Scenario("admin_topics/metadata/auto_create_enabled", "Metadata with allow_auto_topic_creation on a broker "
             "with auto.create.topics.enable (Kafka's default): the first answer, then the topic as created "
             "(num.partitions); an invalid name; without the flag.", topics={}, steps=[
        metadata("{a}", auto=True),
        metadata("{a}", until={"topics.0.error_code": 0, "topics.0.partitions.0.leader_id": 1}),
        metadata("{b}", auto=False),
        metadata("bad name", auto=True),
        metadata("{c}", auto=True, v=3),
    ]),
    Scenario("admin_topics/metadata/auto_create_disabled", "Metadata with allow_auto_topic_creation on a broker "
             "with auto.create.topics.enable=false; a Produce to an unknown topic.", topics={},
             broker={"auto.create.topics.enable": "false"}, steps=[
        metadata("{a}", auto=True),
        metadata("{a}", auto=True, v=3),
        idem_produce(None, ["x"], topic="{a}"),
    ]),
]

# ------------------------------------------------------------------ admin_configs

SCENARIOS += [
    Scenario("admin_configs/describe/topic_all", "DescribeConfigs of a topic with one override, with synonyms "
             "(no documentation: minikafka words its own): every key Kafka reports, its value, source, type and read-only flag.",
             topics={"t": Topic(configs={"retention.ms": "3600000"})}, steps=[
        describe_cfg(TOPIC, "{t}", synonyms=True),
    ]),
    Scenario("admin_configs/describe/hours_in_broker_properties", "log.retention.hours set in the broker's "
             "properties: a topic's retention.ms takes its value but lists no broker synonym for it (the synonyms "
             "start at the topic key's own broker key, log.retention.ms) and keeps the default source; the "
             "broker's log.retention.hours and log.retention.ms entries.",
             broker={"log.retention.hours": "2"}, steps=[
        describe_cfg(TOPIC, "{t}", ["retention.ms"], synonyms=True),
        describe_cfg(BROKER, "1", ["log.retention.ms", "log.retention.hours"], synonyms=True),
    ]),
    Scenario("admin_configs/describe/topic_plain", "DescribeConfigs of a topic without synonyms or documentation, "
             "of some keys, of an unknown key, of an unknown topic, and v1/v2/v3.",
             topics={"t": Topic(configs={"cleanup.policy": "compact,delete"})}, steps=[
        describe_cfg(TOPIC, "{t}"),
        describe_cfg(TOPIC, "{t}", TOPIC_KEYS + ["no.such.key"], synonyms=True),
        describe_cfg(TOPIC, "{nosuch}"),
        describe_cfg(TOPIC, "", ["retention.ms"]),
        describe_cfg(TOPIC, "{t}", ["cleanup.policy"], synonyms=True, v=1),
        describe_cfg(TOPIC, "{t}", ["cleanup.policy"], synonyms=True, v=3),
    ]),
    Scenario("admin_configs/describe/broker", "DescribeConfigs of this broker (some keys, with synonyms), of the cluster-wide "
             "dynamic defaults (resource ''), of an unknown broker id, of a non-numeric id, and of an unknown resource type.",
             topics={}, steps=[
        describe_cfg(BROKER, "1", ["log.retention.ms", "num.partitions", "auto.create.topics.enable",
                                   "log.cleanup.policy", "message.max.bytes", "min.insync.replicas",
                                   "compression.type", "log.retention.hours", "delete.topic.enable"],
                     synonyms=True),
        describe_cfg(BROKER, "", synonyms=True),
        describe_cfg(BROKER, "7", ["num.partitions"]),
        describe_cfg(BROKER, "abc", ["num.partitions"]),
        describe_cfg(UNKNOWN_RESOURCE, "x"),
        call(32, 4, {"resources": [
            {"resource_type": TOPIC, "resource_name": "{t}", "configuration_keys": ["retention.ms"]},
            {"resource_type": BROKER, "resource_name": "1", "configuration_keys": ["num.partitions"]}],
            "include_synonyms": False, "include_documentation": False}),
    ]),
    Scenario("admin_configs/incremental/set_delete", "IncrementalAlterConfigs SET and DELETE on a topic: the "
             "override's source, DELETE of a key never set, validate_only, a bad value, an unknown key, a read-"
             "only-looking key.", steps=[
        alter_topic([("retention.ms", SET, "7200000"), ("max.message.bytes", SET, "2000000")]),
        settled("retention.ms", "7200000"),
        describe_cfg(TOPIC, "{t}", ["retention.ms", "max.message.bytes"], synonyms=True),
        alter_topic([("retention.ms", DELETE, None), ("segment.ms", DELETE, None)]),
        alter_topic([("retention.bytes", SET, "1000")], validate_only=True),
        alter_topic([("retention.ms", SET, "abc")]),
        alter_topic([("no.such.config", SET, "1")]),
        alter_topic([("min.insync.replicas", SET, "0")]),
        alter_topic([("retention.ms", SET, None)]),
        settled("retention.ms", "604800000"),
        describe_cfg(TOPIC, "{t}", ["retention.ms", "max.message.bytes", "retention.bytes"]),
    ]),
    Scenario("admin_configs/incremental/list_ops", "APPEND and SUBTRACT on the list-typed cleanup.policy: append "
             "a new value, an existing one, subtract one, subtract the last, on a non-list key.", steps=[
        alter_topic([("cleanup.policy", APPEND, "compact")]),
        settled("cleanup.policy", "delete,compact"),
        alter_topic([("cleanup.policy", APPEND, "compact")]),
        describe_cfg(TOPIC, "{t}", ["cleanup.policy"]),
        alter_topic([("cleanup.policy", SUBTRACT, "delete")]),
        settled("cleanup.policy", "compact"),
        alter_topic([("cleanup.policy", SUBTRACT, "compact")]),
        settled("cleanup.policy", "", synonyms=True),
        alter_topic([("retention.ms", APPEND, "5")]),
        alter_topic([("cleanup.policy", APPEND, "bogus")]),
        alter_topic([("cleanup.policy", 7, "compact")]),
    ]),
    Scenario("admin_configs/incremental/duplicates_and_unknowns", "IncrementalAlterConfigs naming one resource "
             "twice in a request, one key twice in a resource, an unknown topic, and an unknown resource type.",
             steps=[
        incremental([(TOPIC, "{t}", [("retention.ms", SET, "1000")]),
                     (TOPIC, "{t}", [("retention.ms", SET, "2000")])]),
        alter_topic([("retention.ms", SET, "1000"), ("retention.ms", SET, "2000")]),
        alter_topic([("retention.ms", SET, "1000")], name="{nosuch}"),
        incremental([(UNKNOWN_RESOURCE, "x", [("retention.ms", SET, "1000")])]),
        describe_cfg(TOPIC, "{t}", ["retention.ms"]),
    ]),
    Scenario("admin_configs/legacy/alter_replaces", "Legacy AlterConfigs replaces a topic's whole override set: "
             "keys not given go back to their defaults; validate_only; a bad value; an unknown topic.",
             topics={"t": Topic(configs={"retention.ms": "3600000", "max.message.bytes": "2000000"})}, steps=[
        legacy_alter([(TOPIC, "{t}", {"segment.ms": "7200000"})]),
        settled("segment.ms", "7200000"),
        describe_cfg(TOPIC, "{t}", ["retention.ms", "max.message.bytes", "segment.ms"]),
        legacy_alter([(TOPIC, "{t}", {"retention.ms": "1"})], validate_only=True),
        legacy_alter([(TOPIC, "{t}", {"retention.ms": "x"})]),
        legacy_alter([(TOPIC, "{nosuch}", {"retention.ms": "1"})]),
        legacy_alter([(TOPIC, "{t}", {})]),
        settled("segment.ms", "604800000"),
        describe_cfg(TOPIC, "{t}", ["retention.ms", "max.message.bytes", "segment.ms"]),
        legacy_alter([(TOPIC, "{t}", {"retention.ms": "1"})], v=0),
    ]),
    Scenario("admin_configs/legacy/broker", "Legacy AlterConfigs on this broker: a dynamic key (validate_only), "
             "a read-only key, an unknown broker id.", topics={}, steps=[
        legacy_alter([(BROKER, "1", {"log.cleaner.backoff.ms": "15001"})], validate_only=True),
        legacy_alter([(BROKER, "1", {"log.dirs": "/tmp/x"})], validate_only=True),
        legacy_alter([(BROKER, "7", {"log.cleaner.backoff.ms": "15001"})], validate_only=True),
    ]),
]
