"""storage/index.py: OffsetIndex and TimeIndex lookups, truncation, file format, sanity checks."""
from __future__ import annotations

import struct

import pytest

from storage.index import CorruptIndexError, OffsetIndex, TimeIndex


def test_offset_index_lookup_and_format(tmp_path):
    idx = OffsetIndex(str(tmp_path / "00000000000000000100.index"), 100)
    assert idx.lookup(150) == (100, 0)
    for off, pos in ((110, 1000), (120, 2000), (135, 3500)):
        idx.append(off, pos)
    assert idx.lookup(99) == (100, 0)
    assert idx.lookup(110) == (110, 1000)
    assert idx.lookup(119) == (110, 1000)
    assert idx.lookup(10_000) == (135, 3500)
    with pytest.raises(ValueError):
        idx.append(135, 4000)
    idx.close()
    data = (tmp_path / "00000000000000000100.index").read_bytes()
    assert data == struct.pack(">iiiiii", 10, 1000, 20, 2000, 35, 3500)
    again = OffsetIndex(idx.path, 100)
    again.load(log_size=5000)
    assert again.lookup(125) == (120, 2000) and again.entries == 3
    again.truncate_to(120)
    assert again.entries == 1 and len((tmp_path / "00000000000000000100.index").read_bytes()) == 8
    with pytest.raises(CorruptIndexError):
        OffsetIndex(idx.path, 100).load(log_size=500)  # position 1000 beyond the log


def test_time_index_lookup_and_maybe_append(tmp_path):
    ti = TimeIndex(str(tmp_path / "00000000000000000000.timeindex"), 0)
    assert ti.lookup(5) == (-1, 0)
    assert ti.maybe_append(1000, 3)
    assert not ti.maybe_append(1000, 5)  # not larger: skipped
    assert not ti.maybe_append(900, 6)
    assert ti.maybe_append(2000, 9)
    assert ti.lookup(999) == (-1, 0)
    assert ti.lookup(1500) == (1000, 3)
    assert ti.lookup(2000) == (2000, 9)
    ti.close()
    data = (tmp_path / "00000000000000000000.timeindex").read_bytes()
    assert data == struct.pack(">qiqi", 1000, 3, 2000, 9)
    t2 = TimeIndex(ti.path, 0)
    t2.load()
    assert t2.last_entry() == (2000, 9)
    (tmp_path / "00000000000000000000.timeindex").write_bytes(data + b"\x00")
    with pytest.raises(CorruptIndexError):
        TimeIndex(ti.path, 0).load()


def _kafka_smallest_upper_bound_slot(positions: list[int], target: int) -> int:
    """AbstractIndex.indexSlotRangeFor(target, VALUE, SMALLEST_UPPER_BOUND), line for line
    (warm section of 8192 / 8 entries included)."""
    entries = len(positions)
    if entries == 0:
        return -1

    def search(begin: int, end: int) -> int:
        lo, hi = begin, end
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            if positions[mid] > target:
                hi = mid - 1
            elif positions[mid] < target:
                lo = mid
            else:
                return mid
        return -1 if lo == entries - 1 else lo + 1

    first_hot = max(0, entries - 1 - 8192 // 8)
    if positions[first_hot] < target:
        return search(first_hot, entries - 1)
    if positions[0] > target:
        return 0
    return search(0, first_hot)


@pytest.mark.parametrize("entries", [0, 1, 2, 5, 1025, 1026, 3000])
def test_fetch_upper_bound_offset_is_kafkas_search(tmp_path, entries):
    """The aborted-transactions bound of a read_committed fetch: Kafka's own search, quirk
    included (an exact match of the first entry's position answers the second entry)."""
    import random
    rnd = random.Random(entries)
    idx = OffsetIndex(str(tmp_path / "00000000000000001000.index"), 1000)
    pos, positions = 0, []
    for i in range(entries):
        pos += rnd.randint(1, 300)
        idx.append(1000 + 3 * i + rnd.randint(0, 2), pos)
        positions.append(pos)
    targets = {0, 1, pos, pos + 1} | {p + d for p in positions[:40] + positions[-1100:] for d in (-1, 0, 1)}
    for target in sorted(targets):
        slot = _kafka_smallest_upper_bound_slot(positions, target)
        expected = None if slot < 0 else idx.entry(slot)[0]
        assert idx.fetch_upper_bound_offset(target) == expected, (target, slot)
    if entries >= 2:
        assert idx.fetch_upper_bound_offset(positions[0]) == idx.entry(1)[0]  # Kafka's quirk
    if entries == 1:
        assert idx.fetch_upper_bound_offset(positions[0]) is None
    idx.close()
