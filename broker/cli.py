"""`minikafka` command line: runs the broker, plus operator subcommands.

    minikafka [--config conf/broker.properties] [--override key=value ...]
    minikafka healthcheck [--bootstrap-server HOST:PORT]
    minikafka format [--config F] [--feature transaction.version=1 ...]     (kafka-storage.sh format)
    minikafka features --bootstrap-server HOST:PORT describe|upgrade|downgrade|disable   (kafka-features.sh)
    minikafka console --bootstrap-server HOST:PORT [--listen 127.0.0.1:8080]   (the web console, console/)
"""
from __future__ import annotations

import time

_MAIN_IMPORTED = time.perf_counter()  # the start-up trace's first mark (StartupTrace)

import gc  # noqa: E402
import logging  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from types import SimpleNamespace  # noqa: E402

SUBCOMMANDS = {
    # clients of a running broker (admin/), and the offline tools on its data dirs (broker/tools/)
    "healthcheck": "minikafka.admin.healthcheck",
    "transactions": "minikafka.admin.transactions",
    "dump-log": "minikafka.broker.tools.dump_log",
    "configs": "minikafka.admin.configs",
    "acls": "minikafka.admin.acls",
    "features": "minikafka.admin.features",
    "format": "minikafka.broker.tools.format",
    # a client application (console/, extra "console"), imported only when asked for
    "console": "minikafka.console.cli",
}


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in SUBCOMMANDS:
        import importlib
        mod = importlib.import_module(SUBCOMMANDS[argv[0]])
        try:
            rc = mod.main(argv[1:])
            sys.stdout.flush()
        except BrokenPipeError:
            # `minikafka dump-log ... | head`: the reader left; say so once, no traceback
            # (stdout goes to /dev/null so the interpreter's final flush cannot fail again)
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            print(f"minikafka {argv[0]}: output closed by the reader (broken pipe)", file=sys.stderr)
            rc = 1
        sys.exit(rc)
    trace = StartupTrace()
    args = parse_args(argv)

    try:
        configure_logging(args.log_level, args.log_config)
    except ValueError as e:
        print(f"minikafka: {e}", file=sys.stderr)
        sys.exit(2)
    from .config import BrokerConfig, ConfigError
    try:
        config = BrokerConfig.load(args.config, args.override)
    except ConfigError as e:
        print(f"minikafka: configuration error: {e}", file=sys.stderr)
        sys.exit(2)

    trace.mark("config")
    import trio
    from minikafka.storage.log_manager import LogDirLockedError
    from .main import run
    trace.mark("imports")
    try:
        trio.run(run, config, trace)
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


# The broker's options, one table for both readers below: option -> (attribute, repeatable, metavar,
# help; {levels} is filled in with LOG_LEVELS)
_OPTIONS = {
    "--config": ("config", False, None, "broker.properties file (Kafka property names)"),
    "--override": ("override", True, "KEY=VALUE", "override one property; repeatable (as kafka-server-start.sh)"),
    "--log-level": ("log_level", False, None,
                    "stderr log level, one of {levels} (default INFO, or $MINIKAFKA_LOG_LEVEL)"),
    "--log-config": ("log_config", False, None, "logging .ini file instead (see conf/logging.ini)"),
}


def parse_args(argv: list[str]):
    """The broker's options (attributes config, override, log_level, log_config).

    A command line of whole option names, each as ``--name value`` or ``--name=value`` with no
    value starting with '-', is read here, as argparse reads it; any other (--help, an
    abbreviation, an unknown option, a missing value) goes to argparse, for its answer and
    messages: importing and building argparse's parser is a noticeable part of a start
    (bench/README.md)."""
    values: dict = {dest: [] if repeatable else None for dest, repeatable, _, _ in _OPTIONS.values()}
    i = 0
    while i < len(argv):
        option, eq, value = argv[i].partition("=")
        if option not in _OPTIONS:
            return _argparse_args(argv)
        if not eq:
            i += 1
            if i == len(argv) or argv[i].startswith("-"):
                return _argparse_args(argv)
            value = argv[i]
        i += 1
        dest, repeatable, _, _ = _OPTIONS[option]
        if repeatable:
            values[dest].append(value)
        else:
            values[dest] = value
    return SimpleNamespace(**values)


