"""broker/fetch_session.py: Kafka's fetch session cache rules that take minutes to show on a real
broker (eviction needs a session idle, or old, for 2 minutes), with an explicit clock. The
protocol-visible behaviour is recorded from Kafka in tests/conformance/scenarios/fetch_sessions.py."""
from __future__ import annotations

import uuid

import pytest

from minikafka.broker.fetch_session import (EVICTION_MS, INT32_MAX, NUM_SHARDS, SESSION_ID_RANGE, FetchManager,
                                            FetchSessionCacheShard, PartitionData, ShardLookupError,
                                            next_epoch, partition_key, shard_index)
from minikafka.protocol.errors import ErrorCode

Z = uuid.UUID(int=0)


def parts(n: int, topic: str = "t") -> dict:
    return {partition_key(topic, Z, p): PartitionData(topic, Z, p, 0, -1, 1 << 20, -1, -1) for p in range(n)}


def create(shard: FetchSessionCacheShard, now: int, n: int) -> int:
    return shard.maybe_create_session(now, n, False, lambda: parts(n))


def test_a_full_shard_evicts_a_session_idle_for_two_minutes():
    shard = FetchSessionCacheShard(1, EVICTION_MS, 0)
    a = create(shard, 0, 5)
    assert create(shard, EVICTION_MS, 1) == 0           # idle exactly 2 minutes: not yet stale
    b = create(shard, EVICTION_MS + 1, 1)               # stale: evicted whatever its size
    assert b and set(shard.sessions) == {b} and a != b
    assert shard.evictions == 1


def test_a_larger_session_evicts_one_that_was_old_when_last_used():
    shard = FetchSessionCacheShard(1, EVICTION_MS, 0)
    a = create(shard, 0, 2)
    shard.touch(shard.sessions[a], 100_000)             # used at 100 s: younger than 2 min then
    assert create(shard, 110_000, 50) == 0              # not stale, not evictable
    shard.touch(shard.sessions[a], 130_000)             # used again at 130 s: now evictable
    assert create(shard, 140_000, 2) == 0               # as many partitions: the old one stays
    assert create(shard, 140_000, 1) == 0
    b = create(shard, 140_000, 3)                       # more partitions: evicts it
    assert set(shard.sessions) == {b}


def test_sessions_go_to_the_shards_in_turn_and_ids_name_their_shard():
    fm = FetchManager(NUM_SHARDS, lambda: 0)
    ids = []
    for _ in range(NUM_SHARDS + 1):
        ctx = fm.new_context(12, 0, 0, parts(1), [])
        ids.append(ctx.respond([(k, pd, {"high_watermark": 0, "log_start_offset": 0})
                                for k, pd in parts(1).items()], 0)[1])
    assert ids[-1] == 0                                 # the first shard again, and it is full
    assert sorted(shard_index(i) for i in ids[:-1]) == list(range(NUM_SHARDS))
    assert all(max(1, shard_index(i) * SESSION_ID_RANGE) <= i < (shard_index(i) + 1) * SESSION_ID_RANGE
               for i in ids[:-1])


def test_shard_lookup_follows_java_integer_division():
    assert shard_index(SESSION_ID_RANGE - 1) == 0 and shard_index(-SESSION_ID_RANGE + 1) == 0
    assert shard_index(-SESSION_ID_RANGE) == -1
    fm = FetchManager(1000, lambda: 0)
    for bad in (INT32_MAX, NUM_SHARDS * SESSION_ID_RANGE, -SESSION_ID_RANGE, -2**31):
        with pytest.raises(ShardLookupError):
            fm.new_context(12, bad, 1, {}, [])
    assert fm.new_context(12, 12345, 1, {}, []).error == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_epochs_wrap_to_one_and_final_stays_final():
    assert next_epoch(0) == 1 and next_epoch(INT32_MAX) == 1 and next_epoch(-1) == -1
