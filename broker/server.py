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
import fcntl
import logging
import mmap
import os
import re
import select
import struct
import termios
import time

import trio

from minikafka.protocol import schema
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.schema import SchemaError
from minikafka.storage.file_slice import FileSlice, TruncatedSliceError
from . import handlers
from .handlers.authorization import AUTHORIZATION
from .handlers.common import AUTH_MESSAGES, CloseConnection
from .context import Context
from .memory_pool import MemoryPool
from .quotas import quota_now_ms
from .stepper import LoopTurn
from .security.authorizer import CLUSTER_NAME
from .security.listener import ANONYMOUS

log = logging.getLogger("minikafka.server")

_SIZE = struct.Struct(">i")
_INT = struct.Struct("i")  # a C int (FIONREAD's answer)


# Below this a frame's buffer is a bytearray from malloc's heap, whose pages stay mapped from
# request to request (main.py raises malloc's mmap threshold to the same 16 MiB); above it a
# fresh anonymous mapping, whose pages the kernel supplies as the bytes arrive, where a
# bytearray would zero-fill all of them at once, holding the event loop.
MMAP_FRAME_MIN = 16 << 20


def _frame_buffer(size: int):
    """A frame's buffer (see MMAP_FRAME_MIN)."""
    return mmap.mmap(-1, size) if size >= MMAP_FRAME_MIN else bytearray(size)


async def _unmap(buffer) -> None:
    """Give a mapped frame buffer back to the kernel in a worker thread (unmapping tens of
    megabytes takes milliseconds); one still viewed somewhere goes when its last view does."""
    if isinstance(buffer, mmap.mmap):
        try:
            await trio.to_thread.run_sync(buffer.close)
        except BufferError:
            pass


