"""The uniform assignor's port (coordinator/group/uniform.py) and the Java hash orders it
reproduces. The expected orders and assignments were observed from Kafka 4.1.0's own classes
(the UniformAssignor of kafka-group-coordinator-4.1.0.jar, java.util.HashMap of JDK 17)."""
from __future__ import annotations

import uuid

from minikafka.coordinator.group.consumer import range_assign
from minikafka.coordinator.group.uniform import (GroupSpec, JavaHash, int_hash, member_order, replayed,
                                                  string_hash, topic_id_order, uniform_assign, uuid_hash)

T = uuid.UUID(int=1)   # Uuid(0, 1)
O = uuid.UUID(int=2)   # Uuid(0, 2)


def uid(msb: int, lsb: int) -> uuid.UUID:
    return uuid.UUID(int=((msb % 2**64) << 64) | (lsb % 2**64))


def test_string_and_uuid_hashes():
    assert string_hash("") == 0
    assert string_hash("hello") == 99162322
    assert string_hash("polygenelubricants") == 0x80000000   # Integer.MIN_VALUE: the sum wraps
    assert string_hash("\u00e9") == 0xE9                      # UTF-16 code units
    assert uuid_hash(uid(1, 2)) == 3
    assert uuid_hash(uid(-2502958943425857866, -2038009790331307008)) == -1446349240 % 2**32


def test_java_hash_orders():
    # buckets in index order, insertion order within a bucket
    assert list(JavaHash(int_hash, keys=[16, 0, 17, 1])) == [16, 0, 17, 1]
    # new HashSet<>(list) of 20 partitions gets a table of 32: ascending; after the resizes of a
    # default set (16 -> 32 at the 13th) as well
    assert list(JavaHash.copy_of(int_hash, list(range(19, -1, -1)))) == list(range(20))
    # HashMap(0) filled by computeIfAbsent: the table grows before a call (even for a key it has)
    # and a new key goes to the head of its chain
    t0 = uid(-2502958943425857866, -2038009790331307008)
    t2 = uid(3929633514839124265, 3119940049365828618)
    m = JavaHash.sized(uuid_hash, 0)
    for _ in range(16):
        m.compute_if_absent(t0)
    for _ in range(3):
        m.compute_if_absent(t2)
    assert (m.capacity, list(m)) == (4, [t2, t0])
    ts = [uid(6539310928277886976, 2149220089549038941), uid(335058821828600662, 7658985437482631022),
          uid(4800452510347542759, 3174204517914288127), uid(-7570965561961948673, -2621576851110893408)]
    m = JavaHash.sized(uuid_hash, 0)
    for t in JavaHash.copy_of(uuid_hash, ts):
        m.compute_if_absent(t)
    assert list(m) == [ts[2], ts[3], ts[1], ts[0]]


def test_member_and_topic_order():
    # String.hashCode in a table of 16: ann 0, joe 1, hal 2, kim 14
    assert member_order(["kim", "joe", "hal"]) == ["joe", "hal", "kim"]
    assert member_order(["joe", "kim"], "ann") == ["ann", "joe", "kim"]
    # a static member taking over: the departed id only sizes the table
    assert member_order(["kim"], "hal", "joe") == ["hal", "kim"]
    assert topic_id_order(["b", "a", "nope", "a"], {"a": T, "b": O}) == [T, O]


def test_replayed_keeps_kafkas_record_order():
    a = replayed({O: [16, 0, 17, 1], T: [3]})
    assert list(a) == [T, O] and a[O] == [16, 0, 17, 1]


def spec(members, partitions, current=None, subs=None):
    current = current or {}
    subs = subs or {m: [T] for m in members}
    return GroupSpec(members=member_order(members), subscriptions=subs,
                     subscription_sizes={m: len(s) for m, s in subs.items()},
                     homogeneous=len({tuple(s) for s in subs.values()}) == 1,
                     current=current,
                     assigned={(t, p) for a in current.values() for t, ps in a.items() for p in ps},
                     partitions=partitions)


def test_homogeneous_keeps_quota_and_fills_in_member_order():
    out = uniform_assign(spec(["a", "b", "c"], {T: 7}, {"a": {T: list(range(7))}}))
    assert out == {"a": {T: [0, 1, 2]}, "b": {T: [3, 4]}, "c": {T: [5, 6]}}


def test_homogeneous_extra_partitions_go_to_members_that_can_keep_them():
    # nobody holds anything: the first member passes its extra on while enough members remain
    assert uniform_assign(spec(["a", "b", "c"], {T: 2})) == {"a": {}, "b": {T: [0]}, "c": {T: [1]}}
    assert uniform_assign(spec(["kim", "joe", "ann", "hal"], {T: 1})) == \
        {"ann": {}, "joe": {}, "hal": {}, "kim": {T: [0]}}


def test_homogeneous_keeps_partitions_in_its_sets_iteration_order():
    first = replayed(uniform_assign(spec(["a"], {T: 20}))["a"])
    two = uniform_assign(spec(["a", "b"], {T: 20}, {"a": first}))
    assert two == {"a": {T: list(range(10))}, "b": {T: [16, 17, 18, 19, 10, 11, 12, 13, 14, 15]}}
    three = uniform_assign(spec(["a", "b", "c"], {T: 20}, {m: replayed(a) for m, a in two.items()}))
    # b's set iterates 16..19 first: it keeps those, not 10..16
    assert three == {"a": {T: list(range(7))}, "b": {T: [16, 17, 18, 19, 10, 11, 12]},
                     "c": {T: [7, 8, 9, 13, 14, 15]}}


def test_heterogeneous_balances_shared_topics():
    subs = {"kim": [T], "hal": [O], "joe": [T, O]}
    current = {"kim": {T: [0, 1, 2, 3, 4]}, "hal": {O: [0, 1, 2]}}
    out = uniform_assign(spec(["kim", "hal", "joe"], {T: 5, O: 3}, current, subs))
    assert out == {"joe": {T: [3, 4]}, "hal": {O: [0, 1, 2]}, "kim": {T: [0, 1, 2]}}


def test_range_assignor_contiguous_by_member_id():
    out = range_assign(spec(["b", "a"], {T: 5}))
    assert out == {"a": {T: {0, 1, 2}}, "b": {T: {3, 4}}}
