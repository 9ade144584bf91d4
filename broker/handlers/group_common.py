"""Helpers shared by the group/offset handlers (offset_commit, join_group, sync_group,
txn_offset_commit, ...). Not an API module (not in handlers.APIS)."""
from __future__ import annotations

from ..context import now_ms  # noqa: F401 (the group handlers' clock: the broker's)
from ..security.authorizer import GROUP, SUPPORTED_OPS

# DescribeGroups / ConsumerGroupDescribe authorized operations with no authorizer: every
# operation a group supports (READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS: Kafka 4.1
# answers 3400)
GROUP_AUTHORIZED_OPS = sum(1 << op for op in SUPPORTED_OPS[GROUP])


def coordinator(conn):
    return conn.ctx.group_coordinator


async def wait_for(conn, waiter):
    """The answer a coordinator Waiter holds, once given (without blocking other connections);
    what the request did before (appends, answers to other members) is looked at first."""
    conn.ctx.after_work()
    return await conn.ctx.pending_answers.wait(waiter)


def client_host(conn) -> str:
    host = conn.peer.rsplit(":", 1)[0] if conn.peer and conn.peer != "?" else ""
    return "/" + host


def partition_exists(ctx, topic: str | None, partition: int) -> bool:
    return bool(topic) and ctx.replicas.get_log(topic, partition) is not None


def topic_id_of(ctx, name: str):
    info = ctx.topics.topics().get(name)
    return getattr(info, "topic_id", None) if info is not None else None


def _coordinator_parts(layout, answers) -> list:
    """``layout`` with the coordinator's answers (in request order) in place of its None entries,
    the refused partitions left out."""
    answers = iter(answers)
    return [(name, tid, [(p, int(next(answers))) for p, err in parts if err is None])
            for name, tid, parts in layout]


def merge_by_topic_name(layout, answers) -> list[tuple[str, object, list[tuple[int, int]]]]:
    """Kafka's KafkaApis answer for OffsetCommit, TxnOffsetCommit and OffsetDelete: the partitions
    the broker refuses itself (authorization, unknown topic or partition) first, grouped by topic
    name in request order, then the coordinator's answer merged in (the Builder's merge): a topic
    already there gets the coordinator's partitions after its refused ones, other topics follow,
    and a topic named twice in the request becomes one.

    ``layout`` is the request's topics, [(name, topic id, [(partition, error or None)])], an error
    where the broker refused the partition itself, None where the coordinator answers; ``answers``
    are the coordinator's answers in request order. Returns [(name, topic id, [(partition, error
    code)])]."""
    merged: dict[str, tuple[str, object, list]] = {}
    for name, tid, parts in layout:
        for p, err in parts:
            if err is not None:
                merged.setdefault(name, (name, tid, []))[2].append((p, int(err)))
    for name, tid, parts in _coordinator_parts(layout, answers):
        if parts:
            merged.setdefault(name, (name, tid, []))[2].extend(parts)
    return list(merged.values())


def merge_refused_first(layout, answers) -> list[tuple[str, object, list[tuple[int, int]]]]:
    """The topics of an OffsetCommit or TxnOffsetCommit answer in Kafka's order: with a partition
    refused by the broker, merge_by_topic_name's; with none, the coordinator's answer is the
    answer: one topic per request topic, in request order (a topic named twice stays twice)."""
    if any(err is not None for _, _, parts in layout for _, err in parts):
        return merge_by_topic_name(layout, answers)
    return [(name, tid, parts) for name, tid, parts in _coordinator_parts(layout, answers) if parts]
