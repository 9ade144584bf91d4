"""The console's one write: abort a hanging transaction, as ``minikafka transactions abort
--start-offset`` (Kafka's ``kafka-transactions.sh abort``) does it. DescribeProducers on the
partition's leader finds the producer whose open transaction starts at that offset; a
WriteTxnMarkers(ABORT) with its producer id and epoch and the partition's latest coordinator
epoch (0 if none: a marker below the last epoch the partition saw is fenced) ends it there."""
from __future__ import annotations

from .client import DESCRIBE_PRODUCERS, WRITE_TXN_MARKERS, Cluster, error_text


class ActionError(Exception):
    """Shown to the user as it is."""


def abort_transaction(cluster: Cluster, topic: str, partition: int, start_offset: int,
                      producer_id: int | None = None) -> str:
    """Abort the transaction open on ``topic``-``partition`` from ``start_offset`` (by
    ``producer_id`` if given); returns what was done, or raises ActionError."""
    meta = cluster.metadata()
    leader = None
    for t in meta.topics:
        if t.name == topic:
            for p in t.partitions:
                if p.partition_index == partition:
                    leader = p.leader_id
    if leader is None or leader < 0:
        raise ActionError(f"{topic}-{partition} has no leader (or does not exist)")
    r = cluster.request(leader, DESCRIBE_PRODUCERS, {"topics": [{"name": topic, "partition_indexes": [partition]}]})
    [pr] = [p for t in r.topics for p in t.partitions]
    if pr.error_code:
        raise ActionError(f"DescribeProducers {topic}-{partition}: {pr.error_message or error_text(pr.error_code)}")
    found = [a for a in pr.active_producers if a.current_txn_start_offset == start_offset
             and (producer_id is None or a.producer_id == producer_id)]
    if not found:
        raise ActionError(f"no open transaction starts at offset {start_offset} on {topic}-{partition} (any more)")
    a = found[0]
    coordinator_epoch = max(a.coordinator_epoch, 0)
    body = {"markers": [{"producer_id": a.producer_id, "producer_epoch": a.producer_epoch,
                         "transaction_result": False, "coordinator_epoch": coordinator_epoch,
                         "topics": [{"name": topic, "partition_indexes": [partition]}]}]}
    r = cluster.request(leader, WRITE_TXN_MARKERS, body)
    for m in r.markers:
        for t in m.topics:
            for p in t.partitions:
                if p.error_code:
                    raise ActionError(f"WriteTxnMarkers: {error_text(p.error_code)}")
    return (f"aborted the transaction of producer {a.producer_id} (epoch {a.producer_epoch}, coordinator "
            f"epoch {coordinator_epoch}) open on {topic}-{partition} from offset {start_offset}")
