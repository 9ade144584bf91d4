"""DescribeQuorum (55) on a broker listener: the one-voter KRaft quorum of a combined node
(Kafka's broker forwards the request to its controller): leader, epoch, high watermark, the
voter's state, no observers, and (v2) the voter's endpoints. Every version, another topic or
partition than the metadata log's, and a principal without DESCRIBE on the cluster."""
from ..dsl import SECURED, Differs, Scenario, call, restart
from .acls import ALICE

METADATA_LOG = "__cluster_metadata"


# Kafka's voter endpoint is its controller listener; minikafka has none (the broker answers the
# controller's requests itself) and names the listener the request came in on
ENDPOINT = Differs("quorum-endpoint-is-the-broker-listener",
                   {"nodes[0].listeners[0].host": "<PLAINTEXT host>", "nodes[0].listeners[0].port": "<PLAINTEXT port>"})


def quorum(v: int = 2, topic: str = METADATA_LOG, partitions=(0,), **kw):
    return call(55, v, {"topics": [{"topic_name": topic, "partitions": [{"partition_index": p} for p in partitions]}]},
                **kw)


SCENARIOS = [
    # a cluster of its own: the voter's leader epoch follows the cluster's history (1 on a fresh
    # Kafka; 3 once, in the cluster shared by some 450 scenarios of a full recording)
    Scenario("quorum/versions", "DescribeQuorum of the metadata log at v0, v1 and v2.", topics={}, alone=True, steps=[
        quorum(v=0),
        quorum(v=1),
        quorum(v=2),
    ], differs={3: ENDPOINT}),
    Scenario("quorum/restart", "DescribeQuorum v2 before and after a clean restart and a kill -9 "
             "(the leader epoch of the one voter).", topics={}, steps=[
        quorum(),
        restart(),
        quorum(),
        restart(kill=True),
        quorum(),
    ], differs={1: ENDPOINT, 3: ENDPOINT, 5: ENDPOINT}),
    Scenario("quorum/wrong_partition", "DescribeQuorum of another topic, of partition 1 of the metadata log, of "
             "two partitions, of no topic, and of two topics.", topics={}, steps=[
        quorum(topic="__consumer_offsets"),
        quorum(partitions=(1,)),
        quorum(partitions=(0, 1)),
        call(55, 2, {"topics": []}),
        call(55, 2, {"topics": [{"topic_name": METADATA_LOG, "partitions": [{"partition_index": 0}]},
                                {"topic_name": METADATA_LOG, "partitions": [{"partition_index": 0}]}]}),
    ]),
    Scenario("quorum/authorization", "DescribeQuorum without DESCRIBE on the cluster (v0 and v2).", topics={},
             broker=SECURED, steps=[
        quorum(v=0, conn=ALICE),
        quorum(v=2, conn=ALICE),
    ]),
]
