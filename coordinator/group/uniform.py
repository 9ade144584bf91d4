"""The KIP-848 server-side "uniform" assignor, as Kafka 4.1's UniformAssignor computes it
(org.apache.kafka.coordinator.group.assignor: UniformHomogeneousAssignmentBuilder when every
member subscribes to the same topic names, else UniformHeterogeneousAssignmentBuilder).

Kafka's answer depends on the iteration order of Java hash collections wherever the
algorithm breaks ties: which members get the extra partitions and who is filled first (the
order of the member ids in TargetAssignmentBuilder's HashMap), which partitions a member over
its quota keeps (the order of its target assignment's HashMap<Uuid, HashSet<Integer>>), and
which unassigned partitions come first (the HashSet of subscribed topic ids). JavaHash
reproduces those orders, so that the same group gets the same assignment as in Kafka.

An assignment that carries Kafka's order is a dict topic id -> list of partitions, both in the
order Java would iterate them.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass


# ------------------------------------------------------------------ Java hash order
def string_hash(s: str) -> int:
    """java.lang.String.hashCode (over UTF-16 code units)."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h


def uuid_hash(u: uuid.UUID) -> int:
    """org.apache.kafka.common.Uuid.hashCode: the two halves of msb ^ lsb, xored."""
    h = (u.int >> 64) ^ (u.int & 0xFFFFFFFFFFFFFFFF)
    return ((h >> 32) ^ h) & 0xFFFFFFFF


def int_hash(p: int) -> int:
    """java.lang.Integer.hashCode."""
    return p & 0xFFFFFFFF


def uuid_order_key(u: uuid.UUID) -> tuple[int, int]:
    """Uuid.compareTo: the most then the least significant 64 bits, as signed longs."""
    def signed(x: int) -> int:
        return x - (1 << 64) if x >= 1 << 63 else x
    return signed(u.int >> 64), signed(u.int & 0xFFFFFFFFFFFFFFFF)


def _table_size_for(n: int) -> int:
    """HashMap.tableSizeFor: the power of two at or above n (1 for n <= 1)."""
    c = 1
    while c < n:
        c <<= 1
    return c


class JavaHash:
    """A java.util.HashMap's / HashSet's keys in its iteration order (JDK 17): table buckets in
    index order (the spread hash masked by the table size), each bucket's chain in order. put
    (HashSet.add) appends to the chain and doubles the table once the size passes 0.75 of it;
    computeIfAbsent doubles it first and puts the key at the chain's head. A chain reaching 9
    keys (8 for computeIfAbsent) doubles a table below 64 (treeifyBin); tree bins, a table of
    64+ with such a chain (topics of over 512 partitions), are not modelled."""

    def __init__(self, hash_fn, capacity: int = 16, keys=()):
        self.hash_fn = hash_fn
        self.initial = capacity   # the table is made at the first insertion
        self.capacity = 0
        self.threshold = 0
        self.table: dict[int, list] = {}
        self.size = 0
        for k in keys:
            self.add(k)

    @classmethod
    def copy_of(cls, hash_fn, keys: list, size: int | None = None) -> "JavaHash":
        """new HashSet<>(collection): a table for max(size / 0.75 + 1, 16) keys; `size` when the
        collection's size() is not the number of keys it yields (TopicIds)."""
        n = len(keys) if size is None else size
        return cls(hash_fn, _table_size_for(max(int(n / 0.75) + 1, 16)), keys)

    @classmethod
    def sized(cls, hash_fn, n: int) -> "JavaHash":
        """new HashMap<>(n) / new HashSet<>(n)."""
        return cls(hash_fn, _table_size_for(n))

    def _index(self, k) -> int:
        h = self.hash_fn(k)
        return (h ^ (h >> 16)) & (self.capacity - 1)

    def _resize(self) -> None:
        self.capacity = self.capacity << 1 if self.capacity else self.initial
        self.threshold = int(self.capacity * 0.75)
        old, self.table = self.table, {}
        for b in sorted(old):
            for k in old[b]:
                self.table.setdefault(self._index(k), []).append(k)

    def _chain(self, k) -> list | None:
        chain = self.table.get(self._index(k)) if self.capacity else None
        return chain if chain is not None and k in chain else None

    def add(self, k) -> None:
        """HashMap.put / HashSet.add."""
        if not self.capacity:
            self._resize()
        if self._chain(k) is not None:
            return
        chain = self.table.setdefault(self._index(k), [])
        chain.append(k)
        if len(chain) >= 9 and self.capacity < 64:
            self._resize()
        self.size += 1
        if self.size > self.threshold:
            self._resize()

    def compute_if_absent(self, k) -> None:
        """HashMap.computeIfAbsent: grows the table first if it is over its threshold (even when
        the key is there), then puts an absent key at the head of its chain."""
        if self.size > self.threshold or not self.capacity:
            self._resize()
        if self._chain(k) is not None:
            return
        chain = self.table.setdefault(self._index(k), [])
        chain.insert(0, k)
        if len(chain) >= 8 and self.capacity < 64:
            self._resize()
        self.size += 1

    def remove(self, k) -> None:
        chain = self._chain(k)
        if chain is not None:
            chain.remove(k)
            self.size -= 1

    def __contains__(self, k) -> bool:
        return self._chain(k) is not None

    def __len__(self) -> int:
        return self.size

    def __iter__(self):
        return iter([k for b in sorted(self.table) for k in self.table[b]])


