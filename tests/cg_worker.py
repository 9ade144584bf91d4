"""A confluent-kafka consumer-group member for the KIP-848 tests, run as a subprocess so a
test can end it cleanly (SIGTERM: it leaves the group) or crash it (SIGKILL).

    python tests/cg_worker.py BOOTSTRAP GROUP TOPIC [--eos OUT_TOPIC TXN_ID [--stall]] [--protocol consumer|classic]

Prints one JSON line per event, flushed: {"assigned": [partitions]} whenever its assignment
changes; in --eos mode, {"committed": n} after each committed transaction. --eos is
consume-transform-produce: one transaction per poll holds the outputs (value "out:<input
value>") and the consumer's offsets (send_offsets_to_transaction), read_committed input. --stall: the first
transaction with records produces its outputs and sends its offsets, then the worker prints
{"stalled": n} and waits to be killed, its transaction open (a member that dies mid-transaction).
"""
from __future__ import annotations

import json
import signal
import sys

from confluent_kafka import Consumer, KafkaException, Producer


def say(obj) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main(argv: list[str]) -> int:
    bootstrap, group, topic = argv[:3]
    eos = None
    protocol = "consumer"
    stall = False
    rest = argv[3:]
    while rest:
        if rest[0] == "--eos":
            eos, rest = (rest[1], rest[2]), rest[3:]
        elif rest[0] == "--stall":
            stall, rest = True, rest[1:]
        elif rest[0] == "--protocol":
            protocol, rest = rest[1], rest[2:]
        else:
            raise SystemExit(f"unknown option {rest[0]}")
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
            "enable.auto.commit": False, "isolation.level": "read_committed"}
    if protocol == "consumer":
        conf["group.protocol"] = "consumer"
    else:
        conf.update({"session.timeout.ms": 2000, "heartbeat.interval.ms": 300})
    consumer = Consumer(conf)
    producer = None
    if eos:
        # metadata.recovery.strategy=none works around a librdkafka bug (open upstream as
        # confluentinc/librdkafka#5511 and #5456, seen in 2.16): when the broker is killed, every
        # known broker is down and librdkafka re-bootstraps, decommissioning its broker handles,
        # but its coordinator cache keeps the old handle of the group coordinator. A
        # TxnOffsetCommit whose coordinator request starts after the last broker state change
        # then waits on that dead handle for ever (coordinator requests have no timeout), so
        # send_offsets_to_transaction(..., 30) never returns, this loop stops polling and the
        # consumer never completes the revocation or assignment the coordinator sent it. The
        # request is never sent, so no broker answer can help (Apache Kafka's neither); without
        # re-bootstrap (librdkafka >= 2.10, as the KIP-848 tests need) the old handles reconnect.
        producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": eos[1],
                             "transaction.timeout.ms": 10000, "metadata.recovery.strategy": "none"})
        producer.init_transactions(30)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    consumer.subscribe([topic])
    last = None
    committed = 0
    while not stop:
        msgs = consumer.consume(100, 0.2)
        now = sorted(p.partition for p in consumer.assignment())
        if now != last:
            say({"assigned": now})
            last = now
        msgs = [m for m in msgs if m.error() is None]
        if not msgs or producer is None:
            continue
        try:
            producer.begin_transaction()
            for m in msgs:
                producer.produce(eos[0], b"out:" + m.value(), key=m.key())
            producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                                 consumer.consumer_group_metadata(), 30)
            if stall:
                producer.flush(30)  # the outputs are in the log, the transaction open
                say({"stalled": len(msgs)})
                while True:
                    signal.pause()
            producer.commit_transaction(30)
            committed += len(msgs)
            say({"committed": committed})
        except KafkaException as e:
            # fenced by a rebalance (stale member epoch) or a retriable error: abort, start again
            # from the last committed offsets
            say({"error": str(e)})
            try:
                producer.abort_transaction(30)
            except KafkaException:
                pass
            for tp in consumer.committed(consumer.assignment(), 30):
                if tp.offset >= 0:
                    consumer.seek(tp)
                else:
                    tp.offset = -2  # OFFSET_BEGINNING
                    consumer.seek(tp)
    consumer.close()
    say({"closed": True})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
