"""Incremental fetch sessions (KIP-227; Kafka's FetchManager, FetchSession, FetchContext,
FetchSessionCacheShard): a full fetch (epoch 0) opens a session; incremental fetches (epochs 1,
2, ...) name only the partitions whose position changed, add or forget partitions, and are answered
only the partitions with something new, in the session's order (a partition that returned records
goes to the back); wrong epochs, unknown ids, topic-id usage changes, closing with epoch -1, a full
cache, a cache of no slots, a restart, and ids outside every shard of Kafka's cache."""
import uuid

from ..dsl import (Call, Scenario, Topic, add_partitions, await_txn, end_txn, fetch_parts, init_pid, ref,
                   restart)
from .fetch import plain, size, txn

RC, RU = 1, 0
MB = 1 << 20
A = size(["a" * 100])   # one-record plain batches of 100-byte values
S1 = ref("f.session_id")


def full(parts, save="f", **kw):
    """A full fetch asking for a session (epoch 0)."""
    return fetch_parts(parts, epoch=0, save=save, **kw)


def inc(epoch, parts=(), session=S1, **kw):
    """An incremental fetch of the session saved as ``f`` (default)."""
    return fetch_parts(list(parts), session=session, epoch=epoch, **kw)


def metadata(save="md", topic="{t}"):
    return Call(3, 12, {"topics": [{"name": topic, "topic_id": None}], "allow_auto_topic_creation": False,
                        "include_topic_authorized_operations": False}, save=save)


T0, T1 = ("{t}", 0), ("{t}", 1)
UNKNOWN_ID = uuid.UUID(int=7)

