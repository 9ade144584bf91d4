"""storage/file_slice.py and the server's sending of slices: a fetch's records are a slice of a
segment file sent as it is (sendfile), whose descriptor outlives a roll or a deletion of the
segment until the slice is gone, and is then closed."""
from __future__ import annotations

import gc
import os

import pytest
import trio
import trio.testing

from minikafka.broker.server import send_response
from minikafka.protocol import records as rec
from minikafka.protocol import schema
from minikafka.protocol.records import Record
from minikafka.storage.config import LogConfig
from minikafka.storage.file_slice import FileHandle, FileSlice, TruncatedSliceError
from minikafka.storage.log import UnifiedLog

TS = 1_700_000_000_000


def make_log(tmp_path, **overrides) -> UnifiedLog:
    cfg = LogConfig().with_overrides({k.replace("_", "."): str(v) for k, v in overrides.items()})
    return UnifiedLog(str(tmp_path / "t-0"), "t", 0, cfg)


def batch(i: int) -> bytes:
    return rec.build_batch([Record(None, TS, b"k%d" % i, b"v" * 300, ())])


def open_fds() -> set[int]:
    return set(int(n) for n in os.listdir("/proc/self/fd"))


def test_a_slice_outlives_the_deletion_of_its_segment_and_closes_after(tmp_path):
    log = make_log(tmp_path, segment_bytes=1000, retention_bytes=1)
    for i in range(10):
        log.append(batch(i))
    assert len(log.segments) > 2
    before = open_fds()
    r = log.read(0, 1 << 20)
    s = r.slice
    expect = s.read()
    with open(log.segments[0].log_path, "rb") as f:
        assert f.read(len(expect)) == expect
    # retention deletes the segment the slice reads (and rolls the active one on)
    assert log.delete_old_segments(now_ms=TS) > 0
    assert not os.path.exists(os.path.join(str(tmp_path / "t-0"), "00000000000000000000.log"))
    assert s.read() == expect  # the file is gone from the directory, not from the slice
    assert s.handle.fd in open_fds()
    fd = s.handle.fd
    del r, s
    gc.collect()
    assert fd not in open_fds() - before  # the last holder let go: the descriptor is closed


def test_an_active_segment_slice_survives_its_roll(tmp_path):
    log = make_log(tmp_path)
    for i in range(3):
        log.append(batch(i))
    s = log.read(0, 1 << 20).slice
    expect = s.read()
    log.roll()
    log.append(batch(3))
    assert s.read() == expect


def test_a_truncated_file_cannot_give_its_slice(tmp_path):
    p = tmp_path / "f"
    p.write_bytes(b"x" * 100)
    s = FileSlice(FileHandle.open(str(p)), 10, 50)
    assert s.read() == b"x" * 50
    os.truncate(p, 30)
    with pytest.raises(TruncatedSliceError):
        s.read()


def frame_parts(tmp_path, sizes):
    """A Fetch v12 response whose partitions' records are slices of one file of these sizes."""
    data = b"".join(bytes([65 + i]) * n for i, n in enumerate(sizes))
    p = tmp_path / "seg"
    p.write_bytes(data)
    h = FileHandle.open(str(p))
    pos, parts = 0, []
    for i, n in enumerate(sizes):
        parts.append({"partition_index": i, "error_code": 0, "high_watermark": 1, "last_stable_offset": 1,
                      "log_start_offset": 0, "aborted_transactions": None, "preferred_read_replica": -1,
                      "records": FileSlice(h, pos, n)})
        pos += n
    body = {"throttle_time_ms": 0, "error_code": 0, "session_id": 0,
            "responses": [{"topic": "t", "partitions": parts}]}
    return body


@pytest.mark.parametrize("via", ["socket", "stream"])
def test_send_response_writes_the_frame_encode_response_gives(tmp_path, via):
    """sendfile on a socket, a plain read and write on any other stream: the same bytes."""
    body = frame_parts(tmp_path, [100, 70000, 5, 300000])
    expect = schema.encode_response(1, 12, 9, body)
    parts = schema.encode_response_parts(1, 12, 9, body)
    assert sum(isinstance(p, FileSlice) for p in parts) == 2  # the small ones are read in
    assert sum(len(p) for p in parts) == len(expect)

    async def main():
        if via == "socket":
            a, b = trio.socket.socketpair()
            left, right = trio.SocketStream(a), trio.SocketStream(b)
        else:
            left, right = trio.testing.memory_stream_pair()
        got = bytearray()

        async def reader():
            while len(got) < len(expect):
                chunk = await right.receive_some(1 << 16)
                assert chunk
                got.extend(chunk)

        async with trio.open_nursery() as n:
            n.start_soon(reader)
            await send_response(left, parts)
        return bytes(got)

    assert trio.run(main) == expect
    _, decoded = schema.decode_response(1, 12, expect[4:])
    assert [len(p.records) for p in decoded.responses[0].partitions] == [100, 70000, 5, 300000]
