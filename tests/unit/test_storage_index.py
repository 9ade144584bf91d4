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
