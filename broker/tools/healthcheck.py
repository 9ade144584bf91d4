"""`minikafka healthcheck`: exit 0 if the broker answers ApiVersions, 1 otherwise (Docker HEALTHCHECK)."""
from __future__ import annotations

import argparse
import sys

from .wire import WireClient


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="minikafka healthcheck")
    parser.add_argument("--bootstrap-server", default="127.0.0.1:9092")
    parser.add_argument("--timeout", type=float, default=5.0)
    args = parser.parse_args(argv)
    try:
        with WireClient.to(args.bootstrap_server, timeout=args.timeout) as c:
            resp = c.request(18, 3, {"client_software_name": "minikafka-healthcheck", "client_software_version": "1"})
    except (OSError, ConnectionError) as e:
        print(f"unhealthy: {args.bootstrap_server}: {e}", file=sys.stderr)
        return 1
    if resp.error_code != 0:
        print(f"unhealthy: ApiVersions error {resp.error_code}", file=sys.stderr)
        return 1
    print(f"healthy: {args.bootstrap_server} serves {len(resp.api_keys)} APIs")
    return 0
