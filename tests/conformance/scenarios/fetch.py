"""The shape of a Fetch answer (Kafka's LogSegment.read, LocalLog.read, ReplicaManager.readFromLog):
a slice of one segment file per partition, cut where the byte limit falls (a partial batch at the
end), a first batch larger than the limit whole (KIP-74, for the first partition with data only),
partitions sharing max_bytes in request order, read_committed cut at the LSO's batch; the aborted
transactions listed with Kafka's bound (offset index, next segment, log end) and when a partition
has no budget left; unknown partitions and topics (an empty aborted list) against read errors
(a null one)."""
import uuid

from minikafka.protocol import records as rec

from ..dsl import (Call, Scenario, Topic, add_partitions, await_txn, batch, delete_records, end_txn, fetch,
                   fetch_parts, idem_produce, init_pid, produce, ref, restart, txn_produce)

RC, RU = 1, 0
MB = 1 << 20
HOURS_AGO_2 = [-7_200_000]
# segment.ms one hour: a batch stamped now rolls a segment whose first batch is two hours old
ROLLING = {"t": Topic(configs={"segment.ms": "3600000"})}


def size(values) -> int:
    """Bytes of the batch the runner builds for these values (timestamps do not change it)."""
    return len(rec.build_batch([rec.Record(i, 0, None, v.encode(), ()) for i, v in enumerate(values)]))


def plain(values, **kw):
    """A batch without producer id."""
    return idem_produce(None, list(values), **kw)


def txn(who: str, values, seq: int = 0, timestamps=None, **kw):
    return produce(batch(who, list(values), seq, transactional=True, timestamps=timestamps), txn="{tx}", **kw)


def finish(who: str, commit: bool):
    return [end_txn(who, commit=commit), await_txn("CompleteCommit" if commit else "CompleteAbort")]


def parts(n: int, pmb: int = MB, offsets=None):
    return [("{t}", p, 0 if offsets is None else offsets[p], pmb) for p in range(n)]


A = size(["a" * 100])          # one-record plain batches of 100 bytes
BIG = ["r%d" % i * 60 for i in range(5)]   # a five-record batch, several hundred bytes
S = size(["s0" * 20])           # the rolling scenarios' batches
P = size(["p0" * 30])           # one batch per partition and step
X = size(["x" * 60])            # the read_committed scenarios' batches
G = size(["big" * 40])          # a partition's first batch that spends the budget