def replayed(assignment: dict) -> dict:
    """The order Kafka iterates a target assignment in once its record is replayed
    (Assignment.fromRecord: a HashMap of topics in the record's order, each a HashSet copied
    from the record's partition list). `assignment` is in the record's order."""
    topics = JavaHash(uuid_hash)
    for tid, ps in assignment.items():
        if ps:
            topics.add(tid)
    return {tid: list(JavaHash.copy_of(int_hash, list(assignment[tid]))) for tid in topics}


def member_order(existing: list[str], updated: str | None = None, removed: str | None = None) -> list[str]:
    """The order TargetAssignmentBuilder.build hands the members to the assignor: a HashMap keyed
    by member id, filled with the group's members, then the heartbeating member and a departed
    static member it replaces (removed again). Within one bucket Kafka's order is that of its
    group's member map (a TimelineHashMap, not modelled): here, the order members joined in."""
    specs = JavaHash(string_hash)
    for m in existing:
        specs.add(m)
    if removed is not None:
        specs.add(removed)
    if updated is not None:
        specs.add(updated)
    if removed is not None:
        specs.remove(removed)
    return list(specs)


def topic_id_order(names: list[str], topics: dict) -> list:
    """A member's subscribed topic ids as Kafka iterates them: its names in a HashSet copied from
    the request's list, each resolved to its id (names of no topic are skipped)."""
    return [topics[n] for n in JavaHash.copy_of(string_hash, list(dict.fromkeys(names))) if n in topics]


# ------------------------------------------------------------------ the group spec
@dataclass
class GroupSpec:
    """What TargetAssignmentBuilder gives the assignor (GroupSpecImpl, SubscribedTopicDescriber)."""
    members: list[str]               # in member_order()
    subscriptions: dict[str, list]   # member -> subscribed topic ids (existing topics), topic_id_order()
    subscription_sizes: dict[str, int]  # member -> number of subscribed names (TopicIds.size())
    homogeneous: bool                # SubscriptionType: every name has every member as a subscriber
    current: dict[str, dict]         # member -> its current target assignment, in replayed() order
    assigned: set                    # (topic id, partition) of every member's current target
    partitions: dict                 # topic id -> number of partitions


def uniform_assign(spec: GroupSpec) -> dict[str, dict]:
    """UniformAssignor.assign: the new target assignment, member -> {topic id: [partitions]}
    in the order Kafka's record of it lists them."""
    if not spec.members:
        return {}
    if spec.homogeneous:
        return _homogeneous(spec)
    return _heterogeneous(spec)


