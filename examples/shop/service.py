"""The shop service: purchases -> invoices + shipments, exactly once (kafka-python).

A transactional consume-transform-produce loop, as in seed 004:

* a consumer in group ``shop-service`` reads ``purchases`` with
  ``isolation_level=read_committed`` and auto-commit off;
* for each polled batch, one transaction holds the invoices, the shipments and
  the consumer's next offsets (``send_offsets_to_transaction`` with the
  consumer's group metadata, so the group coordinator can fence a stale
  member: KIP-447);
* ``transactional.id`` is stable per instance (``shop-service-<instance>``):
  a restarted instance's ``init_transactions`` fences its killed predecessor
  (zombie) and aborts whatever it left open, and the restarted consumer
  resumes from the last committed offsets.  SIGKILL at any point loses and
  duplicates nothing;
* the consumer uses static membership (``group.instance.id`` =
  ``shop-service-<instance>``), so a restarted instance takes its
  predecessor's place at once instead of waiting for its session to expire.

Transient errors (broker restart, coordinator moves) abort the transaction,
rewind the consumer to the start of the batch and carry on; fatal ones
(fenced, unrecoverable producer state) rebuild the producer and the consumer.

    python -m examples.shop.service [--bootstrap H:P] [--instance 0] [--create-topics]
"""
from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import time

from .txn import StuckClientError, bounded
from .model import (INVOICES, PURCHASES, SHIPMENTS, Purchase, default_bootstrap, dumps,
                    ensure_topics, invoice_for, shipment_for)

log = logging.getLogger("shop.service")


def _fenced_errors() -> tuple[type, ...]:
    from kafka import errors
    names = ("ProducerFencedError", "FencedInstanceIdError")
    return tuple(getattr(errors, n) for n in names if hasattr(errors, n))


FENCED = _fenced_errors()


