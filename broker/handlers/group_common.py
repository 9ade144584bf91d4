"""Helpers shared by the group/offset handlers (offset_commit, join_group, sync_group,
txn_offset_commit, ...). Not an API module: it defines no API_KEY."""
from __future__ import annotations

import time

import trio


from minikafka.coordinator.group.consumer_coordinator import GROUP_AUTHORIZED_OPS  # noqa: F401


def now_ms() -> int:
    return int(time.time() * 1000)


def coordinator(conn):
    return conn.broker.group_coordinator


async def wait_for(waiter):
    """Wait (without blocking other connections) for a coordinator Waiter."""
    if not waiter.done:
        ev = trio.Event()
        waiter.add_done_callback(lambda _result: ev.set())
        await ev.wait()
    return waiter.result


def client_host(conn) -> str:
    host = conn.peer.rsplit(":", 1)[0] if conn.peer and conn.peer != "?" else ""
    return "/" + host


def partition_exists(broker, topic: str | None, partition: int) -> bool:
    return bool(topic) and broker.get_log(topic, partition) is not None


def topic_id_of(broker, name: str):
    info = broker.logs.topics().get(name)
    return getattr(info, "topic_id", None) if info is not None else None


