"""Exactly once across a broker crash: a consume-transform-produce service, tested with
minikafka's pytest fixture.

    pip install minikafka confluent-kafka pytest
    pytest examples/test_exactly_once.py

The service reads ``orders`` (read_committed) and writes one invoice per order to
``invoices``; the invoices of one poll and the consumer's offsets after those orders commit
in one transaction. The test lets it commit a few polls, then crashes the broker in the
middle of the next commit, right after the commit decision is durable (the fixture's
``fault("txn.after_prepare")``), restarts the broker, lets the service finish and reads the
topics back with ``records()``: every order has exactly one invoice.

``--minikafka-bootstrap=HOST:PORT`` runs it against a Kafka cluster instead; it then skips
at the crash, which only minikafka can do.
"""
from __future__ import annotations

import threading
import time
import uuid
from collections import Counter

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

PARTITIONS = 3
ORDERS = 300
CLIENT = {
    # reconnect within a second of the broker coming back (librdkafka's default backs off to 10 s)
    "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 1000,
    # With its only broker down, librdkafka (2.x) forgets the brokers it knows and bootstraps
    # again; a producer whose cached group coordinator was forgotten so then waits forever in
    # send_offsets_to_transaction (librdkafka issues 5511, 5456). Keep the brokers instead.
    "metadata.recovery.strategy": "none",
}


def invoice_for(order: bytes) -> bytes:
    return b"invoice for " + order


class InvoiceService:
    """One instance of the service. A restarted instance uses the same transactional id: its
    ``init_transactions`` fences the previous one and settles its last transaction, and its
    consumer resumes from the offsets committed with the last committed invoices."""

    def __init__(self, bootstrap: str, orders: str, invoices: str, group: str, transactional_id: str):
        self.invoices = invoices
        self.partitions = [TopicPartition(orders, p) for p in range(PARTITIONS)]
        self.consumer = Consumer({**CLIENT, "bootstrap.servers": bootstrap, "group.id": group,
                                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                                  "isolation.level": "read_committed"})
        self.consumer.assign(self.partitions)  # from the group's committed offsets
        self.producer = Producer({**CLIENT, "bootstrap.servers": bootstrap,
                                  "transactional.id": transactional_id})
        self.producer.init_transactions(60)

    def step(self) -> int:
        """One poll, one transaction; returns the number of orders it invoiced."""
        messages = self.consumer.consume(num_messages=20, timeout=0.5)
        for m in messages:
            if m.error():
                raise KafkaException(m.error())
        if not messages:
            return 0
        self.producer.begin_transaction()
        for m in messages:
            self.producer.produce(self.invoices, key=m.key(), value=invoice_for(m.value()))
        self.producer.send_offsets_to_transaction(self.consumer.position(self.partitions),
                                                  self.consumer.consumer_group_metadata(), 60)
        while True:
            try:
                self.producer.commit_transaction(60)
                return len(messages)
            except KafkaException as e:
                if not e.args[0].retriable():  # abortable or fatal: this instance is done
                    raise
                # retriable (the broker went away mid-commit): commit again, as librdkafka asks

    def committed(self) -> int:
        """Orders consumed by committed transactions (offsets count from 0 here)."""
        return sum(max(tp.offset, 0) for tp in self.consumer.committed(self.partitions, timeout=30))

    def close(self) -> None:
        self.consumer.close()
        self.producer.flush(0)


def run_service(make, until_committed: int, deadline_s: float = 120) -> list[str]:
    """Run instances of the service until ``until_committed`` orders are committed; an
    instance that fails is replaced by a new one. Returns the failures seen."""
    failures: list[str] = []
    service = make()
    deadline = time.monotonic() + deadline_s
    try:
        while service.committed() < until_committed:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{service.committed()} of {until_committed} orders committed")
            try:
                service.step()
            except KafkaException as e:
                failures.append(str(e))
                service.close()
                service = make()
    finally:
        service.close()
    return failures


def test_every_order_invoiced_exactly_once_across_a_broker_crash(minikafka_broker):
    bootstrap = minikafka_broker.bootstrap
    run = uuid.uuid4().hex[:8]  # unique names: the same test may run against a shared cluster
    orders, invoices = f"orders-{run}", f"invoices-{run}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(t, PARTITIONS, 1) for t in (orders, invoices)]).values():
        future.result(30)

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for i in range(ORDERS):
        producer.produce(orders, key=b"customer-%d" % (i % 7), value=b"order-%04d" % i)
    assert producer.flush(30) == 0

    def make_service():
        return InvoiceService(bootstrap, orders, invoices, group=f"invoicing-{run}",
                              transactional_id=f"invoicing-{run}")

    service = make_service()
    try:
        done = 0
        while done < 60:  # a few committed polls before the crash
            done += service.step()
    finally:
        service.close()

    # the next commit crashes the broker once PrepareCommit is durable; the service keeps
    # running (in a thread, as it would in its own process) while the broker is down
    minikafka_broker.fault("txn.after_prepare")
    outcome: dict = {}

    def service_thread():
        try:
            outcome["failures"] = run_service(make_service, until_committed=ORDERS)
        except BaseException as e:  # reported by the test below
            outcome["error"] = e

    worker = threading.Thread(target=service_thread, daemon=True)
    worker.start()
    minikafka_broker.wait_exit(60)  # the crash, mid-commit
    minikafka_broker.restart()      # the same data: the coordinator completes the commit
    worker.join(180)
    assert not worker.is_alive(), "the service did not finish"
    assert "error" not in outcome, outcome["error"]

    committed = minikafka_broker.records(invoices)  # read_committed
    expected = Counter(invoice_for(b"order-%04d" % i) for i in range(ORDERS))
    got = Counter(r.value for r in committed)
    assert got == expected, (f"missing: {sorted(expected - got)[:5]}, duplicated: {sorted(got - expected)[:5]}"
                             f" (service failures: {outcome['failures']})")
    assert len(minikafka_broker.records(orders)) == ORDERS