class Service:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.instance_name = f"shop-service-{args.instance}"
        self.running = True
        self.producer = None
        self.consumer = None
        self.processed = 0       # purchases in committed transactions (this process)
        self.transactions = 0

    # -- clients -----------------------------------------------------------------
    def _open(self) -> None:
        from kafka import KafkaConsumer, KafkaProducer
        a = self.args
        bootstrap = a.bootstrap.split(",")
        # The producer first: init_transactions fences a zombie and aborts its
        # open transaction, including its pending offset commit, before our
        # consumer asks for the committed offsets.
        self.producer = KafkaProducer(
            bootstrap_servers=bootstrap, client_id=f"{self.instance_name}-producer",
            transactional_id=self.instance_name, enable_idempotence=True, acks="all",
            transaction_timeout_ms=a.transaction_timeout_ms, linger_ms=5,
            request_timeout_ms=30_000, max_block_ms=120_000)
        self.producer.init_transactions()
        self.consumer = KafkaConsumer(
            bootstrap_servers=bootstrap, client_id=f"{self.instance_name}-consumer",
            group_id=a.group, group_instance_id=None if a.dynamic_membership else self.instance_name,
            enable_auto_commit=False, isolation_level="read_committed",
            auto_offset_reset="earliest", max_poll_records=a.max_poll_records,
            session_timeout_ms=a.session_timeout_ms, heartbeat_interval_ms=1_000,
            max_poll_interval_ms=60_000, request_timeout_ms=30_000)
        self.consumer.subscribe([a.purchases])
        # A blocking metadata refresh before the first poll, so that the member's first
        # assignment (as the group's leader) already sees every partition: kafka-python 3.0.12
        # can lose a rejoin that only a later metadata change asks for, and its member then
        # stops heartbeating for good (the JoinGroup/SyncGroup outlives the poll that started it)
        self.consumer.topics()
        log.info("%s: transactional producer ready, consumer subscribed to %s (group %s)",
                 self.instance_name, a.purchases, a.group)

    def _close(self, abandon: bool = False) -> None:
        """Close both clients; ``abandon``: the producer is wedged, close it in
        the background (its successor fences it anyway)."""
        producer, consumer = self.producer, self.consumer
        self.consumer = self.producer = None
        if consumer is not None:
            try:
                consumer.close(autocommit=False)
            except Exception as exc:  # closing a broken client: log and move on
                log.debug("consumer close: %r", exc)
        if producer is not None:
            def close_producer() -> None:
                try:
                    producer.close(timeout=0 if abandon else 2)
                except Exception as exc:
                    log.debug("producer close: %r", exc)
            if abandon:
                threading.Thread(target=close_producer, daemon=True).start()
            else:
                close_producer()

    # -- the loop ---------------------------------------------------------------
    def run(self) -> int:
        from kafka.errors import KafkaError
        while self.running:
            try:
                self._open()
                while self.running:
                    self._step()
            except FENCED as exc:
                # Another instance with our transactional.id / group.instance.id
                # is live: we are the zombie.  Re-initialising would fence it in
                # turn, so stop instead.
                log.error("%s: fenced by a newer instance (%r): exiting", self.instance_name, exc)
                self._close()
                return 3
            except (KafkaError, StuckClientError) as exc:
                if not self.running:
                    break
                log.warning("%s: client error %r: rebuilding producer and consumer",
                            self.instance_name, exc)
                self._close(abandon=isinstance(exc, StuckClientError))
                time.sleep(1)
        self._close()
        log.info("%s: stopped after %d purchases in %d transactions",
                 self.instance_name, self.processed, self.transactions)
        return 0

    def _step(self) -> None:
        from kafka import OffsetAndMetadata
        from kafka.errors import KafkaError

        batch = self.consumer.poll(timeout_ms=500)
        if not batch:
            return
        a = self.args
        p = self.producer
        p.begin_transaction()
        try:
            offsets = {}
            n = 0
            for tp, records in batch.items():
                for rec in records:
                    purchase = Purchase.from_json(rec.value)
                    p.send(a.invoices, key=rec.key, value=dumps(invoice_for(purchase)))
                    p.send(a.shipments, key=rec.key, value=dumps(shipment_for(purchase)))
                    n += 1
                offsets[tp] = OffsetAndMetadata(records[-1].offset + 1, "", -1)
            if a.work_ms:  # simulated processing time (demos and tests)
                time.sleep(a.work_ms / 1000)
            bounded(p, "send_offsets_to_transaction", a.txn_call_timeout_s, offsets,
                    self.consumer.group_metadata())
            bounded(p, "commit_transaction", a.txn_call_timeout_s)
        except FENCED:
            raise
        except KafkaError as exc:
            log.warning("%s: transaction failed (%r): aborting and re-reading the batch",
                        self.instance_name, exc)
            bounded(p, "abort_transaction", a.txn_call_timeout_s)  # if this fails too,
            # run() rebuilds both clients
            for tp, records in batch.items():
                try:
                    self.consumer.seek(tp, records[0].offset)
                except (AssertionError, KafkaError):  # no longer assigned after a rebalance
                    pass
            return
        self.processed += n
        self.transactions += 1
        if a.verbose:
            log.info("%s: committed %d purchases (total %d)", self.instance_name, n,
                     self.processed)

    def stop(self, *_: object) -> None:
        self.running = False


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m examples.shop.service",
                                description="purchases -> invoices + shipments, exactly once")
    p.add_argument("--bootstrap", default=default_bootstrap())
    p.add_argument("--instance", default="0", help="stable instance name (transactional.id suffix)")
    p.add_argument("--group", default="shop-service")
    p.add_argument("--purchases", default=PURCHASES)
    p.add_argument("--invoices", default=INVOICES)
    p.add_argument("--shipments", default=SHIPMENTS)
    p.add_argument("--partitions", type=int, default=3, help="for --create-topics")
    p.add_argument("--create-topics", action="store_true", help="create the three topics if missing")
    p.add_argument("--max-poll-records", type=int, default=200)
    p.add_argument("--session-timeout-ms", type=int, default=10_000)
    p.add_argument("--transaction-timeout-ms", type=int, default=60_000)
    p.add_argument("--dynamic-membership", action="store_true",
                   help="no group.instance.id (a restart then waits for the old session to expire)")
    p.add_argument("--txn-call-timeout-s", type=float, default=30.0,
                   help="deadline for send_offsets/commit/abort before the clients are rebuilt")
    p.add_argument("--work-ms", type=int, default=0,
                   help="simulated processing time per polled batch, inside the transaction")
    p.add_argument("--kafka-log-level", default=os.environ.get("SHOP_KAFKA_LOG_LEVEL", "WARNING"),
                   help="kafka-python's log level (env SHOP_KAFKA_LOG_LEVEL)")
    p.add_argument("-v", "--verbose", action="store_true")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="[%(asctime)s] %(levelname)s %(message)s (%(name)s)")
    logging.getLogger("kafka").setLevel(args.kafka_log_level.upper())
    if args.create_topics:
        ensure_topics(args.bootstrap, {args.purchases: args.partitions,
                                       args.invoices: args.partitions,
                                       args.shipments: args.partitions})
    svc = Service(args)
    signal.signal(signal.SIGTERM, svc.stop)
    signal.signal(signal.SIGINT, svc.stop)
    print(f"shop service {svc.instance_name} starting on {args.bootstrap}", flush=True)
    return svc.run()


if __name__ == "__main__":
    raise SystemExit(main())
