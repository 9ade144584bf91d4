"""Issue 8, acceptance 2: kafka-python's KafkaAdminClient transaction methods
(KIP-664: list_transactions, describe_transactions, describe_producers,
abort_transaction) against the broker, including the admin abort's checks:
exact producer epoch (INVALID_PRODUCER_EPOCH) and an open transaction
(INVALID_TXN_STATE)."""
from __future__ import annotations

import pytest

from harness import wait_transaction_done, wait_until
from rawclient import RawClient, make_batch

TXN_TIMEOUT_MS = 60000


@pytest.fixture
def admin_factory():
    made = []

    def make(bootstrap: str):
        from kafka.admin import KafkaAdminClient
        a = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
        made.append(a)
        return a
    yield make
    for a in made:
        a.close()


def open_transaction(bootstrap: str, tid: str, topic: str, partitions: list[int], per: int = 3):
    """A kafka-python transactional producer that leaves its transaction open."""
    from kafka import KafkaProducer
    p = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid, linger_ms=2,
                      transaction_timeout_ms=TXN_TIMEOUT_MS)
    p.init_transactions()
    p.begin_transaction()
    for part in partitions:
        for i in range(per):
            p.send(topic, value=f"{tid}:{part}:{i}".encode(), partition=part)
    p.flush()
    return p


def test_list_describe_and_describe_producers(broker, unique_topic, admin_factory):
    from kafka import TopicPartition
    from kafka.admin import TransactionState
    import kafka.errors as Errors

    topic = unique_topic("adm")
    with RawClient.to(broker.bootstrap) as c:
        assert c.create_topic(topic, 3) == 0
    tid = f"{topic}-tid"
    producer = open_transaction(broker.bootstrap, tid, topic, [0, 1])
    try:
        admin = admin_factory(broker.bootstrap)

        listed = admin.list_transactions()
        assert list(listed) == [1], listed  # one broker, node id 1
        mine = [t for t in listed[1] if t.transactional_id == tid]
        assert len(mine) == 1 and mine[0].state == TransactionState.ONGOING
        pid = mine[0].producer_id
        assert [t.transactional_id for t in admin.list_transactions(producer_id_filters=[pid])[1]] == [tid]
        assert tid in {t.transactional_id for t in admin.list_transactions(state_filters=["Ongoing"])[1]}
        assert tid not in {t.transactional_id for t in admin.list_transactions(state_filters=["CompleteCommit"])[1]}
        assert tid in {t.transactional_id for t in admin.list_transactions(duration_filter_ms=0)[1]}
        assert tid not in {t.transactional_id for t in admin.list_transactions(duration_filter_ms=3_600_000)[1]}

        d = admin.describe_transactions([tid])[tid]
        assert d.coordinator_id == 1
        assert d.state == TransactionState.ONGOING
        assert d.producer_id == pid and d.producer_epoch >= 0
        assert d.transaction_timeout_ms == TXN_TIMEOUT_MS
        assert d.transaction_start_time_ms > 0
        assert d.topic_partitions == {TopicPartition(topic, 0), TopicPartition(topic, 1)}
        with pytest.raises(Errors.TransactionalIdNotFoundError):
            admin.describe_transactions([f"{tid}-unknown"])

        tps = [TopicPartition(topic, p) for p in range(3)]
        states = admin.describe_producers(tps)
        for part in (0, 1):
            active = states[TopicPartition(topic, part)].active_producers
            assert len(active) == 1, active
            a = active[0]
            assert (a.producer_id, a.producer_epoch) == (pid, d.producer_epoch)
            assert a.current_transaction_start_offset == 0
            assert a.last_sequence == 2  # three records, sequences 0..2
            assert a.last_timestamp > 0
        assert states[TopicPartition(topic, 2)].active_producers == []
        with pytest.raises(Errors.UnknownTopicOrPartitionError):
            admin.describe_producers([TopicPartition(topic, 7)], broker_id=1)

        producer.commit_transaction()
        wait_transaction_done(broker.bootstrap, tid)  # the markers follow the EndTxn answer
        d = admin.describe_transactions([tid])[tid]
        assert d.state == TransactionState.COMPLETE_COMMIT
        assert d.topic_partitions == set()  # as Kafka: no partitions once the markers are written
        for part in (0, 1):
            (a,) = admin.describe_producers([TopicPartition(topic, part)])[TopicPartition(topic, part)].active_producers
            assert a.current_transaction_start_offset == -1 and a.coordinator_epoch == 0
    finally:
        producer.close()


