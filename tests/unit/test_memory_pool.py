"""broker/memory_pool.py (queued.max.request.bytes) and the FrameReader charging it: a frame's memory
follows its bytes, never its announced size; a used-up pool stops the reading of large frames (small
ones still flow) until memory comes back; the oldest waiter may overdraw, so frames never deadlock."""
from __future__ import annotations

import struct

import pytest
import trio
import trio.testing

from minikafka.broker.connection_quotas import RateQuota
from minikafka.broker.memory_pool import MemoryPool
from minikafka.broker.server import FrameReader
from minikafka.protocol import schema


def test_takes_within_the_capacity_do_not_wait():
    async def main():
        pool = MemoryPool(100)
        await pool.take(60, "a")
        await pool.take(40, "b")
        assert pool.used == 100 and pool.depleted and pool.available == 0
        pool.release(100)
        assert pool.used == 0 and not pool.depleted
    trio.run(main)


def test_a_used_up_pool_lets_the_oldest_waiter_overdraw_and_the_next_wait():
    async def main():
        pool = MemoryPool(100)
        pool.charge(100)  # held by frames still arriving
        got = []

        async def taker(name, n):
            await pool.take(n, name)
            got.append(name)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(taker, "first", 50)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(taker, "second", 50)
            await trio.testing.wait_all_tasks_blocked()
            assert got == ["first"] and pool.used == 150  # past the limit, one frame at a time
            await pool.take(10, "first")  # the overdrawing frame keeps reading
            assert pool.used == 160 and got == ["first"]
            pool.release(60, "first")  # handled: the overdraft passes on
            await trio.testing.wait_all_tasks_blocked()
            assert got == ["first", "second"] and pool.used == 150
        assert pool.depleted_seconds >= 0
    trio.run(main)


def test_unbounded_pool_never_waits():
    async def main():
        pool = MemoryPool(-1)
        await pool.take(10**12, "a")
        assert not pool.depleted
    trio.run(main)


def test_a_cancelled_waiter_leaves_nothing_charged():
    async def main():
        pool = MemoryPool(10)
        pool.charge(10)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(pool.take, 5, "x")  # overdraws at once
            await trio.testing.wait_all_tasks_blocked()
            with trio.move_on_after(0.01):
                await pool.take(5, "y")  # waits behind x's overdraft
            assert pool.used == 15
        pool.release(5, "x")
        assert pool.used == 10 and not pool._waiters
    trio.run(main)


def test_rate_quota_lets_a_window_of_connections_through_then_throttles():
    now = [1000.0]
    q = RateQuota(10, clock=lambda: now[0])
    assert [q.record() for _ in range(100)] == [0.0] * 100  # 10/s over Kafka's 10 s minimum window
    delay = q.record()
    assert 0.09 < delay <= 0.11  # (101/10 - 10) / 10 * 10 s
    assert RateQuota(2**31 - 1).record() == 0.0
    now[0] += 20  # the samples age out
    assert q.record() == 0.0


# --------------------------------------------------------------------------- the reader and the pool
def _produce_head(size: int) -> bytes:
    return struct.pack(">ihhi", size, 0, 9, 1) + struct.pack(">h", 1) + b"c"


@pytest.mark.parametrize("via", ["socket", "stream"])
def test_an_announced_size_alone_allocates_nothing(via):
    """A frame announcing 100 MB whose first 200 KB came: the pool holds about what came."""
    async def main():
        pool = MemoryPool(1 << 30)
        if via == "socket":
            a, b = trio.socket.socketpair()
            ours, theirs = trio.SocketStream(a), trio.SocketStream(b)
        else:
            ours, theirs = trio.testing.memory_stream_pair()
        reader = FrameReader(ours, 200 << 20, pool)
        sent = _produce_head(100 << 20) + b"\0" * 200_000
        async with ours, theirs, trio.open_nursery() as nursery:
            nursery.start_soon(theirs.send_all, sent)
            nursery.start_soon(reader.read_frame)
            await trio.testing.wait_all_tasks_blocked()
            while reader.held < len(sent) - 4:
                await trio.sleep(0.001)  # the socket pair hands the bytes over in pieces
            assert len(sent) - 4 <= pool.used <= 2 * len(sent) + FrameReader.CHUNK
            nursery.cancel_scope.cancel()
        reader.release()
        assert pool.used == 0
    trio.run(main)


def test_a_used_up_pool_stops_large_frames_but_not_small_ones():
    """Pool used up by others: a large frame overdraws (the oldest waiter), the next large frame on
    another connection is not read until memory comes back; a small request is read all along."""
    async def main():
        pool = MemoryPool(300_000)
        pool.charge(300_000)  # used up by frames still arriving elsewhere
        small = schema.encode_request(18, 3, 1, "c", {"client_software_name": "a", "client_software_version": "1"})

        def big(corr):
            return schema.encode_request(0, 9, corr, "c", {"transactional_id": None, "acks": 1, "timeout_ms": 1000,
                                                           "topic_data": [{"name": "t", "partition_data": [
                                                               {"index": 0, "records": b"r" * 1_000_000}]}]})
        pairs = [trio.socket.socketpair() for _ in range(3)]
        streams = [(trio.SocketStream(a), trio.SocketStream(b)) for a, b in pairs]
        readers = [FrameReader(ours, 10 << 20, pool) for ours, _ in streams]
        got: dict[int, object] = {}

        async def read(i):
            got[i] = await readers[i].read_frame()

        async with trio.open_nursery() as nursery:
            for i in (0, 1):
                nursery.start_soon(streams[i][1].send_all, big(i))
            nursery.start_soon(read, 0)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(read, 1)
            with trio.fail_after(5):
                while 0 not in got:
                    await trio.sleep(0.001)
            await trio.testing.wait_all_tasks_blocked()
            assert 1 not in got  # waits for memory: the first frame holds the overdraft
            await streams[2][1].send_all(small)
            assert bytes(await readers[2].read_frame()) == small[4:]  # small requests still flow
            readers[0].release()  # the first request is handled
            with trio.fail_after(5):
                while 1 not in got:
                    await trio.sleep(0.001)
            assert bytes(got[0]) == big(0)[4:] and bytes(got[1]) == big(1)[4:]
            readers[1].release()
            assert pool.used == 300_000
        for ours, theirs in streams:
            await ours.aclose()
            await theirs.aclose()
    trio.run(main)
