"""Purchase generator: writes purchases ``p-0000000`` .. ``p-<count-1>``, exactly once.

Purchase number ``i`` is deterministic (:meth:`Purchase.generate`), and the
generator is restartable: on start (and after any error) it reads the topic
read_committed, skips the purchase ids already there, and writes the rest in
transactions of ``--txn-size``.  A transaction is either wholly in the topic or
not at all, so a crash (or a broker restart) at any point neither loses nor
duplicates a purchase.

    python -m examples.shop.purchases --count 10000 [--rate 500] [--start 0]
"""
from __future__ import annotations

import argparse
import logging
import sys
import threading
import time

from .model import PURCHASES, Purchase, default_bootstrap, ensure_topics, purchase_id
from .reading import read_topic
from .txn import StuckClientError, bounded

log = logging.getLogger("shop.purchases")


def existing_ids(bootstrap: str, topic: str) -> set[str]:
    return {r.key.decode() for r in read_topic(bootstrap, topic, client_id="shop-purchases-scan")
            if r.key is not None}


def _close_quietly(producer) -> None:
    try:
        producer.close(timeout=0)
    except Exception:
        pass


def generate(args: argparse.Namespace) -> int:
    from kafka import KafkaProducer
    from kafka.errors import KafkaError

    wanted = [purchase_id(i) for i in range(args.start, args.start + args.count)]
    attempts = 0
    while True:
        attempts += 1
        producer = None
        try:
            producer = KafkaProducer(
                bootstrap_servers=args.bootstrap.split(","), client_id="shop-purchases",
                transactional_id=args.transactional_id, enable_idempotence=True, acks="all",
                linger_ms=5, max_block_ms=120_000)
            # init first: it settles our previous incarnation's last transaction,
            # so the scan below sees its final outcome.
            producer.init_transactions()
            have = existing_ids(args.bootstrap, args.topic)
            todo = [i for i, pid in zip(range(args.start, args.start + args.count), wanted)
                    if pid not in have]
            print(f"purchases: {len(have)} already in {args.topic!r}, writing {len(todo)}",
                  flush=True)
            t0 = time.monotonic()
            done = 0
            for k in range(0, len(todo), args.txn_size):
                chunk = todo[k:k + args.txn_size]
                producer.begin_transaction()
                for i in chunk:
                    p = Purchase.generate(i, seed=args.seed)
                    producer.send(args.topic, key=p.key, value=p.to_json())
                bounded(producer, "commit_transaction", args.txn_call_timeout_s)
                done += len(chunk)
                if args.rate > 0:  # pace: done purchases should take done/rate seconds
                    ahead = done / args.rate - (time.monotonic() - t0)
                    if ahead > 0:
                        time.sleep(ahead)
            producer.close(timeout=5)
            print(f"purchases: done ({done} written)", flush=True)
            return 0
        except (KafkaError, StuckClientError) as exc:
            log.warning("purchases: %r; re-scanning and resuming", exc)
            if producer is not None:
                threading.Thread(target=_close_quietly, args=(producer,), daemon=True).start()
            if attempts >= args.max_attempts:
                log.error("purchases: giving up after %d attempts", attempts)
                return 1
            time.sleep(1)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m examples.shop.purchases", description=__doc__.split("\n\n")[0])
    p.add_argument("--bootstrap", default=default_bootstrap())
    p.add_argument("--topic", default=PURCHASES)
    p.add_argument("--count", type=int, default=1000)
    p.add_argument("--start", type=int, default=0, help="first purchase number")
    p.add_argument("--rate", type=float, default=0, help="purchases per second (0: as fast as possible)")
    p.add_argument("--txn-size", type=int, default=100)
    p.add_argument("--seed", type=int, default=4)
    p.add_argument("--partitions", type=int, default=3, help="if the topic must be created")
    p.add_argument("--transactional-id", default="shop-purchases")
    p.add_argument("--txn-call-timeout-s", type=float, default=30.0,
                   help="deadline for commit before the producer is rebuilt")
    p.add_argument("--max-attempts", type=int, default=20)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="[%(asctime)s] %(levelname)s %(message)s (%(name)s)")
    logging.getLogger("kafka").setLevel(logging.WARNING)
    ensure_topics(args.bootstrap, {args.topic: args.partitions})
    return generate(args)


if __name__ == "__main__":
    raise SystemExit(main())