def test_abort_transaction_hanging(broker_factory, unique_topic, admin_factory):
    """abort_transaction ends a hanging transaction (coordinator epoch -1); wrong epoch or
    no open transaction are refused with Kafka's errors."""
    from kafka import TopicPartition
    from kafka.admin import AbortTransactionSpec
    import kafka.errors as Errors

    topic = unique_topic("adm-hang")
    b = broker_factory(env={"MINIKAFKA_FAULT_SKIP_MARKER": f"{topic}:0"})
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic(topic, 2) == 0
    tid = f"{topic}-tid"
    producer = open_transaction(b.bootstrap, tid, topic, [0, 1])
    producer.commit_transaction()  # partition 0 never gets its COMMIT marker
    producer.close()
    wait_transaction_done(b.bootstrap, tid)
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    admin = admin_factory(b.bootstrap)
    with RawClient.to(b.bootstrap) as c:
        assert c.list_offset(topic, 0, isolation=1) == 0
        assert c.list_offset(topic, 1, isolation=1) == 4  # 3 records + COMMIT

    (hung,) = admin.describe_producers([tp0])[tp0].active_producers
    assert hung.current_transaction_start_offset == 0
    d = admin.describe_transactions([tid])[tid]
    assert d.producer_id == hung.producer_id and tp0 not in d.topic_partitions

    with pytest.raises(Errors.InvalidProducerEpochError):
        admin.abort_transaction(AbortTransactionSpec(tp0, hung.producer_id, hung.producer_epoch + 1))
    with pytest.raises(Errors.InvalidTxnStateError):  # partition 1 has no open transaction
        admin.abort_transaction(AbortTransactionSpec(tp1, hung.producer_id, hung.producer_epoch))
    with pytest.raises(Errors.InvalidTxnStateError):  # unknown producer
        admin.abort_transaction(AbortTransactionSpec(tp0, hung.producer_id + 1000, 0))
    with RawClient.to(b.bootstrap) as c:
        assert c.list_offset(topic, 0) == 3, "refused aborts must write nothing"

    admin.abort_transaction(AbortTransactionSpec(tp0, hung.producer_id, hung.producer_epoch))
    with RawClient.to(b.bootstrap) as c:
        assert c.list_offset(topic, 0) == 4  # the ABORT marker
        assert c.list_offset(topic, 0, isolation=1) == 4
        _, batches = c.fetch_all(topic, 0)
        marker_header, (marker,) = batches[-1]
        assert marker_header.is_control and marker.key[2:4] == b"\x00\x00"  # ABORT
        assert marker.value[2:6] == b"\xff\xff\xff\xff"  # coordinator epoch -1: written by an administrator
        aborted = c.fetch(topic, 0, 0, isolation=1).aborted_transactions
        assert [(a.producer_id, a.first_offset) for a in aborted] == [(hung.producer_id, 0)]
    (after,) = admin.describe_producers([tp0])[tp0].active_producers
    assert after.current_transaction_start_offset == -1
    assert after.producer_epoch == hung.producer_epoch, "an admin abort never bumps the epoch"
    with pytest.raises(Errors.InvalidTxnStateError):  # nothing open any more
        admin.abort_transaction(AbortTransactionSpec(tp0, hung.producer_id, hung.producer_epoch))


def test_abort_hanging_transaction_after_earlier_markers(broker_factory, unique_topic, admin_factory):
    """The classic hang: a producer with committed transactions on the partition (its
    markers carried coordinator epoch 0) writes to it outside any coordinator-known
    transaction (partition verification off, as before KIP-890). The admin abort with
    coordinator epoch -1 must still be accepted (KIP-664: the coordinator-epoch fence
    does not apply to administrator markers)."""
    from kafka import TopicPartition
    from kafka.admin import AbortTransactionSpec

    topic = unique_topic("adm-late")
    b = broker_factory(overrides={"transaction.partition.verification.enable": False})
    tid = f"{topic}-tid"
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic(topic, 1) == 0
        c.request(10, 3, {"key": tid, "key_type": 1})
        init = c.init_producer_id(tid)
        assert init.error_code == 0
        pid, epoch = init.producer_id, init.producer_epoch
        add = c.request(24, 3, {"v3_and_below_transactional_id": tid, "v3_and_below_producer_id": pid,
                                "v3_and_below_producer_epoch": epoch,
                                "v3_and_below_topics": [{"name": topic, "partitions": [0]}]})
        assert add.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0
        assert c.produce(topic, 0, make_batch([b"ok"], pid, epoch, 0, True), transactional_id=tid).error_code == 0
        end = c.request(26, 3, {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch,
                                "committed": True})
        assert end.error_code == 0
        wait_until(lambda: c.list_offset(topic, 0, isolation=1) == 2, 10)  # record + COMMIT
        # a transactional write the coordinator never heard of: it hangs at offset 2
        assert c.produce(topic, 0, make_batch([b"stray"], pid, epoch, 1, True), transactional_id=tid).error_code == 0
        assert c.list_offset(topic, 0, isolation=1) == 2

    admin = admin_factory(b.bootstrap)
    tp = TopicPartition(topic, 0)
    (hung,) = admin.describe_producers([tp])[tp].active_producers
    assert (hung.current_transaction_start_offset, hung.coordinator_epoch) == (2, 0)
    admin.abort_transaction(AbortTransactionSpec(tp, pid, epoch))
    with RawClient.to(b.bootstrap) as c:
        assert c.list_offset(topic, 0, isolation=1) == c.list_offset(topic, 0) == 4
