"""Start-up and shutdown: bind listeners, run background tasks, stop cleanly on SIGTERM/SIGINT."""
from __future__ import annotations

import contextlib
import functools
import logging
import os
import signal
import socket
import sys

import trio

from . import scheduler
from .broker import Broker
from .scheduler import Service
from .server import MMAP_FRAME_MIN, close_idle_connections, serve_listener

log = logging.getLogger("minikafka")


async def run(config, trace=None, *, task_status=trio.TASK_STATUS_IGNORED, install_signals: bool = True) -> None:
    """Run the broker until SIGTERM/SIGINT. ``trace`` (broker.cli.StartupTrace) collects the
    start-up phases; they are logged (DEBUG, minikafka.startup) once the broker is ready.

    The signals are caught from the start (as Kafka's shutdown hook is installed before it
    starts up): one that arrives while the logs load, or the moment the ready line is out,
    is answered by a clean shutdown once the broker is up, not by the default action, which
    ends the process as kill -9 would (no flush, no checkpoints, an unclean next start)."""
    with (trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) if install_signals
          else contextlib.nullcontext()) as signals:
        broker = Broker(config)
        broker.load(trace)
        try:
            async with trio.open_nursery() as nursery:
                await _serve(broker, config, nursery)
                print(f"minikafka ready: node {broker.ctx.node_id} listening on {', '.join(broker.ctx.listening)} "
                      f"(log.dirs={config.log_dir})", flush=True)
                if trace is not None:
                    trace.ready()
                _keep_freed_buffers()
                task_status.started(broker)
                if signals is not None:
                    async for signum in signals:
                        log.info("received %s, shutting down", signal.Signals(signum).name)
                        break
                    nursery.cancel_scope.cancel()
        finally:
            broker.close()
            log.info("shut down cleanly")


def _keep_freed_buffers() -> None:
    """Let glibc's malloc keep up to 16 MB of freed memory for reuse (M_MMAP_THRESHOLD and
    M_TRIM_THRESHOLD, as the MALLOC_*_THRESHOLD_ variables would; those win if set).

    Why: by default a large buffer (a produce request, the copy an append patches) gets fresh
    pages from the kernel and gives them back when freed, so each megabyte produced costs
    its page faults and the zeroing of its pages again: with large transactions most of the
    broker's CPU (bench/throughput.py row txn1000, bench/README.md). The price is up to 16 MB
    more RSS after a burst.
    Done once ready: it is not on the start path."""
    if sys.platform != "linux" or any(k in os.environ for k in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")):
        return
    import ctypes
    try:
        mallopt = ctypes.CDLL(None).mallopt  # glibc (musl has a no-op one)
    except (OSError, AttributeError):
        return
    m_trim_threshold, m_mmap_threshold = -1, -3
    mallopt(m_mmap_threshold, MMAP_FRAME_MIN)  # the size from which server.py maps frames itself
    mallopt(m_trim_threshold, 16 << 20)


async def _serve(broker, config, nursery) -> None:
    """Bind every listener and serve it, then start the background tasks (and metrics)."""
    for listener in config.listeners:
        name, host, port = listener.name, listener.host, listener.port
        try:
            # the address as bytes: a str goes through Python's "idna" codec in getaddrinfo, whose
            # import (encodings.idna, stringprep) would be on every start; the listeners regex
            # (security/listeners.py) lets only ASCII through
            sockets = await trio.open_tcp_listeners(port, host=host.encode("ascii") if host else None)
        except OSError as e:
            # As Kafka's SocketServer: "Socket server failed to bind to host:port: ..."
            raise OSError(e.errno, f"Socket server failed to bind to {host or '0.0.0.0'}:{port}:"
                                   f" {e.strerror or e}") from None
        bound_port = sockets[0].socket.getsockname()[1]
        adv_host, adv_port = config.advertised.get(name, (host, port))
        if not adv_host or adv_host == "0.0.0.0":
            adv_host = host if host and host != "0.0.0.0" else socket.gethostname()
        broker.ctx.advertised[name] = (adv_host, adv_port or bound_port)
        broker.ctx.listeners[name] = listener
        for sock in sockets:
            await nursery.start(serve_listener, broker.ctx, sock, listener)
        broker.ctx.listening.append(f"{name}://{host or '0.0.0.0'}:{bound_port}")
    await scheduler.run(broker.background_tasks() + [
        Service("connections.max.idle.ms", functools.partial(close_idle_connections, broker.ctx))], nursery)
    if config["metrics.listener"]:
        from .metrics import serve_metrics
        await nursery.start(serve_metrics, broker)