def _homogeneous(spec: GroupSpec) -> dict[str, dict]:
    """UniformHomogeneousAssignmentBuilder (as compiled in 4.1.0): quotas of total // members,
    total % members of them one more. In iteration order, each member keeps its current
    partitions up to its quota (in its assignment's iteration order) and gives back the rest;
    the extra partition is offered to members in iteration order, and one that could not fill it
    from what it holds passes it on while enough members remain to take every extra left.
    The given-back partitions, after those nobody holds, fill the members below quota in
    iteration order."""
    first = spec.members[0]
    subscribed = JavaHash.copy_of(uuid_hash, spec.subscriptions[first], spec.subscription_sizes[first])
    if not len(subscribed):
        return {}
    unassigned: list[tuple] = []
    total = 0
    for tid in subscribed:
        n = spec.partitions[tid]
        unassigned += [(tid, p) for p in range(n) if (tid, p) not in spec.assigned]
        total += n
    quota_min, extra = divmod(total, len(spec.members))
    target: dict[str, object] = {}
    unfilled: list[tuple[str, int]] = []
    for position, mid in enumerate(spec.members):
        old = spec.current.get(mid, {})
        new = None  # a copy (deepCopyAssignment) only once something is taken away
        quota = quota_min
        got_extra = extra > 0
        if got_extra:
            quota += 1
        for tid, ps in old.items():
            if tid in subscribed:
                if len(ps) <= quota:
                    quota -= len(ps)
                    continue
                for p in ps:
                    if quota > 0:
                        quota -= 1
                        continue
                    if new is None:
                        new = _deep_copy(old)
                    new_ps = new[tid]
                    new_ps.remove(p)
                    if not len(new_ps):
                        new.remove(tid)
                    unassigned.append((tid, p))
            else:
                if new is None:
                    new = _deep_copy(old)
                new.remove(tid)
        if quota > 0 and got_extra and len(spec.members) - position > extra:
            quota -= 1
            got_extra = False
        if quota > 0:
            unfilled.append((mid, quota))
        if got_extra:
            extra -= 1
        target[mid] = old if new is None else new
    i = 0
    for mid, quota in unfilled:
        a = _mutable(target, mid)
        for _ in range(quota):
            if i >= len(unassigned):
                break
            tid, p = unassigned[i]
            i += 1
            a.add(tid, p)
    if i < len(unassigned):
        raise RuntimeError("Partitions were left unassigned")
    return {mid: _listed(a) for mid, a in target.items()}


