"""Segment appends write a batch's patched head and the caller's bytes after it in one writev
(storage/segment.py _write_all): partial writes must still leave every byte in order."""
from __future__ import annotations

import os

from minikafka.protocol import records as rec
from minikafka.storage import segment
from minikafka.storage.log import UnifiedLog
from minikafka.storage.config import LogConfig


def test_write_all_continues_after_partial_writes(tmp_path, monkeypatch):
    real = os.writev

    def short(fd, buffers):  # the kernel takes at most 5 bytes a call
        data = b"".join(bytes(b) for b in buffers)[:5]
        return real(fd, [data])

    monkeypatch.setattr(segment.os, "writev", short)
    parts = [b"abc", bytearray(b"defgh"), memoryview(b"ijklmnopq")[2:], b"", b"rs"]
    fd = os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT)
    try:
        segment._write_all(fd, parts, sum(len(p) for p in parts))
    finally:
        os.close(fd)
    assert (tmp_path / "f").read_bytes() == b"abcdefghklmnopqrs"


def test_write_all_takes_more_buffers_than_one_writev(tmp_path):
    parts = [bytes([i % 251]) * 3 for i in range(3 * segment._IOV_MAX + 7)]
    fd = os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT)
    try:
        segment._write_all(fd, parts, 3 * len(parts))
    finally:
        os.close(fd)
    assert (tmp_path / "f").read_bytes() == b"".join(parts)


def test_append_of_several_batches_writes_their_offsets_and_leaves_the_callers_bytes(tmp_path):
    lg = UnifiedLog(str(tmp_path / "t-0"), "t", 0, LogConfig())
    try:
        lg.append(rec.build_batch([rec.Record(i, 0, None, b"x", ()) for i in range(3)]))
        sent = b"".join(rec.build_batch([rec.Record(i, 0, None, b"v%d" % n, ()) for i in range(2)]) for n in range(4))
        copy = bytes(sent)
        result = lg.append(memoryview(sent).toreadonly())
        assert sent == copy  # the offsets went into the file, not into the caller's bytes
        assert (result.base_offset, result.last_offset) == (3, 10)
        data = lg.read(0, 1 << 20).records
        data = data.read() if hasattr(data, "read") else data
        assert [(h.base_offset, h.last_offset_delta, h.partition_leader_epoch) for _, h in rec.iter_batch_headers(data)] \
            == [(0, 2, lg.leader_epoch), (3, 1, lg.leader_epoch), (5, 1, lg.leader_epoch), (7, 1, lg.leader_epoch),
                (9, 1, lg.leader_epoch)]
        assert all(rec.validate_batch(data, p, len(data), None) for p, _ in rec.iter_batch_headers(data))
    finally:
        lg.close()
