"""Incremental fetch sessions (KIP-227), as Kafka's FetchManager, FetchSession, FetchContext and
FetchSessionCache(Shard) keep them.

A consumer's first Fetch (epoch 0) is a full fetch: the broker answers every partition and,
if the cache has room, a new session id. The consumer then sends that id with epoch 1, 2, ...
naming only the partitions whose fetch position changed (and the ones to forget); the broker
reads every partition of the session and answers only those with something new: records, a
moved high watermark or log start offset, an error. Epoch -1 closes a session (a sessionless
fetch). Sessions live in memory only: after a restart a client's session id is unknown
(FETCH_SESSION_ID_NOT_FOUND) and it starts over with a full fetch.

The cache is Kafka's: ``max.incremental.fetch.session.cache.slots`` split over 8 shards, each
owning a range of session ids; a new session goes to the next shard in turn and, when that
shard is full, may evict the least recently used session if it has been idle for 2 minutes,
else the smallest session that was over 2 minutes old when last used, if the new one has more
partitions. Consumers are never privileged (no followers replicate from this broker).
"""
from __future__ import annotations

import logging
import random
import uuid
from typing import Callable

from minikafka.protocol.errors import ErrorCode

log = logging.getLogger("minikafka.fetch_session")

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
INT32_MAX = 2**31 - 1
NUM_SHARDS = 8                         # Kafka's KafkaBroker.NumFetchSessionCacheShards
SESSION_ID_RANGE = INT32_MAX // NUM_SHARDS
EVICTION_MS = 120_000                  # Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS
ZERO_UUID = uuid.UUID(int=0)