class FrameReader:
    """Reads size-prefixed frames from a trio stream with one growing buffer. A plaintext
    socket is read with plain non-blocking syscalls, waiting only when it is empty (trio's
    stream adds two task switches a read; the connection loop yields once a request, after
    its answer).

    A frame whose rest is not buffered yet and which is larger than the buffer's reads
    (``DIRECT_MIN``) is received into a buffer of its own, which grows as its bytes arrive and
    is charged to the broker's memory pool (``queued.max.request.bytes``): an announced size
    alone allocates nothing. Its memory goes back to the pool with ``release()``, once the
    request is handled. A Produce request's is handed over as a read-only view of that buffer,
    which the reader never touches again: its records reach the log without being copied by
    Python on the way (the codec's records are views of the frame, see protocol/schema.py). Any
    other frame is ``bytes``: a small one is copied out of the shared buffer, which the next
    reads reuse; a large one out of its own, as the many small fields of other requests decode
    faster from bytes than from a view (bench/README.md).

    ``activity`` (the connection) has its ``last_active`` set whenever bytes arrive after a
    wait: idle expiry counts from the last I/O, as Kafka's Selector does."""

    DIRECT_MIN = 65536  # frames this large whose rest is not buffered yet: received into their own buffer
    CHUNK = 65536  # the least a frame's buffer grows by; what a TLS stream is asked for at a time
    READ_AT_MOST = 1 << 20  # the most one read, or one copy as the buffer grows, takes (the turn is checked after)

    def __init__(self, stream: trio.abc.ReceiveStream, max_size: int, pool: MemoryPool | None = None,
                 activity=None):
        self.stream = stream
        self.max_size = max_size
        self.max_size_key = "socket.request.max.bytes"  # the setting max_size comes from (for the message)
        self.buf = bytearray()
        self.pool = pool if pool is not None else MemoryPool(-1)
        self.held = 0  # pool bytes of the last large frame, until release()
        self.mapped = None  # the last frame's buffer if it is a mapping (unmapped by unmap())
        self.activity = activity
        self._sock = stream.socket if isinstance(stream, trio.SocketStream) else None
        self._fd = self._sock.fileno() if self._sock is not None else -1

    def _active(self) -> None:
        if self.activity is not None:
            self.activity.last_active = trio.current_time()

    async def _receive(self, n: int) -> bytes:
        if self._sock is None:
            data = await self.stream.receive_some(n)
            self._active()
            return data
        while True:
            try:
                return os.read(self._fd, n)
            except BlockingIOError:
                await trio.lowlevel.wait_readable(self._sock)
                self._active()

    async def _fill(self, n: int) -> bool:
        while len(self.buf) < n:
            chunk = await self._receive(max(65536, n - len(self.buf)))
            if not chunk:
                return False
            self.buf += chunk
        return True

    def release(self) -> None:
        """The last large frame is handled (or never will be): its memory goes back to the pool."""
        if self.held:
            self.pool.release(self.held, self)
            self.held = 0

    async def unmap(self) -> None:
        """After :meth:`release`, once the caller let go of the frame: a mapped buffer's memory
        goes back to the kernel off the event loop."""
        buffer, self.mapped = self.mapped, None
        await _unmap(buffer)

    async def read_frame(self) -> bytes | memoryview | None:
        """The next frame's bytes (bytes, or a read-only view of a buffer of its own that
        nothing changes); None on a clean EOF between frames."""
        await trio.lowlevel.checkpoint_if_cancelled()  # (reads that find data do not check)
        if not self.buf:
            # nothing buffered (a client waiting for each answer): the read nearly always
            # brings exactly one whole frame, returned without going through the buffer
            chunk = await self._receive(65536)
            if not chunk:
                return None
            if len(chunk) >= 4 and _SIZE.unpack_from(chunk, 0)[0] == len(chunk) - 4 <= self.max_size:
                return chunk[4:]
            self.buf += chunk
        if not await self._fill(4):
            if self.buf:
                raise ProtocolViolation("connection closed inside a frame size")
            return None
        (size,) = _SIZE.unpack_from(self.buf, 0)
        if size < 0 or size > self.max_size:
            # Kafka: InvalidReceiveException, the connection is closed
            raise ProtocolViolation(f"invalid request size {size} ({self.max_size_key}={self.max_size})")
        end = 4 + size
        if len(self.buf) < end and size >= self.DIRECT_MIN:
            frame = await (self._receive_chunks(size) if self._sock is None else self._receive_into(size))
            if frame[0] or frame[1]:  # the api key (int16) is not Produce's, 0
                return bytes(frame)
            return memoryview(frame).toreadonly()
        if not await self._fill(end):
            raise ProtocolViolation("connection closed inside a frame")
        with memoryview(self.buf) as view:
            frame = bytes(view[4:end])
        del self.buf[:end]
        return frame

    def _grown(self, cap: int, have: int, size: int) -> int:
        """The frame buffer's next size: at least double (so that growing copies each byte about
        once), or what has arrived already, counting what waits in the kernel's socket buffer
        (then a frame that came at once is allocated once)."""
        try:
            pending = _INT.unpack(fcntl.ioctl(self._fd, termios.FIONREAD, b"\0\0\0\0"))[0]
        except OSError:
            pending = 0
        return min(size, max(2 * cap, have + pending, self.CHUNK))

    async def _receive_into(self, size: int) -> bytearray:
        """A socket: the frame whose first bytes are buffered (nothing beyond it is: the buffer is
        shorter than the frame), its rest received straight from the kernel into the frame's own
        buffer, which grows (charged to the pool first, waiting for room) as the bytes arrive."""
        pool = self.pool
        have = len(self.buf) - 4
        pool.charge(have)
        self.held = have
        cap = self._grown(have, have, size)
        await pool.take(cap - have, self)
        self.held = cap
        frame = _frame_buffer(cap)
        frame[:have] = memoryview(self.buf)[4:]
        self.buf.clear()
        turn = LoopTurn()
        while have < size:
            if have == cap:
                grown = self._grown(cap, have, size)
                await pool.take(grown - cap, self)
                self.held = grown
                bigger = _frame_buffer(grown)
                old_frame = frame
                with memoryview(frame) as old, memoryview(bigger) as new:
                    for at in range(0, have, self.READ_AT_MOST):  # copied a slice a turn (fresh pages fault)
                        end = min(have, at + self.READ_AT_MOST)
                        new[at:end] = old[at:end]
                        await turn.pass_if_long()
                frame, cap = bigger, grown
                await _unmap(old_frame)
            with memoryview(frame) as view:
                try:
                    n = os.readv(self._fd, [view[have:min(cap, have + self.READ_AT_MOST)]])
                except BlockingIOError:
                    n = -1
            if n < 0:
                await trio.lowlevel.wait_readable(self._sock)
                self._active()
                turn.restart()
                continue
            if not n:
                raise ProtocolViolation("connection closed inside a frame")
            have += n
            await turn.pass_if_long()  # the bytes of a large frame keep coming: the others get the loop too
        self.mapped = frame if isinstance(frame, mmap.mmap) else None
        return frame

    async def _receive_chunks(self, size: int):
        """Another stream (TLS): the frame's rest read as it comes (a TLS record at a time), each
        chunk charged to the pool once read; no read while the pool is used up. Joined once
        complete: from MMAP_FRAME_MIN on, into a mapping, a turn of the event loop at a time."""
        pool = self.pool
        have = len(self.buf) - 4
        chunks = [bytes(memoryview(self.buf)[4:])]
        self.buf.clear()
        pool.charge(have)
        self.held = have
        while have < size:
            await pool.take(0, self)
            chunk = await self.stream.receive_some(min(size - have, self.CHUNK))
            self._active()
            if not chunk:
                raise ProtocolViolation("connection closed inside a frame")
            pool.charge(len(chunk))
            self.held += len(chunk)
            chunks.append(chunk)
            have += len(chunk)
        if size < MMAP_FRAME_MIN:
            return b"".join(chunks)
        frame = self.mapped = _frame_buffer(size)
        at = 0
        turn = LoopTurn()
        chunks.reverse()
        while chunks:
            chunk = chunks.pop()  # (each chunk's memory goes as it is copied)
            frame[at:at + len(chunk)] = chunk
            at += len(chunk)
            await turn.pass_if_long()
        return frame


