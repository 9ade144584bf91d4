"""`minikafka healthcheck`: exit 0 if the broker answers, 1 otherwise (Docker HEALTHCHECK).

    minikafka healthcheck --bootstrap-server HOST:PORT          # any broker answering ApiVersions
    minikafka healthcheck [--config FILE] --override k=v ...    # *this* broker, by its configuration

With a configuration (the broker's own ``--config``/``--override`` flags, as
``docker/entrypoint.py healthcheck`` passes them) every listener in
``listeners`` is probed (``0.0.0.0``/empty host -> 127.0.0.1, ``::`` -> ::1)
and must answer ApiVersions and Metadata with the cluster id stored in this
broker's ``log.dirs`` (``meta.properties``). So a container whose broker has
not started, or could not bind because some other broker holds the port (with
host networking, say), is unhealthy even though *a* broker answers there.
"""
from __future__ import annotations

import argparse
import os
import sys

from .wire import WireClient

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"


def probe(address: str, timeout: float) -> tuple[int, str | None]:
    """(number of APIs served, cluster id) of the broker at ``address``."""
    with WireClient.to(address, timeout=timeout, client_id="minikafka-healthcheck") as c:
        resp = c.request(18, 3, {"client_software_name": "minikafka-healthcheck",
                                 "client_software_version": "1"})
        if resp.error_code != 0:
            raise ConnectionError(f"ApiVersions error {resp.error_code}")
        meta = c.request(3, 12, {"topics": [], "allow_auto_topic_creation": False,
                                 "include_topic_authorized_operations": False})
        return len(resp.api_keys), meta.cluster_id


def _probe_address(host: str, port: int) -> str:
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def own_cluster_id(log_dirs: list[str]) -> str | None:
    from minikafka.broker.config import read_properties, ConfigError
    for d in log_dirs:
        path = os.path.join(d, "meta.properties")
        if os.path.exists(path):
            try:
                return read_properties(path).get("cluster.id")
            except ConfigError:
                return None
    return None


def check_own_listeners(config, timeout: float) -> tuple[bool, str]:
    ours = own_cluster_id(config["log.dirs"])
    if ours is None:
        return False, f"no cluster.id in {', '.join(config['log.dirs'])}/meta.properties yet"
    served = []
    for listener in config.listeners:
        name, host, port = listener.name, listener.host, listener.port
        if listener.protocol != "PLAINTEXT":
            continue  # the probe speaks plain Kafka protocol, without TLS or SASL
        if port == 0:
            continue  # an ephemeral port cannot be found from outside the broker
        address = _probe_address(host, port)
        try:
            apis, cluster = probe(address, timeout)
        except (OSError, ConnectionError, AssertionError) as e:
            return False, f"{name} {address}: {e}"
        if cluster != ours:
            return False, (f"{name} {address} is served by another broker (cluster {cluster},"
                           f" ours is {ours})")
        served.append(f"{name} {address}")
    if not served:
        return False, "no PLAINTEXT listener with a fixed port to probe"
    return True, f"{', '.join(served)} serve cluster {ours} ({apis} APIs)"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="minikafka healthcheck",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap-server",
                        help=f"probe any broker there (default {DEFAULT_BOOTSTRAP} when no"
                             " configuration is given)")
    parser.add_argument("--config", help="this broker's properties file")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="this broker's property overrides; repeatable")
    parser.add_argument("--timeout", type=float, default=5.0)
    args = parser.parse_args(argv)
    if args.bootstrap_server or not (args.config or args.override):
        address = args.bootstrap_server or DEFAULT_BOOTSTRAP
        try:
            apis, _ = probe(address, args.timeout)
        except (OSError, ConnectionError, AssertionError) as e:
            print(f"unhealthy: {address}: {e}", file=sys.stderr)
            return 1
        print(f"healthy: {address} serves {apis} APIs")
        return 0
    from minikafka.broker.config import BrokerConfig, ConfigError
    try:
        config = BrokerConfig.load(args.config, args.override)
    except ConfigError as e:
        print(f"unhealthy: configuration error: {e}", file=sys.stderr)
        return 1
    ok, detail = check_own_listeners(config, args.timeout)
    print(f"{'healthy' if ok else 'unhealthy'}: {detail}", file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 1
