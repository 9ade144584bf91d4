"""The trio server: listeners, one task per connection, frame read/dispatch/write.

Requests on one connection are handled one at a time, as Kafka does (it mutes
a channel while a request is in flight), so responses go out in request order
without any reordering buffer.

A Fetch response's records are slices of segment files (storage's FileSlice): they
are sent from the file with ``os.sendfile`` (Kafka's zero-copy transfer), never read
into Python objects; where the platform or the stream cannot, they are read and
written as they are, without assembling the frame.
"""
from __future__ import annotations

import errno
import logging
import os
import struct
import time

import trio

from minikafka.protocol import schema
from minikafka.protocol.schema import SchemaError
from minikafka.storage.file_slice import FileSlice, TruncatedSliceError
from . import handlers
from .handlers.common import CloseConnection
from .broker import Broker

log = logging.getLogger("minikafka.server")

_SIZE = struct.Struct(">i")


class FrameReader:
    """Reads size-prefixed frames from a trio stream with one growing buffer."""

    def __init__(self, stream: trio.abc.ReceiveStream, max_size: int):
        self.stream = stream
        self.max_size = max_size
        self.buf = bytearray()

    async def _fill(self, n: int) -> bool:
        while len(self.buf) < n:
            chunk = await self.stream.receive_some(max(65536, n - len(self.buf)))
            if not chunk:
                return False
            self.buf += chunk
        return True

    async def read_frame(self) -> bytes | None:
        """The next frame's bytes; None on a clean EOF between frames."""
        if not await self._fill(4):
            if self.buf:
                raise ProtocolViolation("connection closed inside a frame size")
            return None
        (size,) = _SIZE.unpack_from(self.buf, 0)
        if size < 0 or size > self.max_size:
            # Kafka: InvalidReceiveException, the connection is closed
            raise ProtocolViolation(f"invalid request size {size} (socket.request.max.bytes={self.max_size})")
        if not await self._fill(4 + size):
            raise ProtocolViolation("connection closed inside a frame")
        frame = bytes(self.buf[4:4 + size])
        del self.buf[:4 + size]
        return frame


class ProtocolViolation(Exception):
    """The peer broke the framing or sent something Kafka would close the connection for."""


class Connection:
    """Per-connection context handed to handlers."""

    def __init__(self, broker: Broker, stream, listener_name: str, peer: str):
        self.broker = broker
        self.stream = stream
        self.listener_name = listener_name
        self.peer = peer


async def handle_connection(broker: Broker, stream: trio.SocketStream, listener_name: str) -> None:
    try:
        peer = "%s:%s" % stream.socket.getpeername()[:2]
    except OSError:
        peer = "?"
    conn = Connection(broker, stream, listener_name, peer)
    reader = FrameReader(stream, broker.config["socket.request.max.bytes"])
    broker.metrics.connections += 1
    try:
        while True:
            frame = await reader.read_frame()
            if frame is None:
                return
            out = await dispatch(conn, frame)
            if out is not None:
                await send_response(stream, out)
    except (ProtocolViolation, CloseConnection) as e:
        log.info("closing connection from %s: %s", peer, e)
    except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError):
        pass
    except OSError as e:
        if e.errno not in (errno.ECONNRESET, errno.EPIPE):
            log.warning("connection from %s failed: %s", peer, e)
    except Exception:
        # Last resort: whatever one connection sent or triggered, it must not reach the
        # listener's nursery (which would stop the broker). Close this connection only.
        log.exception("closing connection from %s after an unexpected error", peer)
    finally:
        broker.metrics.connections -= 1
        with trio.CancelScope(shield=True):
            await trio.aclose_forcefully(stream)


# a sendfile failing with one of these means the socket or file cannot splice: read instead
_NO_SENDFILE = {errno.EINVAL, errno.ENOSYS, errno.ENOTSOCK, errno.EOPNOTSUPP}