class ProtocolViolation(Exception):
    """The peer broke the framing or sent something Kafka would close the connection for."""


class Connection:
    """One client connection: its stream, principal, session and quota state; handlers reach
    the broker's parts through ``ctx`` (broker/context.py)."""

    def __init__(self, ctx: Context, stream, listener_name: str, peer: str):
        self.ctx = ctx
        self.stream = stream
        self.listener_name = listener_name
        self.peer = peer
        # Kafka's KafkaPrincipal of the session: User:ANONYMOUS on PLAINTEXT and on SSL without a
        # client certificate, the certificate's subject DN on SSL, the SASL user on SASL_*
        self.principal = ANONYMOUS
        self.host = peer.rpartition(":")[0] or peer  # the client address ACLs name
        # idle expiry (connections.max.idle.ms): the connection's scope, cancelled when it has
        # been idle too long: no bytes read or written for that long (Kafka's Selector counts
        # from the last I/O), and no request being handled (a long-poll Fetch is not idle)
        self.scope = trio.CancelScope()
        self.last_active = trio.current_time()
        self.in_request = False
        self.reader: FrameReader | None = None
        self.sock = getattr(stream, "socket", None)  # the TCP socket (under TLS too)
        # what a handler asks to run once its answer is sent, before this connection's next
        # request is read (Kafka's onComplete of a response): an async function, or None
        self.after_answer = None
        # the delegation token a SASL/SCRAM session authenticated with (tokenauth=true): it may
        # not manage tokens, and the session ends at the token's expiry (ms since the epoch)
        self.token_id: str | None = None
        self.session_expiry_ms: int | None = None
        # client quotas (broker/quotas.py), while some quota exists: the request's client id,
        # its running time when it started (request_percentage), the throttle it got
        self.client_id = ""
        self.request_start: float | None = None
        self.request_throttle: int | None = None
        self.throttle_ms = 0

    def request_quota_throttle(self) -> int:
        """Count the running time of the request being handled against the client's
        request_percentage quota (once a request; Fetch asks before it builds its answer, as
        Kafka's): the throttle time in ms, 0 within the quota."""
        if self.request_throttle is None:
            self.request_throttle = 0
            if self.request_start is not None:
                quotas = self.ctx.quotas
                spent = quotas.clock.now(trio.lowlevel.current_task()) - self.request_start
                self.request_throttle = quotas.request.record(self.principal, self.client_id, spent * 100,
                                                              quota_now_ms())
        return self.request_throttle

    def authorize(self, operation: int, resource_type: int, name: str) -> bool:
        """May this session's principal, from its host, do ``operation`` on the resource?
        Always, without an authorizer (authorizer.class.name unset)."""
        az = self.ctx.authorizer
        return az is None or az.authorize(self.principal, self.host, operation, resource_type, name)

    def authorize_any(self, operation: int, resource_type: int) -> bool:
        az = self.ctx.authorizer
        return az is None or az.authorize_any(self.principal, self.host, operation, resource_type)

    def authorized_operations(self, resource_type: int, name: str) -> int:
        """KIP-430's bit field of what the principal may do with the resource."""
        az = self.ctx.authorizer
        if az is None:
            from .security.authorizer import SUPPORTED_OPS
            return sum(1 << op for op in SUPPORTED_OPS.get(resource_type, ()))
        return az.authorized_operations(self.principal, self.host, resource_type, name)


