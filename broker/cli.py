"""`minikafka` command line: runs the broker, plus operator subcommands.

    minikafka [--config conf/broker.properties] [--override key=value ...]
    minikafka healthcheck [--bootstrap-server HOST:PORT]
"""
from __future__ import annotations

import argparse
import logging
import os
import sys

SUBCOMMANDS = {
    "healthcheck": "broker.tools.healthcheck",
    "transactions": "broker.tools.transactions",
    "dump-log": "broker.tools.dump_log",
}


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in SUBCOMMANDS:
        import importlib
        mod = importlib.import_module(SUBCOMMANDS[argv[0]])
        sys.exit(mod.main(argv[1:]))
    parser = argparse.ArgumentParser(prog="minikafka", description="A small Kafka-compatible broker.")
    parser.add_argument("--config", help="broker.properties file (Kafka property names)")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="override one property; repeatable (as kafka-server-start.sh)")
    parser.add_argument("--log-level", default=os.environ.get("MINIKAFKA_LOG_LEVEL", "INFO"),
                        help="stderr log level (default INFO, or $MINIKAFKA_LOG_LEVEL)")
    parser.add_argument("--log-config", help="logging .ini file instead (see conf/logging.ini)")
    args = parser.parse_args(argv)

    configure_logging(args.log_level, args.log_config)
    from .config import BrokerConfig, ConfigError
    try:
        config = BrokerConfig.load(args.config, args.override)
    except ConfigError as e:
        print(f"minikafka: configuration error: {e}", file=sys.stderr)
        sys.exit(2)

    import trio
    from storage.log_manager import LogDirLockedError
    from .main import run
    try:
        trio.run(run, config)
    except KeyboardInterrupt:
        pass
    except LogDirLockedError as e:
        # another broker owns log.dirs: nothing there was touched
        print(f"minikafka: cannot start: {e}", file=sys.stderr)
        sys.exit(1)
    except (OSError, BaseExceptionGroup) as e:
        # trio reports a failed bind (port in use, bad address) inside an exception group
        err = _first_os_error(e)
        if err is None:
            raise
        print(f"minikafka: cannot start: {err}", file=sys.stderr)
        sys.exit(1)


def _first_os_error(e: BaseException) -> OSError | None:
    if isinstance(e, OSError):
        return e
    if isinstance(e, BaseExceptionGroup):
        for sub in e.exceptions:
            found = _first_os_error(sub)
            if found is not None:
                return found
    return None


def configure_logging(level: str = "INFO", config_file: str | None = None) -> None:
    if config_file:
        from logging import config as logging_config
        logging_config.fileConfig(config_file, disable_existing_loggers=False)
        return
    logging.basicConfig(
        level=getattr(logging, level.upper(), logging.INFO),
        stream=sys.stderr,
        format="[%(asctime)s] %(levelname)s %(message)s (%(name)s)",
    )
