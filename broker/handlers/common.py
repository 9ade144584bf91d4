"""Small helpers shared by handlers."""
from __future__ import annotations

from minikafka.protocol.errors import ErrorCode, KafkaError

NO_AUTH_OPS = -2147483648  # "authorized operations not requested"


def topic_name_error(name: str | None) -> ErrorCode | None:
    """Kafka's topic name rules (Topic.validate): INVALID_TOPIC_EXCEPTION when broken."""
    import re
    if not name or name in (".", "..") or len(name) > 249 or not re.fullmatch(r"[a-zA-Z0-9._-]+", name):
        return ErrorCode.INVALID_TOPIC_EXCEPTION
    return None


class CloseConnection(Exception):
    """Kafka closes the connection instead of answering (e.g. an acks=0 produce that failed)."""


def resolve_topic(ctx, name, topic_id, by_id: bool):
    """(name, error) for a request that names topics (old versions) or ids (KIP-516 versions)."""
    if by_id:
        info = ctx.topics.by_id(topic_id)
        if info is None:
            return None, ErrorCode.UNKNOWN_TOPIC_ID
        return info.name, None
    return name, None


def fenced_error(code, version: int, fenced_since: int) -> int:
    """PRODUCER_FENCED exists from a per-API version on; older clients get INVALID_PRODUCER_EPOCH."""
    if code == ErrorCode.PRODUCER_FENCED and version < fenced_since:
        return int(ErrorCode.INVALID_PRODUCER_EPOCH)
    return int(code)


def check_leader_epoch(lg, current_leader_epoch: int | None) -> None:
    """A client's current_leader_epoch against the partition's (Kafka's
    Partition.checkCurrentLeaderEpoch): older is FENCED_LEADER_EPOCH, newer is
    UNKNOWN_LEADER_EPOCH, None is "not given". (Kafka reads only -1 as not given in
    ListOffsets and OffsetForLeaderEpoch, but any negative value in Fetch.)"""
    if current_leader_epoch is None:
        return
    if lg.leader_epoch > current_leader_epoch:
        raise KafkaError(ErrorCode.FENCED_LEADER_EPOCH)
    if lg.leader_epoch < current_leader_epoch:
        raise KafkaError(ErrorCode.UNKNOWN_LEADER_EPOCH)


# Kafka's Errors default messages, sent where Kafka sends error.message()
AUTH_MESSAGES = {
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: "Topic authorization failed.",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "Cluster authorization failed.",
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "Transactional Id authorization failed.",
}