async def handle_connection(ctx: Context, stream: trio.SocketStream, listener) -> None:
    try:
        peer = "%s:%s" % stream.socket.getpeername()[:2]
    except OSError:
        peer = "?"
    conn = Connection(ctx, stream, listener.name, peer)
    if ctx.quotas is not None and await _connection_throttled(ctx, conn):
        return
    ctx.metrics.connections += 1
    ctx.connections.add(conn)
    try:
        with conn.scope:
            await _serve_connection(conn, stream, listener)
        if conn.scope.cancelled_caught:
            log.debug("closing idle connection from %s (connections.max.idle.ms)", peer)
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
        if conn.reader is not None:
            conn.reader.release()  # a frame read in part, or its request cut short
        ctx.metrics.connections -= 1
        ctx.connections.discard(conn)
        if ctx.quotas is not None and ctx.quotas.clock is not None:
            ctx.quotas.clock.forget(trio.lowlevel.current_task())
        with trio.CancelScope(shield=True):
            await trio.aclose_forcefully(conn.stream)


async def _connection_throttled(ctx: Context, conn: Connection) -> bool:
    """connection_creation_rate (Kafka's ConnectionQuotas): a connection from an address over
    its rate is held unread for the throttle time, then closed."""
    ms = ctx.quotas.connections.throttle_ms(conn.host, quota_now_ms())
    if not ms:
        return False
    log.debug("Delaying closing of connection from %s for %d ms", conn.host, ms)
    try:
        await trio.sleep(ms / 1000)
    finally:
        with trio.CancelScope(shield=True):
            await trio.aclose_forcefully(conn.stream)
    return True


async def _serve_connection(conn: Connection, stream, listener) -> None:
    """Handshakes, authentication, then request after request until the client leaves."""
    if listener.tls:
        tls = await tls_handshake(stream, listener, conn)
        if tls is None:
            return
        stream = conn.stream = tls
    reader = conn.reader = FrameReader(stream, conn.ctx.config["socket.request.max.bytes"],
                                       conn.ctx.memory_pool, conn)
    # the same reader serves the connection after authentication: bytes a client sent right
    # behind its last authentication frame are already in its buffer
    if listener.sasl and not await sasl_authenticate(conn, listener, reader):
        return
    while True:
        frame = await reader.read_frame()
        if frame is None or conn.scope.cancel_called:
            return  # (expired while the frame came in: no handler is ever cancelled midway)
        if conn.session_expiry_ms is not None and time.time() * 1000 > conn.session_expiry_ms:
            # a session authenticated with a delegation token ends at the token's expiry as it was
            # at login: Kafka closes a channel whose session expired and was not re-authenticated
            raise CloseConnection("the session's delegation token expired")
        conn.in_request = True
        out = await dispatch(conn, frame)
        reader.release()
        if reader.mapped is not None:
            frame = None  # (the request's last view of its buffer)
            await reader.unmap()
        conn.ctx.after_work()
        # the answer goes out as I/O of its own: a client that never reads it is idle
        conn.in_request = False
        conn.last_active = trio.current_time()
        if out is not None:
            await send_response(stream, out, conn)  # (yields to other connections)
        else:
            await trio.lowlevel.cancel_shielded_checkpoint()  # acks=0: no answer, still a turn for others
        if conn.after_answer is not None:
            after, conn.after_answer = conn.after_answer, None
            conn.in_request = True
            await after()
            conn.in_request = False
            conn.last_active = trio.current_time()
        if conn.request_start is not None or conn.throttle_ms:
            conn.in_request = True  # (muted: not idle)
            await _after_quota_checks(conn)
            conn.in_request = False
            conn.last_active = trio.current_time()


async def _after_quota_checks(conn: Connection) -> None:
    """After the answer: the time its sending took counts toward request_percentage without
    throttling (Kafka's network thread time), and a throttled client's connection is muted (no
    request read from it) for its throttle time, as Kafka mutes the channel."""
    if conn.request_start is not None:
        quotas = conn.ctx.quotas
        spent = quotas.clock.now(trio.lowlevel.current_task()) - conn.request_start
        quotas.request.record_no_throttle(conn.principal, conn.client_id, spent * 100, quota_now_ms())
        conn.request_start = None
    if conn.throttle_ms:
        await trio.sleep(conn.throttle_ms / 1000)
        conn.throttle_ms = 0


async def close_idle_connections(ctx: Context) -> None:
    """Kafka's idle expiry (connections.max.idle.ms; negative: off): a connection with no bytes
    read or written for that long, and no request being handled, is closed: also one that
    never completes its TLS handshake, its SASL exchange or a frame. Checked a few times per
    idle period (at most every second), so a connection goes at most a quarter of the period
    (or a second) late. A connection whose bytes are waiting to be read is not idle (as Kafka's
    Selector handles a poll's ready channels before it expires any): after the broker itself
    could not run for a while, its clients' requests are read, not taken for silence."""
    idle_s = ctx.config["connections.max.idle.ms"] / 1000
    if idle_s < 0:
        return
    while True:
        await trio.sleep(max(0.01, min(idle_s / 4, 1.0)))
        limit = trio.current_time() - idle_s
        for conn in list(ctx.connections):
            if not conn.in_request and conn.last_active <= limit and not _readable(conn.sock):
                conn.scope.cancel()