SCENARIOS = [
    Scenario("fetch/cut_mid_batch", "Three plain batches: byte limits that fall inside a batch return the "
             "file's bytes up to the limit (a cut batch at the end), by max_bytes or partition_max_bytes, "
             "at both isolation levels.", steps=[
        plain(["a" * 100]),
        plain(["b" * 100]),
        plain(["c" * 100]),
        fetch(isolation=RU, max_bytes=A + 50),
        fetch(isolation=RU, max_bytes=2 * A),
        fetch(isolation=RU, max_bytes=2 * A + 1),
        fetch(offset=1, isolation=RU, max_bytes=A + 10),
        fetch(isolation=RC, max_bytes=A + 50),
        fetch(isolation=RU, max_bytes=MB, partition_max_bytes=A + 20),
        fetch(isolation=RU, max_bytes=A + 20, partition_max_bytes=MB),
    ]),
    Scenario("fetch/first_batch_over_limit", "A five-record batch larger than the limits: returned whole "
             "from any offset inside it (KIP-74), whichever limit is smaller; a limit just past it cuts the "
             "next batch.", steps=[
        plain(BIG),
        plain(["tail"]),
        fetch(isolation=RU, max_bytes=1),
        fetch(isolation=RU, max_bytes=100),
        fetch(offset=3, isolation=RU, max_bytes=100),
        fetch(isolation=RU, max_bytes=size(BIG) + 5),
        fetch(isolation=RU, max_bytes=MB, partition_max_bytes=1),
        fetch(isolation=RU, max_bytes=1, partition_max_bytes=MB),
        fetch(isolation=RC, max_bytes=1),
        fetch(offset=5, isolation=RU, max_bytes=1),
    ]),
    Scenario("fetch/segment_boundary", "Two batches stamped two hours ago, then two stamped now "
             "(segment.ms one hour): the second pair starts a new segment, and a fetch returns one segment's "
             "data however large its limit.", topics=ROLLING, steps=[
        plain(["s0" * 20], timestamps=HOURS_AGO_2),
        plain(["s1" * 20], timestamps=HOURS_AGO_2),
        plain(["s2" * 20]),
        plain(["s3" * 20]),
        fetch(isolation=RU),
        fetch(offset=1, isolation=RU),
        fetch(offset=2, isolation=RU),
        fetch(offset=3, isolation=RU),
        fetch(isolation=RU, max_bytes=S + 10),
        fetch(isolation=RC),
    ]),
    Scenario("fetch/segment_boundary_aborted", "An aborted transaction whose ABORT marker (stamped now) "
             "rolled the segment, then another one in the new segment: a read_committed fetch of the first "
             "segment lists the transaction indexed in the next segment, bounded by its base offset; a fetch "
             "of the second segment lists both.", topics=ROLLING, steps=[
        plain(["p0" * 20], timestamps=HOURS_AGO_2),
        init_pid("a"),
        add_partitions("a"),
        txn("a", ["x" * 40], timestamps=HOURS_AGO_2),
        *finish("a", commit=False),
        plain(["p1" * 20]),
        add_partitions("a"),
        txn("a", ["y" * 40], seq=1),
        *finish("a", commit=False),
        plain(["p2" * 20]),
        fetch(offset=0),
        fetch(offset=1),
        fetch(offset=2),
        fetch(offset=3),
        fetch(offset=5),
        fetch(offset=0, isolation=RU),
    ]),
    Scenario("fetch/partitions_share_max_bytes", "Three partitions of two batches, read in one Fetch: "
             "max_bytes is spent in request order; the first partition's first batch comes whole, a later "
             "partition whose first batch the budget left cuts gets nothing, one whose budget reaches past "
             "its first batch gets a cut batch.", topics={"t": Topic(partitions=3)}, steps=[
        *[plain([f"p{p}" * 30], partition=p) for p in range(3) for _ in range(2)],
        *[fetch_parts(parts(3), isolation=RU, max_bytes=m)
          for m in (1, P + 10, 3 * P - 1, 3 * P, 3 * P + 10, 5 * P + 5, MB)],
        fetch_parts(parts(3, pmb=10), isolation=RU),
        fetch_parts(parts(3, pmb=10, offsets=[2, 0, 0]), isolation=RU),
        fetch_parts(parts(3), isolation=RC, max_bytes=3 * P - 1),
    ]),
    Scenario("fetch/read_committed_cut_at_lso", "Two plain batches, an open transaction, a plain batch: "
             "read_committed slices stop where the LSO's batch starts, whatever the limit; inside the "
             "readable part a limit still cuts a batch; read_uncommitted reads on.", steps=[
        plain(["a" * 60]),
        plain(["b" * 60]),
        init_pid("a"),
        add_partitions("a"),
        txn_produce("a", ["x" * 60]),
        plain(["c" * 60]),
        *[fetch(max_bytes=m) for m in (1, X - 1, X + 5, 2 * X, 2 * X + 5, 3 * X + 5, MB)],
        fetch(offset=1),
        fetch(offset=2),
        fetch(offset=3),
        fetch(isolation=RU, max_bytes=2 * X + 5),
        fetch(isolation=RU),
    ]),
    Scenario("fetch/aborted_list_and_budget", "read_committed, a partition with a large plain batch read "
             "first, then one with an aborted transaction: with no budget left the second partition returns "
             "no records but its aborted list; with a budget that cuts its first batch, no records and a "
             "null list; with enough for its first batch, the records and the list.",
             topics={"t": Topic(partitions=2)}, steps=[
        plain(["big" * 40], partition=0),
        init_pid("a"),
        add_partitions("a", [("{t}", 1)]),
        txn("a", ["x" * 60], partition=1),
        *finish("a", commit=False),
        plain(["p" * 60], partition=1),
        *[fetch_parts(parts(2), max_bytes=G + extra) for extra in (0, 1, X - 1, X, X + 5)],
        fetch_parts(parts(2)),
        fetch_parts([("{t}", 1, 0, 1)]),
        fetch_parts([("{t}", 1, 0, MB), ("{t}", 0, 0, MB)], max_bytes=1),
        fetch_parts(parts(2), isolation=RU, max_bytes=G + 1),
    ]),
    Scenario("fetch/unknown_partition_topic_and_read_errors", "An unknown partition, topic or topic id is "
             "answered before reading: offsets -1 and an empty aborted list; a read that fails (offset past "
             "the end or below the log start, an unknown leader epoch) answers offsets -1 and a null list; "
             "the other partitions of the request keep their answers, and the erroneous ones follow them.",
             topics={"t": Topic(partitions=2), "u": Topic()}, steps=[
        plain(["a", "b", "c"], partition=0),
        plain(["d"], partition=1),
        plain(["e"], topic="{u}"),
        Call(3, 12, {"topics": [{"name": "{u}", "topic_id": None}], "allow_auto_topic_creation": False,
                     "include_topic_authorized_operations": False}, save="md"),
        *[fetch_parts([("{t}", 0, 0, MB), ("{t}", 7, 0, MB)], isolation=iso) for iso in (RC, RU)],
        *[fetch_parts([("{nosuch}", 0, 0, MB), ("{t}", 1, 0, MB)], isolation=iso) for iso in (RC, RU)],
        fetch_parts([(("", uuid.UUID(int=7)), 0, 0, MB), (("", ref("md.topics.0.topic_id")), 0, 0, MB)], v=13),
        fetch_parts([("{t}", 7, 0, MB), ("{u}", 0, 0, MB), ("{t}", 0, 0, MB), ("{t}", 1, 0, MB)]),
        *[fetch_parts([("{t}", 0, 5, MB), ("{t}", 1, 0, MB)], isolation=iso) for iso in (RC, RU)],
        *[fetch_parts([("{t}", 0, 0, MB, 100)], isolation=iso) for iso in (RC, RU)],
        delete_records(2),
        *[fetch_parts([("{t}", 0, 0, MB), ("{t}", 1, 0, MB)], isolation=iso) for iso in (RC, RU)],
        fetch_parts([("{t}", 0, 2, MB)]),
    ]),
]


