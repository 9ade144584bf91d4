"""Start-up and shutdown: bind listeners, run background tasks, stop cleanly on SIGTERM/SIGINT."""
from __future__ import annotations

import logging
import signal
import socket

import trio

from .broker import Broker
from .config import parse_listener
from .server import serve_listener

log = logging.getLogger("minikafka")


async def run(config, trace=None, *, task_status=trio.TASK_STATUS_IGNORED, install_signals: bool = True) -> None:
    """Run the broker until SIGTERM/SIGINT. ``trace`` (broker.cli.StartupTrace) collects the
    start-up phases; they are logged (DEBUG, minikafka.startup) once the broker is ready."""
    broker = Broker(config)
    broker.load(trace)
    try:
        async with trio.open_nursery() as nursery:
            advertised = {}
            for text in config["advertised.listeners"]:
                name, host, port = parse_listener(text, "advertised.listeners")
                advertised[name] = (host, port)
            addresses = []
            for text in config["listeners"]:
                name, host, port = parse_listener(text)
                try:
                    listeners = await trio.open_tcp_listeners(port, host=host or None)
                except OSError as e:
                    # As Kafka's SocketServer: "Socket server failed to bind to host:port: ..."
                    raise OSError(e.errno, f"Socket server failed to bind to {host or '0.0.0.0'}:{port}:"
                                           f" {e.strerror or e}") from None
                bound_port = listeners[0].socket.getsockname()[1]
                adv_host, adv_port = advertised.get(name, (host, port))
                if not adv_host or adv_host == "0.0.0.0":
                    adv_host = host if host and host != "0.0.0.0" else socket.gethostname()
                broker.advertised[name] = (adv_host, adv_port or bound_port)
                for lst in listeners:
                    await nursery.start(serve_listener, broker, lst, name)
                addresses.append(f"{name}://{host or '0.0.0.0'}:{bound_port}")
            await broker.start_background(nursery)
            if config["metrics.listener"]:
                from .metrics import serve_metrics
                await nursery.start(serve_metrics, broker)
            print(f"minikafka ready: node {broker.node_id} listening on {', '.join(addresses)} "
                  f"(log.dirs={config.log_dir})", flush=True)
            if trace is not None:
                trace.ready()
            task_status.started(broker)
            if install_signals:
                with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                    async for signum in signals:
                        log.info("received %s, shutting down", signal.Signals(signum).name)
                        break
                nursery.cancel_scope.cancel()
    finally:
        broker.close()
        log.info("shut down cleanly")
