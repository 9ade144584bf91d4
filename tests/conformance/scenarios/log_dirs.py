"""AlterReplicaLogDirs (34) and the log dirs it moves partitions between (DescribeLogDirs 35).

With one log dir: a move to the dir the partition is in (nothing to do), to a dir that is not one of
``log.dirs``, of unknown topics and partitions. With two (dsl.TWO_LOG_DIRS): partitions moved
both ways while they hold records, read back after the move and after restarts; a move slowed by
the ``replica.alter.log.dirs.io.max.bytes.per.second`` throttle (a dynamic broker config), which
shows the future replica in DescribeLogDirs (is_future_key, its size and offset lag) after the
first copied chunk, then cancelled by a move back to the current dir, then let through. And the
answer to a principal without ALTER on the cluster."""
from ..dsl import SECURED, TWO_LOG_DIRS, Scenario, Topic, batch, call, fetch_parts, produce, ref, restart
from .acls import ALICE
from .cluster_apis import log_dirs

MB = 1 << 20
THROTTLE = "replica.alter.log.dirs.io.max.bytes.per.second"
TWO = {"t": Topic(partitions=2)}


def alter_dirs(moves, v: int = 2, **kw):
    """AlterReplicaLogDirs; ``moves`` = [(path, [(topic, partition), ...]), ...]."""
    dirs = []
    for path, parts in moves:
        topics: dict[str, list] = {}
        for t, p in parts:
            topics.setdefault(t, []).append(p)
        dirs.append({"path": path, "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]})
    return call(34, v, {"dirs": dirs}, **kw)


def throttle(value, **kw):
    """The dynamic broker config on this node (IncrementalAlterConfigs SET, or DELETE with None)."""
    op = {"name": THROTTLE, "config_operation": 0 if value is not None else 1, "value": value}
    return call(44, 1, {"resources": [{"resource_type": 4, "resource_name": "1", "configs": [op]}],
                        "validate_only": False}, **kw)


def placed(dir_a: list[int], dir_b: list[int], topic: str = "{t}") -> dict:
    """A DescribeLogDirs (of ``topic``'s partitions) ``until``: dir-a holds exactly the partitions
    ``dir_a`` and dir-b ``dir_b``, none of them a future replica."""
    want = {}
    for i, parts in enumerate((dir_a, dir_b)):
        if not parts:
            want[f"results.{i}.topics.0"] = "<absent>"
            continue
        want[f"results.{i}.topics.0.partitions.{len(parts)}"] = "<absent>"
        for k in range(len(parts)):
            want[f"results.{i}.topics.0.partitions.{k}.partition_index"] = parts
            want[f"results.{i}.topics.0.partitions.{k}.is_future_key"] = False
    return want


def read_all(topic: str = "{t}", partitions=(0, 1)):
    return fetch_parts([(topic, p, 0, MB) for p in partitions], isolation=0)


SCENARIOS = [
    Scenario("log_dirs/alter/one_dir", "One log dir: a partition moved to the dir it is in (v1 and v2), to a "
             "path that is not a log dir, to a relative path, of an unknown topic and partition (to its dir and "
             "to another path), one partition named under two dirs, and no dirs at all.", steps=[
        log_dirs({"{t}": [0]}, save="d"),
        alter_dirs([(ref("d.results.0.log_dir"), [("{t}", 0)])], v=1),
        alter_dirs([(ref("d.results.0.log_dir"), [("{t}", 0)])]),
        alter_dirs([("/no/such/log-dir", [("{t}", 0)])]),
        alter_dirs([("data", [("{t}", 0)])]),
        alter_dirs([(ref("d.results.0.log_dir"), [("{nope}", 0), ("{t}", 3)])]),
        alter_dirs([("/no/such/log-dir", [("{nope}", 0)])]),
        alter_dirs([(ref("d.results.0.log_dir"), [("{t}", 0)]), ("/no/such/log-dir", [("{t}", 0)])]),
        call(34, 2, {"dirs": []}),
        log_dirs({"{t}": [0]}),
    ]),
    Scenario("log_dirs/move/both_ways", "Two log dirs: both partitions moved to the first dir (where a new "
             "partition goes depends on the order a broker creates them), then partition 0 to the second while both "
             "hold records, read back; more records, partition 0 back and partition 1 over, read again; both to the "
             "second dir; a clean restart and a kill -9 keep them there.", topics=TWO, broker=TWO_LOG_DIRS,
             alone=True, steps=[
        produce(batch(values=["a", "b", "c"]), partition=0),
        produce(batch(values=["d", "e"]), partition=1),
        log_dirs({"{nope}": [0]}, save="d"),
        alter_dirs([(ref("d.results.0.log_dir"), [("{t}", 0), ("{t}", 1)])]),
        log_dirs({"{t}": [0, 1]}, until=placed([0, 1], [])),
        alter_dirs([(ref("d.results.1.log_dir"), [("{t}", 0)])]),
        log_dirs({"{t}": [0, 1]}, until=placed([1], [0])),
        read_all(),
        produce(batch(values=["f"]), partition=0),
        produce(batch(values=["g", "h"]), partition=1),
        alter_dirs([(ref("d.results.0.log_dir"), [("{t}", 0)]), (ref("d.results.1.log_dir"), [("{t}", 1)])]),
        log_dirs({"{t}": [0, 1]}, until=placed([0], [1])),
        read_all(),
        alter_dirs([(ref("d.results.1.log_dir"), [("{t}", 0), ("{t}", 1)])]),
        log_dirs({"{t}": [0, 1]}, until=placed([], [0, 1])),
        restart(),
        log_dirs({"{t}": [0, 1]}),
        read_all(),
        produce(batch(values=["i"]), partition=0),
        restart(kill=True),
        log_dirs({"{t}": [0, 1]}),
        read_all(),
    ]),
    Scenario("log_dirs/move/throttled_and_cancelled", "Two log dirs and the alter-log-dirs throttle at 1 byte/s: "
             "a move of a partition of 15 batches of 100 kB copies one chunk (replica.fetch.max.bytes, 1 MiB: ten "
             "whole batches) and waits: DescribeLogDirs shows the future replica in the target dir (its size, "
             "offset lag 5). A move back to the current dir cancels it (the future replica goes); without the "
             "throttle the move is made again and completes, the records read back.", topics={"t": Topic()},
             broker=TWO_LOG_DIRS, alone=True, steps=[
        *[produce(batch(values=[f"{i:02d}" + "x" * 99998])) for i in range(15)],
        log_dirs({"{nope}": [0]}, save="d"),
        alter_dirs([(ref("d.results.0.log_dir"), [("{t}", 0)])]),
        log_dirs({"{t}": [0]}, until=placed([0], [])),
        throttle("1"),
        alter_dirs([(ref("d.results.1.log_dir"), [("{t}", 0)])]),
        log_dirs({"{t}": [0]}, until={"results.1.topics.0.partitions.0.partition_size": 1000720}, timeout_s=30),
        alter_dirs([(ref("d.results.0.log_dir"), [("{t}", 0)])]),
        log_dirs({"{t}": [0]}, until={"results.1.topics.0": "<absent>"}),
        throttle(None),
        alter_dirs([(ref("d.results.1.log_dir"), [("{t}", 0)])]),
        log_dirs({"{t}": [0]}, until=placed([], [0])),
        fetch_parts([("{t}", 0, 14, MB)], isolation=0),
    ]),
    Scenario("log_dirs/authorization", "AlterReplicaLogDirs (v1, v2) without ALTER on the cluster.",
             broker=SECURED, steps=[
        log_dirs({"{t}": [0]}, save="d"),
        alter_dirs([(ref("d.results.0.log_dir"), [("{t}", 0)])], conn=ALICE),
        alter_dirs([("/no/such/log-dir", [("{t}", 0), ("{nope}", 1)])], v=1, conn=ALICE),
    ]),
]
