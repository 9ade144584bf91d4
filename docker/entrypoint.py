#!/usr/bin/env python3
"""Container entrypoint: environment in the Apache Kafka image's convention -> broker flags.

Every ``KAFKA_*`` variable becomes a broker property, as the apache/kafka image
does it: drop the ``KAFKA_`` prefix, lower-case, then ``___`` -> ``-``,
``__`` -> ``_``, ``_`` -> ``.``::

    KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://broker:9092  ->  advertised.listeners=PLAINTEXT://broker:9092
    KAFKA_NUM_PARTITIONS=3                               ->  num.partitions=3
    KAFKA_LOG_RETENTION_MS=60000                         ->  log.retention.ms=60000

The image's JVM/tooling variables (``KAFKA_HEAP_OPTS``, ``KAFKA_OPTS``,
``KAFKA_LOG4J_*``, ...) are not properties and are ignored, as there.
Container defaults (each overridable by its variable): ``listeners``
``PLAINTEXT://0.0.0.0:9092``, ``advertised.listeners``
``PLAINTEXT://<hostname>:9092``, ``log.dirs`` ``/var/lib/minikafka/data``.

``docker run IMAGE`` starts the broker; ``docker run IMAGE --override k=v``
adds flags; ``entrypoint.py healthcheck`` (the image's HEALTHCHECK) runs
``minikafka healthcheck`` with the same configuration, so it probes the
listeners this broker is configured with and checks that the broker answering
there is this one; any other command (``minikafka dump-log``, ``sh``) runs
instead of the broker.

Under host networking (``network_mode: host``) set ``KAFKA_LISTENERS`` to a
loopback address: the default ``0.0.0.0`` binds every interface of the host.
"""
from __future__ import annotations

import os
import socket
import sys

PREFIX = "KAFKA_"
# Variables of the Apache Kafka image that configure the JVM or its scripts,
# not the broker: never turned into properties.
NOT_PROPERTIES = {
    "KAFKA_VERSION", "KAFKA_HOME", "KAFKA_HEAP_OPTS", "KAFKA_OPTS", "KAFKA_JVM_PERFORMANCE_OPTS",
    "KAFKA_GC_LOG_OPTS", "KAFKA_JMX_OPTS", "KAFKA_JMX_PORT", "KAFKA_JMX_HOSTNAME",
    "KAFKA_LOG4J_OPTS", "KAFKA_LOG4J_ROOT_LOGLEVEL", "KAFKA_LOG4J_LOGGERS",
    "KAFKA_TOOLS_LOG4J_LOGLEVEL", "KAFKA_DEBUG", "KAFKA_CLASSPATH",
}
DATA_DIR = "/var/lib/minikafka/data"
PORT = 9092


def env_to_property(name: str) -> str | None:
    """``KAFKA_ADVERTISED_LISTENERS`` -> ``advertised.listeners``; None if not a property."""
    if not name.startswith(PREFIX) or name in NOT_PROPERTIES or len(name) == len(PREFIX):
        return None
    key = name[len(PREFIX):].lower()
    # As the image's script (sed 's/___/-/g; s/__/@/g; s/_/./g; s/@/_/g'):
    # longest runs first, with a placeholder so `__` does not become `.`.
    return (key.replace("___", "-").replace("__", "\0").replace("_", ".")
            .replace("\0", "_"))


def properties_from_env(environ: dict[str, str]) -> dict[str, str]:
    props = {}
    for name in sorted(environ):
        key = env_to_property(name)
        if key is not None:
            props[key] = environ[name]
    return props


def config_flags(environ: dict[str, str], hostname: str | None = None) -> list[str]:
    """The broker's configuration as ``--config``/``--override`` flags."""
    props = {"listeners": f"PLAINTEXT://0.0.0.0:{PORT}",
             "advertised.listeners": f"PLAINTEXT://{hostname or socket.gethostname()}:{PORT}",
             "log.dirs": DATA_DIR}
    props.update(properties_from_env(environ))
    flags = []
    config = environ.get("MINIKAFKA_CONFIG")
    if config:
        flags += ["--config", config]
    for k, v in props.items():
        flags += ["--override", f"{k}={v}"]
    return flags


def broker_command(environ: dict[str, str], args: list[str], hostname: str | None = None,
                   python: str = sys.executable) -> list[str]:
    return [python, "-m", "broker", *config_flags(environ, hostname), *args]


def command(environ: dict[str, str], argv: list[str], hostname: str | None = None,
            python: str = sys.executable) -> list[str]:
    """What to exec for ``docker run IMAGE argv...``."""
    if not argv or argv[0].startswith("-"):
        return broker_command(environ, argv, hostname, python)
    if argv[0] == "healthcheck":  # this broker's health, by the same configuration
        return [python, "-m", "broker", "healthcheck", *config_flags(environ, hostname),
                *argv[1:]]
    return list(argv)  # another command (e.g. `minikafka dump-log`, `sh`)


def main() -> None:
    cmd = command(dict(os.environ), sys.argv[1:])
    if cmd[:3] == [sys.executable, "-m", "broker"] and cmd[3:4] != ["healthcheck"]:
        shown = " ".join(a for a in cmd[3:])
        print(f"minikafka entrypoint: broker {shown}", file=sys.stderr, flush=True)
    os.execvp(cmd[0], cmd)  # the broker becomes PID 1's process: signals reach it


if __name__ == "__main__":
    main()