def next_epoch(epoch: int) -> int:
    """Kafka's FetchMetadata.nextEpoch: -1 stays -1, the epoch after INT32_MAX is 1."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == INT32_MAX else epoch + 1


def shard_index(session_id: int) -> int:
    """The shard owning ``session_id``: Java's ``sessionId / sessionIdRange`` (truncating toward
    zero). Ids past the last shard's range give an index that does not exist: Kafka's cache
    then throws, and the Fetch is answered UNKNOWN_SERVER_ERROR (see ShardLookupError)."""
    q = abs(session_id) // SESSION_ID_RANGE
    return q if session_id >= 0 else -q


class ShardLookupError(Exception):
    """Kafka's FetchSessionCache.getCacheShard on an id outside every shard's range (an
    IndexOutOfBoundsException: the whole Fetch fails with UNKNOWN_SERVER_ERROR)."""


class PartitionData:
    """What a Fetch asks of one partition (Kafka's FetchRequest.PartitionData); ``topic`` is
    None for a topic id this broker does not know."""

    __slots__ = ("topic", "topic_id", "partition", "fetch_offset", "log_start_offset", "max_bytes",
                 "current_leader_epoch", "last_fetched_epoch")

    def __init__(self, topic, topic_id, partition, fetch_offset, log_start_offset, max_bytes,
                 current_leader_epoch, last_fetched_epoch):
        self.topic, self.topic_id, self.partition = topic, topic_id, partition
        self.fetch_offset, self.log_start_offset, self.max_bytes = fetch_offset, log_start_offset, max_bytes
        self.current_leader_epoch, self.last_fetched_epoch = current_leader_epoch, last_fetched_epoch


def partition_key(topic: str | None, topic_id, partition: int):
    """Kafka's CachedPartition equality: by topic id when the request uses ids, else by name.
    The id as its 128-bit int: hashed and compared in C (a UUID's __hash__ and __eq__ are
    Python calls, once per partition of every Fetch)."""
    if topic_id is not None and topic_id != ZERO_UUID:
        return topic_id.int, partition
    return topic, partition


class CachedPartition(PartitionData):
    """A partition of a session: its last request parameters and what was last answered."""

    __slots__ = ("high_watermark", "local_log_start_offset")

    def __init__(self, req: PartitionData, high_watermark: int = -1, local_log_start_offset: int = -1):
        super().__init__(req.topic, req.topic_id, req.partition, req.fetch_offset, req.log_start_offset,
                         req.max_bytes, req.current_leader_epoch, req.last_fetched_epoch)
        self.high_watermark = high_watermark
        self.local_log_start_offset = local_log_start_offset

    def update_request(self, req: PartitionData) -> None:
        self.fetch_offset, self.log_start_offset, self.max_bytes = req.fetch_offset, req.log_start_offset, req.max_bytes
        self.current_leader_epoch, self.last_fetched_epoch = req.current_leader_epoch, req.last_fetched_epoch

    def must_respond(self, resp: dict) -> bool:
        """Kafka's maybeUpdateResponseData (updating): whether the partition's answer goes out."""
        respond = bool(resp.get("records"))
        hw = resp["high_watermark"]
        if self.high_watermark != hw:
            respond = True
            self.high_watermark = hw
        if self.local_log_start_offset != resp["log_start_offset"]:
            respond = True
            self.local_log_start_offset = resp["log_start_offset"]
        if resp["error_code"] != 0:
            # errors always go out, and the partition is answered again once the error is gone
            self.high_watermark = -1
            respond = True
        if resp.get("diverging_epoch") is not None:
            respond = True
        return respond


class FetchSession:
    __slots__ = ("id", "partitions", "uses_topic_ids", "creation_ms", "last_used_ms", "epoch", "cached_size",
                 "evictable")

    def __init__(self, session_id: int, partitions: dict, uses_topic_ids: bool, now_ms: int):
        self.id = session_id
        self.partitions: dict = partitions   # key -> CachedPartition, in the session's order
        self.uses_topic_ids = uses_topic_ids
        self.creation_ms = self.last_used_ms = now_ms
        self.epoch = next_epoch(INITIAL_EPOCH)
        self.cached_size = -1                 # size when last touched; -1: not in the cache
        self.evictable = False                # old enough (at its last use) to give way to a larger session

    def update(self, fetch_data: dict, to_forget: list) -> None:
        """Apply an incremental request: new partitions join at the end, known ones take the new
        parameters in place, forgotten ones leave."""
        parts = self.partitions
        for key, req in fetch_data.items():
            cached = parts.get(key)
            if cached is None:
                parts[key] = CachedPartition(req)
            else:
                cached.update_request(req)
        for key in to_forget:
            parts.pop(key, None)


class FetchSessionCacheShard:
    def __init__(self, max_entries: int, eviction_ms: int, shard_num: int):
        self.max_entries, self.eviction_ms, self.shard_num = max_entries, eviction_ms, shard_num
        self.sessions: dict[int, FetchSession] = {}
        self.evictions = 0

    def new_session_id(self) -> int:
        lo, hi = max(1, self.shard_num * SESSION_ID_RANGE), (self.shard_num + 1) * SESSION_ID_RANGE
        while True:
            sid = random.randrange(lo, hi)
            if sid not in self.sessions:
                return sid

    def maybe_create_session(self, now_ms: int, size: int, uses_topic_ids: bool,
                             create: Callable[[], dict]) -> int:
        if len(self.sessions) < self.max_entries or self._try_evict(size, now_ms):
            session = FetchSession(self.new_session_id(), create(), uses_topic_ids, now_ms)
            self.sessions[session.id] = session
            self.touch(session, now_ms)
            log.debug("Created fetch session %d with %d partition(s)", session.id, len(session.partitions))
            return session.id
        return INVALID_SESSION_ID

    def _try_evict(self, size: int, now_ms: int) -> bool:
        """Kafka's tryEvict for an unprivileged newcomer: the least recently used session if it
        is stale, else the least valuable evictable one (fewest partitions, then lowest id) if
        it is worth less than the newcomer, whose id counts as 0: so only a newcomer with more
        partitions evicts it."""
        if not self.sessions:
            return False
        lru = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now_ms - lru.last_used_ms > self.eviction_ms:
            self._evict(lru)
            return True
        evictable = [s for s in self.sessions.values() if s.evictable]
        if not evictable:
            return False
        least = min(evictable, key=lambda s: (s.cached_size, s.id))
        if (size, 0) < (least.cached_size, least.id):
            return False
        self._evict(least)
        return True

    def _evict(self, session: FetchSession) -> None:
        log.debug("Evicting fetch session %d", session.id)
        self.remove(session.id)
        self.evictions += 1

    def remove(self, session_id: int) -> FetchSession | None:
        session = self.sessions.pop(session_id, None)
        if session is not None:
            session.cached_size = -1
        return session

    def touch(self, session: FetchSession, now_ms: int) -> None:
        session.last_used_ms = now_ms
        session.cached_size = len(session.partitions)
        session.evictable = now_ms - session.creation_ms > self.eviction_ms


class FetchSessionCache:
    def __init__(self, slots: int, eviction_ms: int = EVICTION_MS):
        self.shards = [FetchSessionCacheShard(slots // NUM_SHARDS, eviction_ms, n) for n in range(NUM_SHARDS)]
        self._counter = 0

    def shard_for(self, session_id: int) -> FetchSessionCacheShard:
        i = shard_index(session_id)
        if not 0 <= i < len(self.shards):
            raise ShardLookupError(session_id)
        return self.shards[i]

    def next_shard(self) -> FetchSessionCacheShard:
        """The shard a new session tries, in turn (Kafka's round-robin counter)."""
        shard = self.shards[self._counter % len(self.shards)]
        self._counter = (self._counter + 1) & 0x7FFFFFFF
        return shard

    @property
    def num_sessions(self) -> int:
        return sum(len(s.sessions) for s in self.shards)

    @property
    def num_partitions(self) -> int:
        return sum(max(x.cached_size, 0) for s in self.shards for x in s.sessions.values())

    @property
    def evictions(self) -> int:
        return sum(s.evictions for s in self.shards)


# ---------------------------------------------------------------- fetch contexts

class FetchContext:
    """How one Fetch request relates to sessions (Kafka's FetchContext): which partitions it
    reads and what its answer says."""

    session_id = INVALID_SESSION_ID
    error = ErrorCode.NONE
    # the partitions read are a session's CachedPartitions, and those that have nothing new
    # (CachedPartition.must_respond) are left out of the answer: the reader may leave them
    # out before respond
    omits_unchanged = False

    def partitions(self, topic_name: Callable) -> list:
        """[(key, PartitionData)] to read, in order."""
        return []

    def respond(self, answered: list, now_ms: int) -> tuple[int, int, list]:
        """(error code, session id, [(key, PartitionData, partition answer)] to send) from the
        partitions' answers (the same triples), updating the session."""
        return int(self.error), self.session_id, answered

    def throttled(self) -> tuple[int, int]:
        """(error code, session id) of the empty answer to a throttled client (Kafka's
        getThrottledResponse): a full fetch makes no session, an incremental one keeps its own."""
        return int(self.error), self.session_id


class SessionErrorContext(FetchContext):
    def __init__(self, error: ErrorCode):
        self.error = error

    def respond(self, answered, now_ms):
        return int(self.error), INVALID_SESSION_ID, []


class SessionlessContext(FetchContext):
    def __init__(self, fetch_data: dict):
        self.fetch_data = fetch_data

    def partitions(self, topic_name):
        return list(self.fetch_data.items())


class FullContext(SessionlessContext):
    """A full fetch (epoch 0): answers everything and creates a session if there is room."""

    def __init__(self, cache: FetchSessionCache, fetch_data: dict, uses_topic_ids: bool):
        super().__init__(fetch_data)
        self.cache, self.uses_topic_ids = cache, uses_topic_ids

    def respond(self, answered, now_ms):
        def create():
            parts = {}
            for key, req, resp in answered:
                parts[key] = CachedPartition(req, resp["high_watermark"], resp["log_start_offset"])
            return parts
        sid = self.cache.next_shard().maybe_create_session(now_ms, len(answered), self.uses_topic_ids, create)
        return 0, sid, answered


class IncrementalContext(FetchContext):
    omits_unchanged = True

    def __init__(self, session: FetchSession, request_epoch: int):
        self.session, self.request_epoch = session, request_epoch
        self.session_id = session.id

    def partitions(self, topic_name):
        out = []
        for key, cached in self.session.partitions.items():
            if cached.topic is None and self.session.uses_topic_ids:
                cached.topic = topic_name(cached.topic_id)  # a topic id unknown when it joined
            out.append((key, cached))
        return out

    def throttled(self):
        if self.session.epoch != next_epoch(self.request_epoch):
            return int(ErrorCode.INVALID_FETCH_SESSION_EPOCH), self.session.id
        return 0, self.session.id

    def respond(self, answered, now_ms):
        session = self.session
        if session.epoch != next_epoch(self.request_epoch):
            # another request of this session came in while this one waited for data
            log.info("Incremental fetch session %d expected epoch %d, but got %d. Possible duplicate request.",
                     session.id, next_epoch(self.request_epoch), session.epoch)
            return int(ErrorCode.INVALID_FETCH_SESSION_EPOCH), session.id, []
        parts = session.partitions
        out = []
        for entry in answered:
            key, _, resp = entry
            cached = parts.get(key)
            if cached is not None and cached.must_respond(resp):
                out.append(entry)
                if resp.get("records"):
                    # a partition that returned data goes to the back: the next fetches read
                    # the others first (they share max_bytes in order)
                    parts[key] = parts.pop(key)
        return 0, session.id, out


class FetchManager:
    """Kafka's FetchManager.newContext."""

    def __init__(self, slots: int, clock_ms: Callable[[], int], eviction_ms: int = EVICTION_MS):
        self.cache = FetchSessionCache(slots, eviction_ms)
        self.clock_ms = clock_ms

    def new_context(self, version: int, session_id: int, epoch: int, fetch_data: dict,
                    to_forget: list) -> FetchContext:
        """Raises ShardLookupError where Kafka's cache throws."""
        cache = self.cache
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id != INVALID_SESSION_ID:
                # a full fetch closes the session it names
                if cache.shard_for(session_id).remove(session_id) is not None:
                    log.debug("Removed fetch session %d", session_id)
            if epoch == FINAL_EPOCH:
                return SessionlessContext(fetch_data)
            return FullContext(cache, fetch_data, uses_topic_ids=version >= 13)
        shard = cache.shard_for(session_id)
        session = shard.sessions.get(session_id)
        if session is None:
            return SessionErrorContext(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            return SessionErrorContext(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        if session.uses_topic_ids != (version >= 13):
            return SessionErrorContext(ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
        session.update(fetch_data, to_forget)
        if not session.partitions:
            # the last partition was forgotten: the session ends, this fetch is sessionless
            shard.remove(session.id)
            return SessionlessContext(fetch_data)
        shard.touch(session, self.clock_ms())
        session.epoch = next_epoch(session.epoch)
        return IncrementalContext(session, epoch)