def _readable(sock) -> bool:
    if sock is None:
        return False
    try:
        return bool(select.select([sock], [], [], 0)[0])
    except (OSError, ValueError):  # closed meanwhile
        return False


def failed_authentication(conn: Connection, reason: str) -> None:
    """Kafka's log line (Selector) and metric (failed-authentication-total) of a failed authentication."""
    conn.ctx.metrics.failed_authentications += 1
    log.info("Failed authentication with /%s (%s)", conn.peer, reason)


async def close_after_failed_authentication(conn: Connection) -> bool:
    """As Kafka (connection.failed.authentication.delay.ms): the error response is out, the close
    comes a moment later, so the client reads the error before the connection goes (and a
    password-guessing client is slowed down). False: the connection is to close."""
    await trio.sleep(conn.ctx.config["connection.failed.authentication.delay.ms"] / 1000)
    return False


async def tls_handshake(stream, listener, conn: Connection):
    """The TLS stream once the handshake is done (principal from the client certificate), or None
    when it failed (counted and logged as a failed authentication, as Kafka does)."""
    # imported here: only SSL listeners need it (a listener's TLS config imported it at start)
    from .security.tls import NoMatchingRule, principal_from_cert
    tls = trio.SSLStream(stream, listener.ssl_context, server_side=True)
    try:
        await tls.do_handshake()
    except trio.BrokenResourceError as e:
        cause = e.__cause__
        failed_authentication(conn, f"SSL handshake failed: {cause or e}")
        return None
    try:
        conn.principal = principal_from_cert(tls.getpeercert(), listener.principal_rules)
    except NoMatchingRule as e:
        failed_authentication(conn, str(e))
        return None
    return tls


def _kafka_name(api_key: int) -> str:
    """ApiKeys' enum name, as Kafka's messages print it: ElectLeaders -> ELECT_LEADERS."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", schema.API_NAMES[api_key]).upper()


def error_answer(api_key: int, version: int, request, code: ErrorCode, message: str | None) -> dict:
    """The request's whole-request error answer (the handler's ``error_response``, as Kafka's
    getErrorResponse: a Metadata answer names each asked-for topic with the error, an
    OffsetCommit answer puts it in each partition's), or the top-level error code alone."""
    build = getattr(handlers.handler(api_key), "error_response", None)
    if build is not None:
        return build(request, code, message, version)
    return {"error_code": int(code)}


def _frame_error_answer(api_key: int, version: int, frame: bytes, code: ErrorCode, message: str) -> dict:
    """error_answer of a request still in its frame; a request that does not even decode gets
    the error code alone."""
    try:
        return error_answer(api_key, version, schema.decode_request(frame)[1], code, message)
    except Exception:
        return {"error_code": int(code)}


def refusal(conn: Connection, api_key: int, request) -> tuple[ErrorCode, str] | None:
    """The first whole-request check of the API's AUTHORIZATION entry the principal fails, as
    (error, Kafka's message for it); None when it passes them all (or the API has none)."""
    for check in AUTHORIZATION[api_key].whole:
        name = CLUSTER_NAME if check.field is None else request[check.field]
        if not any(conn.authorize(op, check.resource_type, name) for op in check.operations):
            return check.error, AUTH_MESSAGES[check.error]
    return None


