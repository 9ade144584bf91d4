"""``minikafka console``: the web console (needs ``pip install 'minikafka[console]'``).

    minikafka console --bootstrap-server HOST:PORT [--command-config client.properties]
                      [--listen 127.0.0.1:8080] [--interval 1] [--read-only]

``--command-config`` holds the client properties of a secured listener, as for the other
tools (security.protocol, ssl.truststore.location, sasl.mechanism, sasl.jaas.config). Once it
serves, it prints one line, ``minikafka console ready: http://HOST:PORT/`` (``--listen
127.0.0.1:0`` picks a free port and names it there)."""
from __future__ import annotations

import argparse
import ipaddress
import logging
import signal
import sys

from .app import LOOPBACK_HOSTS


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="minikafka console",
                                description="A web console for a Kafka cluster's transactions, last stable "
                                            "offsets and read_committed lag (Kafka APIs only).")
    p.add_argument("--bootstrap-server", "--bootstrap", dest="bootstrap_server", required=True, metavar="HOST:PORT",
                   help="the cluster's bootstrap address(es), comma-separated")
    p.add_argument("--command-config", metavar="FILE", help="client properties of a secured listener")
    p.add_argument("--listen", default="127.0.0.1:8080", metavar="HOST:PORT",
                   help="where the console serves HTTP (default 127.0.0.1:8080; port 0: any free port)")
    p.add_argument("--interval", type=float, default=1.0, metavar="SECONDS",
                   help="how often the cluster is polled and the pages updated (default 1)")
    p.add_argument("--read-only", action="store_true", help="no abort action")
    p.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS", help="socket timeout (default 10)")
    p.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                   help="a Host name the console answers besides loopback's (behind a proxy, in a "
                        "container); repeatable. Without it a non-loopback --listen answers every name")
    p.add_argument("--log-level", default="WARNING", type=str.upper,
                   choices=["DEBUG", "INFO", "WARNING", "ERROR"], help="stderr log level (default WARNING)")
    return p


def parse_bootstrap(text: str) -> list[str]:
    """``host:port[,host:port...]``; ValueError naming the option otherwise."""
    out = []
    for item in (i.strip() for i in text.split(",")):
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) <= 65535:
            raise ValueError(f"--bootstrap-server must be HOST:PORT[,HOST:PORT...], not {text!r}")
        out.append(item)
    return out


def parse_listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535 or not host:
        raise ValueError(f"--listen must be HOST:PORT, not {text!r}")
    return host.strip("[]"), int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    try:
        host, port = parse_listen(args.listen)
        parse_bootstrap(args.bootstrap_server)
    except ValueError as e:
        print(f"minikafka console: {e}", file=sys.stderr)
        return 2
    if args.interval <= 0:
        print("minikafka console: --interval must be positive", file=sys.stderr)
        return 2
    try:
        import hypercorn  # noqa: F401
        import jinja2  # noqa: F401
        import starlette  # noqa: F401
    except ImportError as e:
        print(f"minikafka console needs the console extra ({e.name} is missing): "
              f"pip install 'minikafka[console]'", file=sys.stderr)
        return 2
    from minikafka.admin.wire import read_command_config
    try:
        properties = read_command_config(args.command_config)
    except (OSError, ValueError) as e:  # (the broker config's ConfigError is a ValueError)
        print(f"minikafka console: --command-config: {e}", file=sys.stderr)
        return 2
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="[%(asctime)s] %(levelname)s %(message)s (%(name)s)")
    from .app import Settings, create_app
    allowed = LOOPBACK_HOSTS | {h.lower() for h in args.allow_host}
    if not is_loopback(host) and not args.allow_host:
        allowed = None
    settings = Settings(bootstrap=args.bootstrap_server, properties=properties, interval=args.interval,
                        read_only=args.read_only, timeout=args.timeout, allowed_hosts=allowed)
    if not is_loopback(host) and not args.read_only:
        print(f"minikafka console: listening on {host}, not loopback: anyone who reaches it sees the cluster "
              f"and can abort hanging transactions (--read-only turns that off)", file=sys.stderr)
    return serve(create_app(settings), host, port)


def serve(app, host: str, port: int) -> int:
    import trio
    from hypercorn.config import Config
    from hypercorn.trio import serve as hypercorn_serve

    config = Config()
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    config.accesslog = None
    config.graceful_timeout = 1.0
    config.loglevel = "WARNING"  # hypercorn's "Running on" line: ours is the ready line

    async def run() -> None:
        async with trio.open_nursery() as nursery:
            async def until_signal() -> None:
                with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                    async for _ in signals:
                        return
            binds = await nursery.start(lambda task_status: hypercorn_serve(
                app, config, shutdown_trigger=until_signal, task_status=task_status))
            print(f"minikafka console ready: {binds[0]}/", flush=True)
    try:
        trio.run(run)
    except (OSError, BaseExceptionGroup) as e:
        err = _first_os_error(e)
        if err is None:
            raise
        print(f"minikafka console: cannot listen on {host}:{port}: {err}", file=sys.stderr)
        return 1
    return 0


def _first_os_error(e: BaseException) -> OSError | None:
    if isinstance(e, OSError):
        return e
    for sub in getattr(e, "exceptions", ()):
        found = _first_os_error(sub)
        if found is not None:
            return found
    return None