async def send_response(stream, parts: list) -> None:
    """Write one response frame given as chunks (bytes-like objects and FileSlices).

    A Fetch answer over many partitions alternates small chunks (a partition's fields) and
    slices: they are written with plain non-blocking syscalls on the socket (write, sendfile),
    waiting only when the socket buffer is full, two syscalls a partition as Kafka's writev and
    transferTo. (No MSG_MORE / TCP_CORK between the chunks: a corked tail stalls sendfile's wait
    for room in the socket buffer until the kernel's 200 ms cork timer fires.)"""
    if len(parts) == 1:
        await stream.send_all(parts[0])
        return
    sock = getattr(stream, "socket", None)
    if sock is None or not hasattr(os, "sendfile"):
        for part in parts:  # not a socket: each slice read and written as it is
            await stream.send_all(memoryview(part.read()) if isinstance(part, FileSlice) else part)
        return
    fd = sock.fileno()
    await trio.lowlevel.checkpoint_if_cancelled()
    for part in parts:
        if isinstance(part, FileSlice):
            await _send_slice(sock, fd, part)
        else:
            await _write_all(sock, fd, memoryview(part))
    await trio.lowlevel.cancel_shielded_checkpoint()  # let other connections run


async def _write_all(sock, fd: int, view: memoryview) -> None:
    while view:
        try:
            view = view[os.write(fd, view):]
        except BlockingIOError:
            await trio.lowlevel.wait_writable(sock)


async def _send_slice(sock, fd: int, s: FileSlice) -> None:
    """Send a slice of a segment file: sendfile from its descriptor to the socket, waiting
    for room in the socket buffer; a plain read and write where sendfile cannot be used."""
    position, remaining = s.position, s.size
    in_fd = s.handle.fd
    while remaining:
        try:
            n = os.sendfile(fd, in_fd, position, remaining)
        except BlockingIOError:
            await trio.lowlevel.wait_writable(sock)
            continue
        except OSError as e:
            if e.errno not in _NO_SENDFILE:
                raise
            rest = FileSlice(s.handle, position, remaining)
            await _write_all(sock, fd, memoryview(rest.read()))
            return
        if n == 0:  # end of file before the slice's end: the file was truncated
            raise TruncatedSliceError(s, s.size - remaining)
        position += n
        remaining -= n


async def dispatch(conn: Connection, frame: bytes) -> list | None:
    broker = conn.broker
    try:
        api_key, version, corr = schema.peek_request_header(frame)
    except SchemaError as e:
        raise ProtocolViolation(str(e)) from None
    handler = handlers.REGISTRY.get(api_key)
    if handler is None:
        # Kafka cannot parse a header with an unknown api key and closes the connection.
        raise ProtocolViolation(f"unknown api key {api_key}")
    lo, hi = handlers.advertised_range(handler, broker)
    if not lo <= version <= hi:
        if api_key == 18:
            # KIP-511: answer ApiVersions of any version with a v0 body naming our ranges.
            body = handlers.api_versions_body(broker, error_code=35)
            return schema.encode_response_parts(18, 0, corr, body)
        raise ProtocolViolation(f"unsupported version {version} of {schema.API_NAMES[api_key]}")
    try:
        header, body = schema.decode_request(frame)
    except Exception as e:  # any decoding failure is a malformed request: Kafka closes the connection
        raise ProtocolViolation(f"malformed {schema.API_NAMES[api_key]} v{version} request: {e!r}") from None
    started = time.perf_counter()
    try:
        response = await handler.handle(conn, header, body)
    except (CloseConnection, trio.Cancelled):
        raise
    except Exception:
        # A bug in one handler must not take the broker down: log it and close this
        # connection (the client reconnects and retries, as after any network error).
        log.exception("%s v%d from %s failed", schema.API_NAMES[api_key], version, conn.peer)
        raise CloseConnection("internal error") from None
    finally:
        broker.metrics.observe_request(api_key, version, time.perf_counter() - started)
    if response is None:  # acks=0 produce: no response at all
        return None
    return schema.encode_response_parts(api_key, version, corr, response)


async def serve_listener(broker: Broker, listener, name: str, task_status=trio.TASK_STATUS_IGNORED):
    async def on_connect(stream):
        await handle_connection(broker, stream, name)

    await trio.serve_listeners(on_connect, [listener], task_status=task_status)
