"""Partition reassignments on one node (AlterPartitionReassignments 45, ListPartitionReassignments
46): the only replica set a partition can have is this node, so a reassignment to it completes at
once, one naming another node id is refused, a cancellation finds nothing in progress, and the
listing is empty. Unknown topics and partitions, odd replica lists, both AlterPartitionReassignments
versions, the controller's timeout, and the answer to a principal without the cluster ACL."""
from ..dsl import SECURED, Scenario, Topic, call
from .acls import ALICE

TWO = {"t": Topic(partitions=2)}


def alter(parts, v: int = 0, timeout_ms: int = 30000, allow_rf_change=None, **kw):
    """AlterPartitionReassignments; ``parts`` = [(topic, partition, replicas or None), ...]."""
    topics: dict[str, list] = {}
    for t, p, replicas in parts:
        topics.setdefault(t, []).append({"partition_index": p, "replicas": replicas})
    body = {"timeout_ms": timeout_ms, "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}
    if v >= 1:
        body["allow_replication_factor_change"] = True if allow_rf_change is None else allow_rf_change
    return call(45, v, body, **kw)


def listing(parts=None, timeout_ms: int = 30000, **kw):
    """ListPartitionReassignments; ``parts`` = {topic: [partitions]} or None (every partition)."""
    return call(46, 0, {"timeout_ms": timeout_ms, "topics": None if parts is None else
                        [{"name": t, "partition_indexes": list(ps)} for t, ps in parts.items()]}, **kw)


SCENARIOS = [
    Scenario("reassign/to_this_node", "A reassignment of both partitions to this node's id (their replica set "
             "already): done at once; then nothing is listed (every partition, and the two named).", topics=TWO,
             steps=[
        alter([("{t}", 0, [1]), ("{t}", 1, [1])]),
        listing(None),
        listing({"{t}": [0, 1]}),
    ]),
    Scenario("reassign/other_node", "A target with another node id (2, which does not exist), with both "
             "nodes, the other node twice, this node twice, and an empty list: refused per partition; "
             "the listing stays empty.", topics=TWO, steps=[
        alter([("{t}", 0, [2])]),
        alter([("{t}", 0, [1, 2]), ("{t}", 1, [2, 1])]),
        alter([("{t}", 0, [2, 2])]),
        alter([("{t}", 0, [1, 1])]),
        alter([("{t}", 0, [])]),
        alter([("{t}", 0, [-1])]),
        listing({"{t}": [0, 1]}),
    ]),
    Scenario("reassign/cancel", "Cancelling (replicas null) where no reassignment is in progress, for a "
             "partition and next to a reassignment to this node in the same request; after one that completed.",
             topics=TWO, steps=[
        alter([("{t}", 0, None)]),
        alter([("{t}", 0, None), ("{t}", 1, [1])]),
        alter([("{t}", 1, None)]),
    ]),
    Scenario("reassign/unknown", "Unknown topic, a partition beyond the topic's, a negative partition, an "
             "empty topic list; ListPartitionReassignments of the same, and of an empty partition list.",
             steps=[
        alter([("{nope}", 0, [1])]),
        alter([("{t}", 5, [1]), ("{t}", -1, [1])]),
        call(45, 0, {"timeout_ms": 30000, "topics": []}),
        listing({"{nope}": [0]}),
        listing({"{t}": [0, 5, -1]}),
        listing({"{t}": []}),
        listing({}),
    ]),
    Scenario("reassign/versions_and_timeouts", "AlterPartitionReassignments v1 with "
             "allow_replication_factor_change true and false (to this node, keeping the factor; to two nodes, "
             "raising it); timeouts 0 and -1 for both APIs.", topics=TWO, steps=[
        alter([("{t}", 0, [1])], v=1),
        alter([("{t}", 0, [1])], v=1, allow_rf_change=False),
        alter([("{t}", 1, [1, 2])], v=1, allow_rf_change=False),
        alter([("{t}", 0, [1])], timeout_ms=0),
        alter([("{t}", 0, [1])], timeout_ms=-1),
        listing({"{t}": [0]}, timeout_ms=0),
        listing(None, timeout_ms=-1),
    ]),
    Scenario("reassign/internal_topic", "A reassignment of __consumer_offsets partition 0 to this node and "
             "to another; the listing of it.", topics={}, steps=[
        alter([("__consumer_offsets", 0, [1])]),
        alter([("__consumer_offsets", 0, [2])]),
        listing({"__consumer_offsets": [0]}),
    ]),
    Scenario("reassign/authorization", "Without ALTER on the cluster, AlterPartitionReassignments (v0, v1); "
             "without DESCRIBE on it, ListPartitionReassignments (named and every partition): the cluster "
             "authorization error.", topics=TWO, broker=SECURED, steps=[
        alter([("{t}", 0, [1]), ("{t}", 1, None)], conn=ALICE),
        alter([("{t}", 0, [1])], v=1, conn=ALICE),
        listing({"{t}": [0]}, conn=ALICE),
        listing(None, conn=ALICE),
    ]),
]
