"""Read whole topics read_committed up to their last stable offset (no group)."""
from __future__ import annotations

import time
from typing import Iterator


def read_topic(bootstrap: str, topic: str, isolation_level: str = "read_committed",
               timeout_s: float = 60, client_id: str = "shop-reader") -> Iterator:
    """Every record of ``topic`` from the beginning up to the end offsets taken
    at the start (the LSO for read_committed), in offset order per partition."""
    from kafka import KafkaConsumer, TopicPartition
    c = KafkaConsumer(bootstrap_servers=bootstrap.split(","), group_id=None,
                      enable_auto_commit=False, isolation_level=isolation_level,
                      auto_offset_reset="earliest", client_id=client_id,
                      max_poll_records=10_000, request_timeout_ms=30_000)
    try:
        parts = c.partitions_for_topic(topic)
        if not parts:
            return
        tps = [TopicPartition(topic, p) for p in sorted(parts)]
        c.assign(tps)
        c.seek_to_beginning(*tps)
        ends = c.end_offsets(tps)
        todo = {tp for tp in tps if ends[tp] > 0}
        deadline = time.monotonic() + timeout_s
        while todo:
            if time.monotonic() > deadline:
                pos = {f"{tp.topic}-{tp.partition}": (c.position(tp), ends[tp]) for tp in todo}
                raise TimeoutError(f"reading {topic}: not at the end after {timeout_s}s:"
                                   f" (position, end) {pos}")
            for tp, recs in c.poll(timeout_ms=500).items():
                for r in recs:
                    if r.offset < ends[tp]:
                        yield r
            for tp in list(todo):
                if c.position(tp) >= ends[tp]:
                    todo.discard(tp)
    finally:
        c.close()
