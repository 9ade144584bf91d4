"""Create the shop's topics (purchases, invoices, shipments) and exit.

    python -m examples.shop.topics [--partitions 3]
"""
from __future__ import annotations

import argparse

from .model import INVOICES, PURCHASES, SHIPMENTS, default_bootstrap, ensure_topics


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m examples.shop.topics", description=__doc__.split("\n\n")[0])
    p.add_argument("--bootstrap", default=default_bootstrap())
    p.add_argument("--partitions", type=int, default=3)
    p.add_argument("--wait", type=float, default=60, help="seconds to wait for the broker")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    topics = {t: args.partitions for t in (PURCHASES, INVOICES, SHIPMENTS)}
    ensure_topics(args.bootstrap, topics, timeout_s=args.wait)
    print(f"topics ready on {args.bootstrap}: {', '.join(topics)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