def _heterogeneous(spec: GroupSpec) -> dict[str, dict]:
    """UniformHeterogeneousAssignmentBuilder: members keep what they hold of their subscription;
    unassigned partitions go topic by topic (most partitions per subscriber first, then fewest
    subscribers, then topic id) to the least loaded subscriber (ties: member index, i.e.
    iteration order); then each topic with 2+ subscribers moves partitions from its most to its
    least loaded subscribers until they differ by at most one, for at most 16 rounds."""
    members = spec.members
    index = {m: i for i, m in enumerate(members)}
    subscribers: dict = {}
    for i, mid in enumerate(members):
        for tid in spec.subscriptions[mid]:
            subscribers.setdefault(tid, []).append(i)
    if not subscribers:
        return {}
    sizes = [0] * len(members)
    owners = {tid: [-1] * spec.partitions[tid] for tid in subscribers}
    target: dict[str, object] = {}
    for mid in members:
        old = spec.current.get(mid, {})
        new = None
        subs = set(spec.subscriptions[mid])
        for tid, ps in old.items():
            if tid in subs:
                sizes[index[mid]] += len(ps)
                for p in ps:
                    owners[tid][p] = index[mid]
            else:
                if new is None:
                    new = _deep_copy(old)
                new.remove(tid)
        target[mid] = old if new is None else new

    def topic_key(tid):
        n, k = spec.partitions[tid], len(subscribers[tid])
        return (-(n / k), k, uuid_order_key(tid))

    def assign(tid, p: int, to: int) -> None:
        was = owners[tid][p]
        if was != -1:
            a = _mutable(target, members[was])
            a[tid].remove(p)
            if not len(a[tid]):
                a.remove(tid)
            sizes[was] -= 1
        n, k = spec.partitions[tid], len(subscribers[tid])
        # a topic's new set is sized for its share: ceil(partitions / subscribers) / 0.75 + 1
        _mutable(target, members[to]).add(tid, p, _table_size_for(int((n + k - 1) // k / 0.75 + 1)))
        owners[tid][p] = to
        sizes[to] += 1

    unassigned = {tid: [p for p, o in enumerate(owners[tid]) if o == -1] for tid in subscribers}
    balancer = _Balancer(sizes)
    for tid in sorted((t for t, ps in unassigned.items() if ps), key=topic_key):
        balancer.initialize(subscribers[tid])
        for p in unassigned[tid]:
            assign(tid, p, balancer.next_least_loaded())

    movable = sorted((t for t in subscribers if len(subscribers[t]) >= 2), key=topic_key)
    last = -1
    for _ in range(16):  # MAX_ITERATION_COUNT
        for ti, tid in enumerate(movable):
            if ti == last:
                return {mid: _listed(a) for mid, a in target.items()}
            moved = _balance_topic(tid, subscribers[tid], owners[tid], balancer, assign)
            if moved > 0 or last == -1:
                last = ti
    return {mid: _listed(a) for mid, a in target.items()}


def _balance_topic(tid, subscribers: list[int], owners: list[int], balancer: "_Balancer", assign) -> int:
    """UniformHeterogeneousAssignmentBuilder.balanceTopic: a member of the most loaded range
    gives its highest-numbered partition of the topic (partitions grouped by owner index) to the
    next member of the least loaded range, until the two ranges differ by one at most."""
    if balancer.initialize(subscribers) <= 1:
        return 0
    order = sorted(range(len(owners)), key=lambda p: (owners[p], p))
    start: dict[int, int] = {}
    end: dict[int, int] = {}
    for i, p in enumerate(order):
        start.setdefault(owners[p], i)
        end[owners[p]] = i + 1
    moved = 0
    while not balancer.is_balanced():
        while True:
            most = balancer.next_most_loaded()
            if most == -1:
                break
            if most not in end or end[most] - start[most] <= 0:
                balancer.exclude_most_loaded()
                continue
            break
        if most == -1:
            break
        p = order[end[most] - 1]
        end[most] -= 1
        least = balancer.next_least_loaded()
        if balancer.is_balanced():
            break
        assign(tid, p, least)
        moved += 1
    return moved


class _Balancer:
    """UniformHeterogeneousAssignmentBuilder.MemberAssignmentBalancer: the subscribers sorted by
    (load, index), a least loaded range growing rightwards and a most loaded one leftwards."""

    def __init__(self, sizes: list[int]):
        self.sizes = sizes
        self.sorted: list[int] = []

    def initialize(self, members: list[int]) -> int:
        s = self.sizes
        self.sorted = sorted(members, key=lambda i: (s[i], i))
        self.least_end = 0
        self.least_count = s[self.sorted[0]] - 1
        self.next_least = 0
        self.most_start = self.most_end = len(self.sorted)
        self.most_count = s[self.sorted[-1]] + 1
        self.next_most = len(self.sorted) - 1
        return s[self.sorted[-1]] - s[self.sorted[0]]

    def next_least_loaded(self) -> int:
        s, srt = self.sizes, self.sorted
        if self.next_least >= self.least_end:
            self.least_count += 1
            while self.least_end < len(srt) and s[srt[self.least_end]] == self.least_count:
                self.least_end += 1
            self.next_least = 0
        m = srt[self.next_least]
        self.next_least += 1
        return m

    def next_most_loaded(self) -> int:
        s, srt = self.sizes, self.sorted
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                # emptied by exclusions: restart the level from the member below the range
                self.most_count = s[srt[self.most_start - 1]]
            else:
                self.most_count -= 1
            while self.most_start > 0 and s[srt[self.most_start - 1]] == self.most_count:
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        m = srt[self.next_most]
        self.next_most -= 1
        return m

    def exclude_most_loaded(self) -> None:
        srt = self.sorted
        i = self.next_most + 1
        srt[i], srt[self.most_end - 1] = srt[self.most_end - 1], srt[i]
        self.most_end -= 1

    def is_balanced(self) -> bool:
        return self.most_count - self.least_count <= 1


class _Assignment:
    """A mutable copy of a member's assignment (HashMap<Uuid, HashSet<Integer>>)."""

    def __init__(self, topics: JavaHash, sets: dict):
        self.topics = topics
        self.sets = sets

    def __getitem__(self, tid) -> JavaHash:
        return self.sets[tid]

    def remove(self, tid) -> None:
        self.topics.remove(tid)
        self.sets.pop(tid, None)

    def add(self, tid, p: int, capacity: int = 16) -> None:
        """computeIfAbsent(topic, new HashSet<>(capacity)).add(partition)."""
        self.topics.compute_if_absent(tid)
        if tid not in self.sets:
            self.sets[tid] = JavaHash(int_hash, capacity)
        self.sets[tid].add(p)


def _deep_copy(a: dict) -> _Assignment:
    """AssignorHelpers.deepCopyAssignment: new HashMap<>(size), each set a new HashSet<>(set)."""
    topics = JavaHash.sized(uuid_hash, len(a))
    sets = {}
    for tid, ps in a.items():
        topics.add(tid)
        sets[tid] = JavaHash.copy_of(int_hash, list(ps))
    return _Assignment(topics, sets)


def _mutable(target: dict, mid: str) -> _Assignment:
    """The member's assignment to change: the assignor's input is immutable, so the first change
    copies it (AssignorHelpers.isImmutableMap, deepCopyAssignment)."""
    a = target[mid]
    if not isinstance(a, _Assignment):
        a = target[mid] = _deep_copy(a)
    return a


def _listed(a) -> dict:
    if isinstance(a, _Assignment):
        return {tid: list(a.sets[tid]) for tid in a.topics}
    return {tid: list(ps) for tid, ps in a.items()}