def _interval_1_log():
    """p0 | x ABORT | p1 | y ABORT | p2 | z COMMIT | p3 | w ABORT: offsets 0-11, aborted transactions
    starting at 1, 4 and 10 (with index.interval.bytes=1 every batch but the first is indexed)."""
    steps = [init_pid("a")]
    for k, (value, commit) in enumerate((("x", False), ("y", False), ("z", True), ("w", False))):
        steps += [plain([f"p{k}" * 30]), add_partitions("a"), txn("a", [value * 50], seq=k),
                  *finish("a", commit=commit)]
    return steps


SCENARIOS += [
    Scenario("fetch/aborted_bound_index_interval_1", "index.interval.bytes=1: a read_committed fetch lists "
             "the aborted transactions up to the first offset-index entry at or after the end of its slice; "
             "at offset 0 Kafka's index search skips an exact match of the first entry. Offsets 0-11 with "
             "max_bytes 1 and some with 250; after kill -9 the rebuilt index answers alike.",
             topics={"t": Topic(configs={"index.interval.bytes": "1"})}, steps=[
        *_interval_1_log(),
        *[fetch(offset=o, max_bytes=1) for o in range(12)],
        *[fetch(offset=o, max_bytes=250) for o in (0, 1, 2, 3, 7, 8, 11)],
        restart(kill=True),
        *[fetch(offset=o, max_bytes=1) for o in (0, 1, 3, 4, 6, 10)],
    ]),
]

# fetch.max.bytes at its smallest: 1 KB caps every Fetch, whatever max_bytes it asks for
FETCH_CAP = {"fetch.max.bytes": "1024"}
K = size(["k" * 300])           # a batch of about 370 bytes: three fill the cap

SCENARIOS += [
    Scenario("fetch/broker_fetch_max_bytes", "fetch.max.bytes=1024 on the broker: a Fetch asking for 1 MB gets "
             "at most 1 KB (three partitions of three batches, read in request order: whole batches, then "
             "a cut one), and a single batch larger than the cap still comes whole; at v4 and v11 too.",
             broker=FETCH_CAP, topics={"t": Topic(partitions=3)}, steps=[
        *[plain(["k" * 300], partition=p) for p in range(3) for _ in range(3)],
        fetch_parts(parts(3), isolation=RU),
        fetch_parts(parts(3), isolation=RU, max_bytes=K + 10),
        fetch_parts(parts(3, offsets=[3, 0, 0]), isolation=RU),
        fetch_parts(parts(3), isolation=RU, v=4),
        fetch_parts(parts(3), isolation=RU, v=11),
        plain(["L" * 1500], partition=0),
        fetch_parts(parts(3, offsets=[3, 3, 3]), isolation=RU),
        fetch(offset=3, isolation=RU),
    ]),
]
