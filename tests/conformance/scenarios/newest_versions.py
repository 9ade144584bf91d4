"""The newest versions Kafka 4.1 serves of the oldest APIs: Fetch v17 (KIP-853, the follower's
directory id: nothing changes for a consumer) and v18 (KIP-1166, the follower's high watermark:
likewise), Metadata v13 (a top-level error code), each beside the version before it."""
from ..dsl import Call, Scenario, Topic, add_partitions, batch, end_txn, fetch_parts, idem_produce, init_pid, produce, ref
from ..dsl import await_txn, txn_produce

MB = 1 << 20


def metadata(topics, v: int = 13, auto: bool = False, **kw):
    return Call(3, v, {"topics": None if topics is None else [{"name": t, "topic_id": None} for t in topics],
                       "allow_auto_topic_creation": auto, "include_topic_authorized_operations": False}, **kw)


SCENARIOS = [
    Scenario("newest/metadata_v13", "Metadata v13 of a topic, of an unknown one, with a topic id, of every "
             "topic, and v12 beside it.", topics={"t": Topic(partitions=2)}, steps=[
        metadata(["{t}"], save="m"),
        metadata(["{t}"], v=12),
        metadata(["{nope}"]),
        Call(3, 13, {"topics": [{"name": None, "topic_id": ref("m.topics.0.topic_id")}],
                     "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}),
        metadata(None),
    ]),
    Scenario("newest/fetch_v17_v18", "Fetch v16, v17 and v18 of a partition with a committed and an aborted "
             "transaction (read_committed and read_uncommitted), of an unknown topic id, and with a stale "
             "leader epoch (the current leader and its endpoint).", topics={"t": Topic()}, steps=[
        Call(3, 12, {"topics": [{"name": "{t}", "topic_id": None}], "allow_auto_topic_creation": False,
                     "include_topic_authorized_operations": False}, save="md"),
        produce(batch(values=["a", "b"])),
        init_pid("p"),
        add_partitions("p"),
        txn_produce("p", ["c"]),
        end_txn("p", commit=False),
        await_txn("CompleteAbort"),
        idem_produce(None, ["d"]),
        *[fetch_parts([(("{t}", ref("md.topics.0.topic_id")), 0, 0, MB)], v=v, isolation=iso)
          for v in (16, 17, 18) for iso in (1, 0)],
        *[fetch_parts([(("", ref("md.topics.0.topic_id")), 0, 0, MB, 0)], v=v) for v in (16, 18)],
    ]),
]