SCENARIOS = [
    Scenario("fetch_sessions/full_then_incremental", "A full fetch of two partitions opens a session; "
             "incremental fetches name only moved positions and are answered only partitions with new "
             "records or a moved high watermark; a partition whose position the client did not move is read "
             "again from it.", topics={"t": Topic(partitions=2)}, steps=[
        plain(["a"], partition=0),
        full([("{t}", 0, 0, MB), ("{t}", 1, 0, MB)], isolation=RU),
        inc(1, isolation=RU, label="nothing moved: p0 is read again from 0"),
        inc(2, [("{t}", 0, 1, MB)], isolation=RU, label="p0 moved past a: nothing new"),
        inc(3, isolation=RU),
        plain(["b"], partition=1),
        inc(4, isolation=RU, label="p1 has b"),
        inc(5, [("{t}", 1, 1, MB)], isolation=RU),
        plain(["c"], partition=0),
        plain(["d"], partition=1),
        inc(6, isolation=RU, label="both have new records"),
        inc(7, [("{t}", 0, 2, MB), ("{t}", 1, 2, MB)], isolation=RU),
    ]),
    Scenario("fetch_sessions/partition_order", "Partitions share max_bytes in the session's order, and a "
             "partition that returned records goes to the back: a limit of one batch serves p0, then p1, "
             "then p0 again; a partition cut by the limit is answered only for its moved high watermark.",
             topics={"t": Topic(partitions=2)}, steps=[
        plain(["x" * 100], partition=0),
        plain(["y" * 100], partition=1),
        full([("{t}", 0, 0, MB), ("{t}", 1, 0, MB)], isolation=RU, max_bytes=A + 10),
        plain(["X" * 100], partition=0),
        inc(1, [("{t}", 0, 1, MB)], isolation=RU, max_bytes=A + 10, label="p0 first: its new batch"),
        plain(["Z" * 100], partition=0),
        inc(2, [("{t}", 0, 2, MB)], isolation=RU, max_bytes=A + 10,
            label="p1 first now: y; p0 cut, answered for its high watermark"),
        inc(3, [("{t}", 1, 1, MB)], isolation=RU, max_bytes=A + 10, label="p0 first again: Z"),
    ]),
    Scenario("fetch_sessions/epochs_and_ids", "A repeated or skipped epoch is INVALID_FETCH_SESSION_EPOCH "
             "and leaves the session as it was; an unknown id (or id 0 with an epoch) is "
             "FETCH_SESSION_ID_NOT_FOUND; a full fetch naming a session closes it (epoch 0 opens another, "
             "epoch -1 none); a negative id with epoch 0 is a plain full fetch.", steps=[
        plain(["a"]),
        full([("{t}", 0, 0, MB)]),
        inc(1, [("{t}", 0, 1, MB)]),
        inc(1, label="the same epoch again"),
        inc(5, label="an epoch ahead"),
        inc(2, label="the session is intact"),
        inc(1, session=12345),
        inc(3, session=0),
        full([("{t}", 0, 0, MB)], save="g", session=S1, label="epoch 0 naming S1: S1 closed, a new session"),
        inc(3, label="S1 is gone"),
        inc(1, session=ref("g.session_id")),
        fetch_parts([("{t}", 0, 0, MB)], session=ref("g.session_id"), epoch=-1, label="epoch -1: closed"),
        inc(2, session=ref("g.session_id")),
        full([("{t}", 0, 0, MB)], save="h", session=-7),
        inc(1, session=ref("h.session_id")),
    ]),
    Scenario("fetch_sessions/add_and_forget", "Incremental fetches add partitions (answered at once: the "
             "session has not answered them yet) and forget them; forgetting the last partition closes the "
             "session and answers the request as a sessionless fetch; a session of no partitions; an "
             "unknown partition stays in the session and is answered every time; forgetting what the "
             "session does not hold changes nothing.", topics={"t": Topic(partitions=2), "u": Topic()}, steps=[
        plain(["a"], partition=0),
        plain(["b"], topic="{u}"),
        full([("{t}", 0, 0, MB)], isolation=RU),
        inc(1, [("{t}", 0, 1, MB), ("{u}", 0, 0, MB)], isolation=RU, label="u-0 joins with b"),
        inc(2, [("{t}", 1, 0, MB), ("{u}", 0, 1, MB)], isolation=RU, label="t-1 joins, empty"),
        inc(3, isolation=RU, forget=[T0]),
        plain(["c"], partition=0),
        inc(4, isolation=RU, label="t-0 was forgotten: c is not answered"),
        inc(5, [("{t}", 7, 0, MB)], isolation=RU, forget=[("{nosuch}", 0), T0], label="an unknown partition joins"),
        inc(6, isolation=RU, label="the unknown partition again"),
        inc(7, [("{t}", 0, 0, MB)], isolation=RU, forget=[("{u}", 0), T1, ("{t}", 7)],
            label="forget all but t-0, which joins again with a and c"),
        inc(8, isolation=RU, forget=[T0], label="the last partition forgotten: sessionless"),
        inc(9, isolation=RU),
        full([], save="e", isolation=RU, label="a session of no partitions"),
        inc(1, session=ref("e.session_id"), isolation=RU),
        inc(2, session=ref("e.session_id"), isolation=RU),
    ]),
    Scenario("fetch_sessions/topic_ids", "A v13 session keys partitions by topic id: an unknown topic id "
             "is answered UNKNOWN_TOPIC_ID every time until forgotten by id; a v12 fetch on it, or a v13 "
             "fetch on a v12 session, is FETCH_SESSION_TOPIC_ID_ERROR.", steps=[
        metadata(),
        plain(["a"]),
        full([(("", ref("md.topics.0.topic_id")), 0, 0, MB), (("", UNKNOWN_ID), 0, 0, MB)], v=13),
        inc(1, [(("", ref("md.topics.0.topic_id")), 0, 1, MB)], v=13),
        inc(2, v=12),
        inc(2, v=13, forget=[(("", UNKNOWN_ID), 0)]),
        plain(["b"]),
        inc(3, v=16),
        full([("{t}", 0, 0, MB)], save="g"),
        inc(1, session=ref("g.session_id"), v=13),
        inc(1, session=ref("g.session_id"), v=12),
    ]),
    Scenario("fetch_sessions/read_committed", "A read_committed session: an open transaction moves the "
             "high watermark but not the LSO; the aborted transactions come with the records they cover.",
             steps=[
        init_pid("a"),
        add_partitions("a"),
        txn("a", ["x"]),
        end_txn("a", commit=False),
        await_txn("CompleteAbort"),
        plain(["p"]),
        full([("{t}", 0, 0, MB)]),
        inc(1, [("{t}", 0, 3, MB)]),
        add_partitions("a"),
        txn("a", ["y"], seq=1),
        inc(2, label="open transaction: the high watermark moved"),
        end_txn("a"),
        await_txn("CompleteCommit"),
        inc(3, label="committed: y and the marker up to the LSO"),
        inc(4, [("{t}", 0, 0, MB)], label="from 0 again: the aborted transaction listed"),
    ]),
    Scenario("fetch_sessions/ids_outside_the_shards", "Kafka's cache has 8 shards of Int.MaxValue / 8 ids: "
             "an id past the last shard, or below -(Int.MaxValue / 8), makes its lookup fail and the whole "
             "Fetch answers UNKNOWN_SERVER_ERROR (at the top and in every partition of the request) with "
             "the request's session id; the ids at the shards' edges are merely unknown.", steps=[
        plain(["a"]),
        inc(1, session=2147483647),
        full([("{t}", 0, 0, MB)], save=None, session=2147483647),
        fetch_parts([("{t}", 0, 0, MB), ("{t}", 3, 0, MB)], session=2147483640, epoch=-1),
        inc(1, session=2147483639),
        inc(1, session=-2147483648),
        inc(1, session=-268435455),
        inc(1, session=-268435454),
    ]),
    Scenario("fetch_sessions/no_slots", "max.incremental.fetch.session.cache.slots=7: fewer than one slot "
             "per shard, so no session is ever created.",
             broker={"max.incremental.fetch.session.cache.slots": "7"}, steps=[
        plain(["a"]),
        full([("{t}", 0, 0, MB)]),
        inc(1, session=1),
    ]),
    Scenario("fetch_sessions/cache_full", "max.incremental.fetch.session.cache.slots=8: one session per "
             "shard, shards taken in turn. Eight full fetches get sessions, the ninth none (no session has "
             "been idle for two minutes); closing the second lets the tenth, whose turn is the second's "
             "shard, have one; the eleventh again none.",
             broker={"max.incremental.fetch.session.cache.slots": "8"}, steps=[
        plain(["a"]),
        *[full([("{t}", 0, 0, MB)], save=f"s{i}") for i in range(1, 9)],
        full([("{t}", 0, 0, MB)], save="s9"),
        fetch_parts([("{t}", 0, 0, MB)], session=ref("s2.session_id"), epoch=-1),
        full([("{t}", 0, 0, MB)], save="s10"),
        full([("{t}", 0, 0, MB)], save="s11"),
        inc(1, session=ref("s1.session_id")),
        inc(1, session=ref("s10.session_id")),
    ]),
    Scenario("fetch_sessions/restart", "Sessions live in memory: after a restart the session id is "
             "unknown and a full fetch opens a new one.", steps=[
        plain(["a"]),
        full([("{t}", 0, 0, MB)]),
        inc(1, [("{t}", 0, 1, MB)]),
        restart(),
        inc(2),
        full([("{t}", 0, 1, MB)], save="g"),
        inc(1, session=ref("g.session_id")),
    ]),
]