async def sasl_authenticate(conn: Connection, listener, reader: FrameReader) -> bool:
    """Kafka's SaslServerAuthenticator: ApiVersions and SaslHandshake, then the mechanism's
    tokens, either in SaslAuthenticate requests (handshake v1) or as bare size-prefixed frames
    (handshake v0, old clients). Any other request before authentication closes the connection.
    True once authenticated (``conn.principal`` set); False when the connection is to close."""
    # imported here: only SASL listeners need it (a listener's SASL config imported it at start)
    from .security.sasl import AuthenticationFailed, MalformedToken, new_server as new_sasl_server
    ctx, stream = conn.ctx, conn.stream
    # Kafka's sasl.server.max.receive.size: the largest frame read before authentication
    reader.max_size, max_size = listener.sasl_max_receive_size, reader.max_size
    reader.max_size_key = "sasl.server.max.receive.size"
    server = mechanism = None
    handshake_version = None
    while True:
        frame = await reader.read_frame()
        if frame is None:
            return False
        if server is not None and handshake_version == 0:
            try:  # an unframed token (the mechanisms decode bytes; a large one read as Produce's is a view)
                challenge = server.evaluate(bytes(frame))
            except (AuthenticationFailed, MalformedToken) as e:
                failed_authentication(conn, f"Authentication failed during authentication due to invalid "
                                            f"credentials with SASL mechanism {mechanism}: {e}")
                return await close_after_failed_authentication(conn)
            await stream.send_all(_SIZE.pack(len(challenge)) + challenge)
            if server.complete:
                conn.principal = "User:" + server.username
                _token_session(conn, server)
                reader.max_size, reader.max_size_key = max_size, "socket.request.max.bytes"
                return True
            continue
        try:
            api_key, version, corr = schema.peek_request_header(frame)
        except SchemaError as e:
            raise ProtocolViolation(str(e)) from None
        if server is None and api_key == 18:  # ApiVersions
            out = await dispatch(conn, frame)
            await send_response(stream, out)
            continue
        expected = 17 if server is None else 36
        lo, hi = handlers.APIS[expected].versions
        if api_key != expected or not lo <= version <= hi:
            name = schema.API_NAMES.get(api_key, api_key)
            if server is not None and api_key in handlers.APIS and api_key != 36:
                # Kafka (SaslServerAuthenticator): another request while authenticating gets its
                # error response (ILLEGAL_SASL_STATE where it has an error code), then the close
                lo2, hi2 = handlers.advertised_range(handlers.APIS[api_key], ctx)
                if lo2 <= version <= hi2:
                    await send_response(stream, schema.encode_response_parts(api_key, version, corr, _frame_error_answer(
                        api_key, version, frame, ErrorCode.ILLEGAL_SASL_STATE,
                        f"Unexpected Kafka request of type {_kafka_name(api_key)} during SASL authentication.")))
            raise ProtocolViolation(f"Unexpected Kafka request of type {name} v{version} during SASL "
                                    + ("handshake" if server is None else "authentication"))
        try:
            header, body = schema.decode_request(frame)
        except Exception as e:
            raise ProtocolViolation(f"malformed {schema.API_NAMES[api_key]} request: {e!r}") from None
        if api_key == 17:  # SaslHandshake
            mechanism = body.mechanism
            enabled = listener.sasl_mechanisms
            ok = mechanism in enabled
            await send_response(stream, schema.encode_response_parts(17, version, corr, {
                "error_code": 0 if ok else int(ErrorCode.UNSUPPORTED_SASL_MECHANISM), "mechanisms": enabled}))
            if not ok:
                failed_authentication(conn, f"Unsupported SASL mechanism {mechanism}")
                return await close_after_failed_authentication(conn)
            server = new_sasl_server(mechanism, listener, ctx.scram_credentials.lookup, ctx.tokens)
            handshake_version = version
            continue
        # SaslAuthenticate
        try:
            challenge, code, message = server.evaluate(body.auth_bytes), 0, ""  # Kafka: "" on success
        except AuthenticationFailed as e:
            challenge, code, message = b"", int(ErrorCode.SASL_AUTHENTICATION_FAILED), str(e)
        except MalformedToken as e:
            failed_authentication(conn, str(e))
            return await close_after_failed_authentication(conn)
        await send_response(stream, schema.encode_response_parts(36, version, corr, {
            "error_code": code, "error_message": message, "auth_bytes": challenge, "session_lifetime_ms": 0}))
        if code:
            failed_authentication(conn, message)
            return await close_after_failed_authentication(conn)
        if server.complete:
            conn.principal = "User:" + server.username
            _token_session(conn, server)
            reader.max_size, reader.max_size_key = max_size, "socket.request.max.bytes"
            return True


def _token_session(conn: Connection, server) -> None:
    token_id = getattr(server, "token_id", None)
    if token_id is not None:
        conn.token_id, conn.session_expiry_ms = token_id, server.token_expiry


_HAVE_SENDFILE = hasattr(os, "sendfile")

# a sendfile failing with one of these means the socket or file cannot splice: read instead
_NO_SENDFILE = {errno.EINVAL, errno.ENOSYS, errno.ENOTSOCK, errno.EOPNOTSUPP}