def _argparse_args(argv: list[str]):
    import argparse
    parser = argparse.ArgumentParser(prog="minikafka", description="A small Kafka-compatible broker.")
    for option, (_, repeatable, metavar, text) in _OPTIONS.items():
        parser.add_argument(option, metavar=metavar, help=text.format(levels=", ".join(LOG_LEVELS)),
                            **({"action": "append", "default": []} if repeatable else {}))
    return parser.parse_args(argv)


class StartupTrace:
    """Where a start's time goes, logged once the broker is ready (DEBUG, logger
    minikafka.startup): the interpreter's own start-up before this module ran (from the
    process start time, to the kernel clock tick), then each phase since: config (arguments,
    logging, broker.properties), imports (trio and the broker), logs (load and recovery of
    every partition), coordinators (transaction and group state), listeners (bind).

    While it runs, the cyclic garbage collector is off: a start allocates hundreds of
    thousands of objects that all live on (modules, classes, logs), which collecting would
    only walk over again. Once ready they are frozen out of later
    collections (gc.freeze) and the collector is on again."""

    def __init__(self):
        self.marks: list[tuple[str, float]] = [("", _MAIN_IMPORTED)]
        gc.disable()

    def mark(self, phase: str) -> None:
        self.marks.append((phase, time.perf_counter()))

    def ready(self) -> None:
        self.mark("listeners")
        gc.freeze()
        gc.enable()
        logging.getLogger("minikafka.startup").debug("%s", self.summary())

    def summary(self) -> str:
        parts = []
        before = _seconds_since_exec()
        if before is not None:
            before -= time.perf_counter() - _MAIN_IMPORTED
            parts.append(f"interpreter {before * 1000:.0f} ms")
        for (_, t0), (phase, t1) in zip(self.marks, self.marks[1:]):
            parts.append(f"{phase} {(t1 - t0) * 1000:.1f} ms")
        total = self.marks[-1][1] - self.marks[0][1] + max(before or 0.0, 0.0)
        return f"ready {total * 1000:.0f} ms after exec: " + ", ".join(parts)


def _seconds_since_exec() -> float | None:
    """Seconds since this process started (Linux: /proc, to the clock tick), else None."""
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22 of stat(5)
        return time.clock_gettime(time.CLOCK_BOOTTIME) - started
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def _first_os_error(e: BaseException) -> OSError | None:
    if isinstance(e, OSError):
        return e
    if isinstance(e, BaseExceptionGroup):
        for sub in e.exceptions:
            found = _first_os_error(sub)
            if found is not None:
                return found
    return None


# log4j's level names, as in Kafka's log4j configuration (Python's WARNING and CRITICAL are
# accepted too); TRACE is below DEBUG, as in minikafka.broker.handlers.loggers
LOG_LEVELS = {"TRACE": 5, "DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARN": logging.WARNING,
              "ERROR": logging.ERROR, "FATAL": logging.CRITICAL}
_PY_LEVELS = {"WARNING": logging.WARNING, "CRITICAL": logging.CRITICAL}


def parse_log_level(text: str, option: str = "--log-level") -> int:
    number = {**LOG_LEVELS, **_PY_LEVELS}.get(text.strip().upper())
    if number is None:
        raise ValueError(f"Invalid value {text} for {option}: String must be one of: {', '.join(LOG_LEVELS)}")
    return number


def configure_logging(level: str | None = None, config_file: str | None = None) -> None:
    """stderr logging at ``level`` (else $MINIKAFKA_LOG_LEVEL, else INFO), or ``config_file``.

    Raises ValueError, with a one-line message naming the option, for an unknown
    level or an unreadable or invalid file."""
    if config_file:
        from logging import config as logging_config
        if not os.path.isfile(config_file):
            raise ValueError(f"cannot read --log-config {config_file}: no such file")
        try:
            logging_config.fileConfig(config_file, disable_existing_loggers=False)
        except Exception as e:  # configparser, KeyError for a missing section, ...
            raise ValueError(f"invalid --log-config {config_file}: {type(e).__name__}: {e}") from None
        return
    if level is None:
        number = parse_log_level(os.environ.get("MINIKAFKA_LOG_LEVEL", "INFO"), "MINIKAFKA_LOG_LEVEL")
    else:
        number = parse_log_level(level)
    logging.addLevelName(LOG_LEVELS["TRACE"], "TRACE")
    logging.basicConfig(
        level=number,
        stream=sys.stderr,
        format="[%(asctime)s] %(levelname)s %(message)s (%(name)s)",
    )
