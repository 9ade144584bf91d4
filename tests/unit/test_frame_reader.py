"""broker/server.py FrameReader: frames as sent, a large one in a buffer of its own that later reads
never touch (a Produce request's records are views of it until the log has copied them)."""
from __future__ import annotations

import struct

import pytest
import trio
import trio.testing

from minikafka.broker.server import FrameReader
from minikafka.protocol import schema


def produce_frame(records: bytes, corr: int) -> bytes:
    """A Produce v9 request frame, size prefix included."""
    return schema.encode_request(0, 9, corr, "c", {"transactional_id": None, "acks": 1, "timeout_ms": 1000,
                                                   "topic_data": [{"name": "t", "partition_data": [
                                                       {"index": 0, "records": records}]}]})


def read_all(via: str, data: bytes, count: int) -> list:
    """The first ``count`` frames a FrameReader reads from ``data``, sent in one write."""
    async def main():
        if via == "socket":
            a, b = trio.socket.socketpair()
            ours, theirs = trio.SocketStream(a), trio.SocketStream(b)
        else:
            ours, theirs = trio.testing.memory_stream_pair()
        reader = FrameReader(ours, 10 << 20)
        assert (reader._sock is not None) == (via == "socket")
        async with ours, theirs, trio.open_nursery() as n:
            n.start_soon(theirs.send_all, data)
            return [await reader.read_frame() for _ in range(count)]

    return trio.run(main)


@pytest.mark.parametrize("via", ["socket", "stream"])
def test_large_frames_keep_their_bytes_while_the_next_ones_are_read(via):
    """Two large Produce frames and a small request back to back: each frame as sent; a large one a
    read-only view of a buffer of its own, its records (views of it) unchanged by the reads after it."""
    batches = [bytes([i]) * 300_000 for i in (1, 2)]
    sent = [produce_frame(batches[0], 1), produce_frame(batches[1], 2),
            schema.encode_request(18, 3, 3, "c", {"client_software_name": "a", "client_software_version": "1"})]
    frames = read_all(via, b"".join(sent), 3)
    assert [bytes(f) for f in frames] == [s[4:] for s in sent]
    first, second, small = frames
    for f in (first, second):
        assert isinstance(f, memoryview) and f.readonly
    assert first.obj is not second.obj
    assert type(small) is (bytes if via == "socket" else bytearray)  # (a memory stream's chunks are bytearrays)
    records = schema.decode_request(first)[1]["topic_data"][0]["partition_data"][0]["records"]
    assert records.obj is first.obj  # not copied
    assert records == batches[0]


@pytest.mark.parametrize("via", ["socket", "stream"])
def test_a_large_frame_of_another_request_is_bytes(via):
    """Only Produce gains by a view: another large request comes as bytes (decoded faster)."""
    sent = schema.encode_request(8, 9, 4, "c", {"group_id": "g", "topics": [
        {"name": "t%d" % i, "partitions": [{"partition_index": p, "committed_offset": 1} for p in range(100)]}
        for i in range(50)]})
    assert len(sent) > FrameReader.DIRECT_MIN
    [frame] = read_all(via, sent, 1)
    assert type(frame) is bytes and frame == sent[4:]


@pytest.mark.parametrize("via", ["socket", "stream"])
def test_small_frames_are_bytes_copied_out_of_the_shared_buffer(via):
    """Small frames sent together come through the reader's one buffer, which the next reads
    reuse: each is bytes of its own."""
    sent = [produce_frame(bytes([i]) * 100, i) for i in range(5)]
    frames = read_all(via, b"".join(sent), 5)
    assert all(type(f) is bytes for f in frames)
    assert frames == [s[4:] for s in sent]
    assert [struct.unpack_from(">i", f, 4)[0] for f in frames] == list(range(5))


def test_a_frame_larger_than_a_mapping_from_another_stream_is_joined_into_one():
    """A TLS stream's frame comes in chunks; one of MMAP_FRAME_MIN or more is copied into a mapping
    of its own (a turn of the event loop at a time), not joined in one step: the same bytes, a
    read-only view, the buffer given back by unmap()."""
    from minikafka.broker.server import MMAP_FRAME_MIN

    async def main():
        ours, theirs = trio.testing.memory_stream_pair()
        reader = FrameReader(ours, MMAP_FRAME_MIN * 2)
        sent = produce_frame(bytes(range(256)) * (MMAP_FRAME_MIN // 256 + 1), 1)
        async with ours, theirs, trio.open_nursery() as n:
            n.start_soon(theirs.send_all, sent)
            frame = await reader.read_frame()
            assert isinstance(frame, memoryview) and frame.readonly and frame == sent[4:]
            buffer = reader.mapped
            assert buffer is frame.obj
            frame.release()
            await reader.unmap()
            assert reader.mapped is None and buffer.closed

    trio.run(main)