async def send_response(stream, parts: list, activity=None) -> None:
    """Write one response frame given as chunks (bytes-like objects and FileSlices).

    A Fetch answer over many partitions alternates small chunks (a partition's fields) and
    slices: they are written with plain non-blocking syscalls on the socket (write, sendfile),
    waiting only when the socket buffer is full, two syscalls a partition as Kafka's writev and
    transferTo. (No MSG_MORE / TCP_CORK between the chunks: a corked tail stalls sendfile's wait
    for room in the socket buffer until the kernel's 200 ms cork timer fires.)"""
    if not isinstance(stream, trio.SocketStream):
        if len(parts) == 1:
            await stream.send_all(parts[0])
        else:
            await _send_through(stream, parts, activity)
        return
    sock = stream.socket
    if not _HAVE_SENDFILE:
        for data in _pieces(parts):  # no sendfile on this platform: slices read and written a piece at a time
            await stream.send_all(data)
        return
    fd = sock.fileno()
    await trio.lowlevel.checkpoint_if_cancelled()
    for part in parts:
        if isinstance(part, FileSlice):
            await _send_slice(sock, fd, part, activity)
            continue
        # a chunk (most answers are one small chunk): one write, nearly always whole; the write
        # loop, a coroutine, only for what the socket did not take
        try:
            n = os.write(fd, part)
        except BlockingIOError:
            n = 0
        if n < len(part):
            await _write_all(sock, fd, memoryview(part)[n:], activity)
    await trio.lowlevel.cancel_shielded_checkpoint()  # let other connections run


# what a TLS answer is written in: big enough for full TLS records, small enough that a 50 MB
# Fetch answer is never one bytes object
_TLS_WRITE = 1 << 20


def _pieces(parts: list):
    """The answer's bytes in pieces of at most ``_TLS_WRITE``: a slice of a segment file is read a
    piece at a time, so a large Fetch answer is never in memory whole."""
    for part in parts:
        if not isinstance(part, FileSlice):
            yield part
            continue
        for at in range(0, part.size, _TLS_WRITE):
            yield FileSlice(part.handle, part.position + at, min(_TLS_WRITE, part.size - at)).read()


async def _send_through(stream, parts: list, activity=None) -> None:
    """TLS (trio.SSLStream): the bytes must go through the TLS stream, never sendfile'd to the raw
    socket. Small chunks are gathered, not written one TLS record each; slices are read as they go."""
    pending: list = []
    size = 0
    for data in _pieces(parts):
        pending.append(data)
        size += len(data)
        if size >= _TLS_WRITE:
            await stream.send_all(b"".join(pending))
            _active(activity)
            pending, size = [], 0
    if pending:
        await stream.send_all(b"".join(pending))


def _active(activity) -> None:
    """Bytes went out after a wait: the connection is not idle (Kafka counts from the last I/O)."""
    if activity is not None:
        activity.last_active = trio.current_time()


async def _write_all(sock, fd: int, view: memoryview, activity=None) -> None:
    while view:
        try:
            view = view[os.write(fd, view):]
        except BlockingIOError:
            await trio.lowlevel.wait_writable(sock)
            _active(activity)


async def _send_slice(sock, fd: int, s: FileSlice, activity=None) -> None:
    """Send a slice of a segment file: sendfile from its descriptor to the socket, waiting
    for room in the socket buffer; a plain read and write where sendfile cannot be used."""
    position, remaining = s.position, s.size
    in_fd = s.handle.fd
    while remaining:
        try:
            n = os.sendfile(fd, in_fd, position, remaining)
        except BlockingIOError:
            await trio.lowlevel.wait_writable(sock)
            _active(activity)
            continue
        except OSError as e:
            if e.errno not in _NO_SENDFILE:
                raise
            rest = FileSlice(s.handle, position, remaining)
            await _write_all(sock, fd, memoryview(rest.read()), activity)
            return
        if n == 0:  # end of file before the slice's end: the file was truncated
            raise TruncatedSliceError(s, s.size - remaining)
        position += n
        remaining -= n


