"""Log compaction (the log cleaner) end to end: a compacted user topic shrinks to the
latest value per key, and a compacted __transaction_state still loads after a restart."""
from __future__ import annotations

from minikafka.coordinator.transaction.state import decode_key
from minikafka.storage.checkpoint import OffsetCheckpointFile
from minikafka.storage.cleaner import CLEANER_OFFSET_CHECKPOINT
from harness import wait_transaction_done, wait_until
from rawclient import RawClient, make_batch

CLEANER = {"log.cleaner.backoff.ms": 200}


def log_bytes(b, topic, partition) -> int:
    """The partition's segment bytes; a segment the cleaner deletes between the listing and its
    stat counts as gone (seen in CI: FileNotFoundError from the stat)."""
    total = 0
    for p in b.partition_dir(topic, partition).glob("*.log"):
        try:
            total += p.stat().st_size
        except FileNotFoundError:
            pass
    return total


def active_base(b, topic, partition) -> int:
    return max(int(p.stem) for p in b.partition_dir(topic, partition).glob("*.log"))


def cleaned_up_to(b, topic, partition) -> int | None:
    """The cleaner's checkpoint for the partition: where its dirty part starts."""
    path = b.partition_dir(topic, partition).parent / CLEANER_OFFSET_CHECKPOINT
    return OffsetCheckpointFile(str(path)).read().get((topic, partition)) if path.exists() else None


def records_of(bootstrap, topic, partition):
    with RawClient.to(bootstrap) as c:
        _, batches = c.fetch_all(topic, partition)
    return [(r.offset, r.key, r.value) for h, rs in batches if not h.is_control for r in rs]


def test_compacted_topic_keeps_latest_value_per_key(broker_factory, unique_topic):
    from kafka import KafkaConsumer, KafkaProducer

    b = broker_factory(overrides=CLEANER)
    topic = unique_topic("compacted")
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic(topic, 1, {"cleanup.policy": "compact", "segment.bytes": "4096",
                                         "min.cleanable.dirty.ratio": "0.01"}) == 0
        # a record without a key is refused on a compacted topic (Kafka: INVALID_RECORD)
        assert c.produce(topic, 0, make_batch([b"no key"])).error_code == 87
    keys = [b"key-%d" % k for k in range(8)]
    last = {}
    p = KafkaProducer(bootstrap_servers=b.bootstrap, batch_size=1024, linger_ms=1, acks="all")
    n = 1500
    for i in range(n):
        k = keys[i % len(keys)]
        v = b"value-%06d-" % i + b"x" * 40
        p.send(topic, key=k, value=v, partition=0)
        last[k] = v
    p.send(topic, key=keys[0], value=None, partition=0)   # a tombstone (kept: delete.retention.ms is a day)
    last[keys[0]] = None
    p.flush(30)
    p.close()
    # the keys and values sent: the log held at least this much before any cleaning (its size
    # right after the sends is no measure: rounds run while the records are still coming, and
    # the active segment, up to segment.bytes, is never cleaned)
    produced_bytes = sum(len(keys[i % len(keys)]) + len(b"value-%06d-" % i) + 40 for i in range(n))
    segments = len(list(b.partition_dir(topic, 0).glob("*.log")))
    assert segments > 5
    # the cleaner runs in the background: wait until the log has shrunk to a fraction
    wait_until(lambda: log_bytes(b, topic, 0) < produced_bytes / 4, 30,
               message=lambda: f"log still {log_bytes(b, topic, 0)} of {produced_bytes} bytes" + b.describe())
    # and it says so: the cleaner logs its round once the cleaned segments are in place, so a
    # loaded machine can show the shrink a moment before the line (seen under 4 xdist workers)
    wait_until(lambda: "Cleaned log " + topic in b.log_text(), 10,
               message=lambda: "the log shrank but the cleaner did not log its round" + b.describe())
    # a round can start while the records are still coming, and the next one cleans the rest:
    # the reads below must see one log, so wait until everything up to the active segment is
    # cleaned (seen under CI load: the consumer read between two rounds, the raw fetch after)
    wait_until(lambda: cleaned_up_to(b, topic, 0) == active_base(b, topic, 0), 30,
               message=lambda: f"cleaned up to {cleaned_up_to(b, topic, 0)}, active segment at "
                               f"{active_base(b, topic, 0)}" + b.describe())

    consumer = KafkaConsumer(topic, bootstrap_servers=b.bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=3000)
    seen = {}
    offsets = []
    end = n + 1
    try:
        for m in consumer:
            seen[m.key] = m.value
            offsets.append(m.offset)
            if m.offset >= end - 1:
                break
    finally:
        consumer.close()
    assert seen == last
    assert offsets == sorted(offsets) and offsets[-1] == end - 1
    assert len(offsets) < n / 4                      # most superseded records are gone
    # offsets and the log end offset are unchanged by cleaning
    got = records_of(b.bootstrap, topic, 0)
    assert [o for o, _, _ in got] == offsets
    with RawClient.to(b.bootstrap) as c:
        assert c.list_offset(topic, 0, -1) == end