async def dispatch(conn: Connection, frame: bytes | memoryview) -> list | None:
    ctx = conn.ctx
    try:
        api_key, version, corr = schema.peek_request_header(frame)
    except SchemaError as e:
        raise ProtocolViolation(str(e)) from None
    api = handlers.APIS.get(api_key)
    if api is None:
        # Kafka cannot parse a header with an unknown api key and closes the connection.
        raise ProtocolViolation(f"unknown api key {api_key}")
    lo, hi = handlers.advertised_range(api, ctx)
    if not lo <= version <= hi:
        if api_key == 18:
            # KIP-511: ApiVersions of any version is answered, with a v0 body: UNSUPPORTED_VERSION
            # and the range of ApiVersions alone (Kafka's ApiVersionsRequest.getErrorResponse)
            body = {"error_code": 35, "api_keys": [{"api_key": 18, "min_version": lo, "max_version": hi}],
                    "throttle_time_ms": 0}
            return schema.encode_response_parts(18, 0, corr, body)
        raise ProtocolViolation(f"unsupported version {version} of {schema.API_NAMES[api_key]}")
    try:
        header, body = schema.decode_request(frame)
    except Exception as e:  # any decoding failure is a malformed request: Kafka closes the connection
        raise ProtocolViolation(f"malformed {schema.API_NAMES[api_key]} v{version} request: {e!r}") from None
    quotas = ctx.quotas
    if quotas is not None and quotas.any_client_quota:
        _start_quota_checks(conn, header, quotas)
    started = time.perf_counter()
    refused = None
    if api.enabled is not None and not api.enabled(ctx):
        # an API the broker's settings or features turn off: UNSUPPORTED_VERSION before any check, as Kafka
        refused = ErrorCode.UNSUPPORTED_VERSION, None
    elif ctx.authorizer is not None:
        refused = refusal(conn, api_key, body)
    try:
        if refused is not None:
            response = error_answer(api_key, version, body, *refused)
        else:
            response = await handlers.handler(api_key).handle(conn, header, body)
    except (CloseConnection, trio.Cancelled):
        raise
    except Exception:
        # A bug in one handler must not take the broker down: log it and close this
        # connection (the client reconnects and retries, as after any network error).
        log.exception("%s v%d from %s failed", schema.API_NAMES[api_key], version, conn.peer)
        raise CloseConnection("internal error") from None
    finally:
        ctx.metrics.observe_request(api_key, version, time.perf_counter() - started)
    if quotas is not None and quotas.any_client_quota:
        _throttle(conn, api_key, body, len(frame), response, quotas)
    if response is None:  # acks=0 produce: no response at all
        return None
    return schema.encode_response_parts(api_key, version, corr, response)


# APIs whose requests count toward no request_percentage quota: cluster actions (Kafka answers
# them with sendResponseExemptThrottle)
_QUOTA_EXEMPT = {27}


def _start_quota_checks(conn: Connection, header, quotas) -> None:
    conn.client_id = header.client_id or ""
    conn.request_throttle = None
    conn.throttle_ms = 0
    if quotas.request.enabled and header.api_key not in _QUOTA_EXEMPT:
        conn.request_start = quotas.watch_time().now(trio.lowlevel.current_task())


def _throttle(conn: Connection, api_key: int, body, size: int, response, quotas) -> None:
    """Kafka's KafkaApis throttling: the larger of the request-time and the byte-rate throttle
    goes in the answer's throttle_time_ms, and the connection is muted that long once the answer
    is out. A Produce counts its request size (acks=0: no request time, Kafka exempts it); a
    Fetch has counted its answer's size itself (handlers/fetch.py)."""
    throttle = 0
    if api_key == 0:
        if quotas.produce.enabled:
            throttle = quotas.produce.record(conn.principal, conn.client_id, size, quota_now_ms())
        if body.acks == 0:
            conn.request_throttle = 0
            conn.request_start = None
    if isinstance(response, dict):
        throttle = max(throttle, response.get("throttle_time_ms") or 0)
    throttle = max(throttle, conn.request_quota_throttle())
    if throttle > 0:
        if isinstance(response, dict):
            response["throttle_time_ms"] = throttle
        conn.throttle_ms = throttle


# accept() failing with one of these is the process or host out of a resource: wait and retry
# (as trio.serve_listeners does), never give up the listener
_ACCEPT_CAPACITY_ERRNOS = {errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS}


async def serve_listener(ctx: Context, listener_sock: trio.SocketListener, listener,
                         task_status=trio.TASK_STATUS_IGNORED):
    """Kafka's Acceptor: accept a connection, wait for its slot (connection limits, creation rate:
    it waits unserved, and the listener accepts nothing else meanwhile), count it against its
    address's limit, and serve it in a task of its own."""
    quotas = ctx.connection_quotas
    async with trio.open_nursery() as nursery:
        task_status.started()
        while True:
            try:
                stream = await listener_sock.accept()
            except OSError as e:
                if e.errno not in _ACCEPT_CAPACITY_ERRNOS:
                    raise
                log.error("accept on listener %s failed: %s; retrying in 0.1 s (raise ulimit -n, or set "
                          "max.connections)", listener.name, e)
                await trio.sleep(0.1)
                continue
            try:
                await quotas.wait_for_slot(listener.name)
            except BaseException:  # (the broker is shutting down)
                stream.socket.close()
                raise
            try:
                address = stream.socket.getpeername()[0]
            except OSError:  # gone already
                stream.socket.close()
                continue
            if not quotas.inc(listener.name, address):
                stream.socket.close()  # (before any byte: nothing to say, as Kafka's Acceptor)
                continue
            nursery.start_soon(_connection_task, ctx, stream, listener, address)


async def _connection_task(ctx: Context, stream, listener, address: str) -> None:
    try:
        await handle_connection(ctx, stream, listener)
    finally:
        ctx.connection_quotas.dec(listener.name, address)