def test_transaction_state_is_compacted_and_reloads(broker_factory, unique_topic):
    from kafka import KafkaProducer

    b = broker_factory(overrides={**CLEANER, "transaction.state.log.num.partitions": 1,
                                  "transaction.state.log.segment.bytes": 2048,
                                  "log.cleaner.min.cleanable.ratio": 0.01})
    topic = unique_topic("txn-data")
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic(topic, 1) == 0
    tids = [unique_topic("tid") for _ in range(2)]
    producers = [KafkaProducer(bootstrap_servers=b.bootstrap, transactional_id=t, linger_ms=1) for t in tids]
    for p in producers:
        p.init_transactions()
    txns = 40
    for t in range(txns):
        for i, p in enumerate(producers):
            p.begin_transaction()
            p.send(topic, key=b"k", value=b"%d-%d" % (i, t), partition=0)
            p.commit_transaction() if t % 5 else p.abort_transaction()
    ids = [(p._transaction_manager.producer_id_and_epoch.producer_id,
            p._transaction_manager.producer_id_and_epoch.epoch) for p in producers]
    for p in producers:
        p.close()
    for tid in tids:  # the last markers follow the EndTxn answer
        wait_transaction_done(b.bootstrap, tid)

    state_topic = "__transaction_state"
    with RawClient.to(b.bootstrap) as c:
        written = c.list_offset(state_topic, 0, -1)      # every state transition is one record
    assert written >= txns * 2 * 2

    def compacted():
        return len(records_of(b.bootstrap, state_topic, 0)) < written / 4
    wait_until(compacted, 30, message=lambda: "__transaction_state was not compacted" + b.describe())
    survivors = records_of(b.bootstrap, state_topic, 0)
    assert {decode_key(k) for _, k, _ in survivors} == set(tids)

    # the coordinator rebuilds its state from the compacted log after a restart (and a crash)
    for kill in (False, True):
        b.restart(kill=kill)
        with RawClient.to(b.bootstrap) as c:
            states = c.request(65, 0, {"transactional_ids": tids}).transaction_states
        for s, (pid, epoch) in zip(states, ids):
            assert s.error_code == 0 and s.transaction_state == "CompleteCommit", s
            assert (s.producer_id, s.producer_epoch) == (pid, epoch), s
    # a new producer instance with the same id fences the old epoch and keeps working
    p = KafkaProducer(bootstrap_servers=b.bootstrap, transactional_id=tids[0], linger_ms=1)
    p.init_transactions()
    pe = p._transaction_manager.producer_id_and_epoch
    assert (pe.producer_id, pe.epoch) == (ids[0][0], ids[0][1] + 1)
    p.begin_transaction()
    p.send(topic, key=b"k", value=b"after-restart", partition=0)
    p.commit_transaction()
    p.close()
    assert records_of(b.bootstrap, topic, 0)[-1][2] == b"after-restart"


def test_consumer_offsets_compacted_and_reloaded(broker_factory, unique_topic):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    b = broker_factory(overrides={**CLEANER, "offsets.topic.num.partitions": 1,
                                  "offsets.topic.segment.bytes": 1024,
                                  "log.cleaner.min.cleanable.ratio": 0.01})
    topic = unique_topic("offsets")
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic(topic, 2) == 0
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    plain, txg = unique_topic("plain-group"), unique_topic("txn-group")
    consumer = KafkaConsumer(bootstrap_servers=b.bootstrap, group_id=plain, enable_auto_commit=False)
    for i in range(1, 121):
        consumer.commit({tp0: OffsetAndMetadata(i, "", -1), tp1: OffsetAndMetadata(1000 + i, "", -1)})
    consumer.close()
    # transactional offset commits, every third one aborted
    p = KafkaProducer(bootstrap_servers=b.bootstrap, transactional_id=unique_topic("tid"), linger_ms=1)
    p.init_transactions()
    committed = None
    for t in range(1, 31):
        p.begin_transaction()
        p.send(topic, key=b"k", value=b"v%d" % t, partition=0)
        p.send_offsets_to_transaction({tp0: OffsetAndMetadata(t * 10, "", -1)}, txg)
        if t % 3 == 0:
            p.abort_transaction()
        else:
            p.commit_transaction()
            committed = t * 10
    p.close()

    with RawClient.to(b.bootstrap) as c:
        written = c.list_offset("__consumer_offsets", 0, -1)
    wait_until(lambda: len(records_of(b.bootstrap, "__consumer_offsets", 0)) < written / 4, 30,
               message=lambda: "__consumer_offsets was not compacted" + b.describe())

    def check():
        for group, want in ((plain, {tp0: 120, tp1: 1120}), (txg, {tp0: committed})):
            c = KafkaConsumer(bootstrap_servers=b.bootstrap, group_id=group, enable_auto_commit=False)
            try:
                got = {tp: c.committed(tp) for tp in want}
            finally:
                c.close()
            assert got == want, (group, got)
    check()
    b.restart(kill=True)
    check()
