"""Issue 8, acceptance 2: kafka-python's KafkaAdminClient transaction methods
(KIP-664: list_transactions, describe_transactions, describe_producers,
abort_transaction) against the broker. The admin abort is checked as Kafka
checks any marker (ProducerAppendInfo.appendEndTxnMarker): a producer epoch below
the partition's is INVALID_PRODUCER_EPOCH, a coordinator epoch below the last
one the partition saw is TRANSACTION_COORDINATOR_FENCED (kafka-python's default
-1 included); nothing else is checked."""
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
    """abort_transaction ends a hanging transaction that never saw a coordinator's
    marker (the partition's coordinator epoch is -1, so kafka-python's default -1 is
    not fenced); a lower producer epoch is refused and writes nothing."""
    from kafka import TopicPartition
    from kafka.admin import AbortTransactionSpec
    import kafka.errors as Errors

    topic = unique_topic("adm-hang")
    b = broker_factory(env={"MINIKAFKA_FAULT_SKIP_MARKER": f"{topic}:0"})
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic(topic, 2) == 0
    tid = f"{topic}-tid"
    # a first producer instance, fenced by the second: the hanging transaction has epoch 1
    open_transaction(b.bootstrap, tid, topic, [], per=0).close()
    producer = open_transaction(b.bootstrap, tid, topic, [0, 1])
    producer.commit_transaction()  # partition 0 never gets its COMMIT marker
    producer.close()
    wait_transaction_done(b.bootstrap, tid)
    tp0 = TopicPartition(topic, 0)
    admin = admin_factory(b.bootstrap)
    with RawClient.to(b.bootstrap) as c:
        assert c.list_offset(topic, 0, isolation=1) == 0
        assert c.list_offset(topic, 1, isolation=1) == 4  # 3 records + COMMIT

    (hung,) = admin.describe_producers([tp0])[tp0].active_producers
    assert hung.current_transaction_start_offset == 0 and hung.coordinator_epoch == -1
    assert hung.producer_epoch >= 1
    d = admin.describe_transactions([tid])[tid]
    assert d.producer_id == hung.producer_id and tp0 not in d.topic_partitions

    with pytest.raises(Errors.InvalidProducerEpochError):
        admin.abort_transaction(AbortTransactionSpec(tp0, hung.producer_id, hung.producer_epoch - 1))
    with RawClient.to(b.bootstrap) as c:
        assert c.list_offset(topic, 0) == 3, "a refused abort must write nothing"

    admin.abort_transaction(AbortTransactionSpec(tp0, hung.producer_id, hung.producer_epoch))
    with RawClient.to(b.bootstrap) as c:
        assert c.list_offset(topic, 0) == 4  # the ABORT marker
        assert c.list_offset(topic, 0, isolation=1) == 4
        _, batches = c.fetch_all(topic, 0)
        marker_header, (marker,) = batches[-1]
        assert marker_header.is_control and marker.key[2:4] == b"\x00\x00"  # ABORT
        assert marker.value[2:6] == b"\xff\xff\xff\xff"  # the spec's coordinator epoch, -1
        aborted = c.fetch(topic, 0, 0, isolation=1).aborted_transactions
        assert [(a.producer_id, a.first_offset) for a in aborted] == [(hung.producer_id, 0)]
    (after,) = admin.describe_producers([tp0])[tp0].active_producers
    assert (after.current_transaction_start_offset, after.producer_epoch) == (-1, hung.producer_epoch)
    # as Kafka: a second abort finds nothing open and is written anyway, aborting nothing
    admin.abort_transaction(AbortTransactionSpec(tp0, hung.producer_id, hung.producer_epoch))
    with RawClient.to(b.bootstrap) as c:
        assert c.list_offset(topic, 0) == c.list_offset(topic, 0, isolation=1) == 5
        aborted = c.fetch(topic, 0, 0, isolation=1).aborted_transactions
        assert [(a.producer_id, a.first_offset) for a in aborted] == [(hung.producer_id, 0)]


def test_abort_hanging_transaction_after_earlier_markers(broker_factory, unique_topic, admin_factory):
    """The classic hang: a producer with a committed transaction on the partition (its
    marker carried coordinator epoch 0) writes to it outside any coordinator-known
    transaction (partition verification off, as before KIP-890). kafka-python's
    AbortTransactionSpec defaults to coordinator epoch -1, which Kafka fences
    (TRANSACTION_COORDINATOR_FENCED, nothing written); with the coordinator epoch
    DescribeProducers reports, as kafka-transactions.sh sends it, the abort succeeds."""
    from kafka import TopicPartition
    from kafka.admin import AbortTransactionSpec
    import kafka.errors as Errors

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
    with pytest.raises(Errors.TransactionCoordinatorFencedError):
        admin.abort_transaction(AbortTransactionSpec(tp, pid, epoch))  # coordinator epoch -1
    with RawClient.to(b.bootstrap) as c:
        assert c.list_offset(topic, 0) == 3, "a fenced abort must write nothing"
    admin.abort_transaction(AbortTransactionSpec(tp, pid, epoch, hung.coordinator_epoch))
    with RawClient.to(b.bootstrap) as c:
        assert c.list_offset(topic, 0, isolation=1) == c.list_offset(topic, 0) == 4


def write_marker(c: RawClient, topic: str, pid: int, epoch: int, coordinator_epoch: int, commit: bool = False) -> int:
    r = c.request(27, 1, {"markers": [{"producer_id": pid, "producer_epoch": epoch, "transaction_result": commit,
                                       "coordinator_epoch": coordinator_epoch,
                                       "topics": [{"name": topic, "partition_indexes": [0]}]}]})
    return r.markers[0].topics[0].partitions[0].error_code


def producer_state(c: RawClient, topic: str):
    (p,) = c.request(61, 0, {"topics": [{"name": topic, "partition_indexes": [0]}]}).topics[0].partitions
    return [(a.producer_id, a.producer_epoch, a.coordinator_epoch, a.current_txn_start_offset)
            for a in p.active_producers]


def test_marker_with_higher_epoch_fences_the_producer_across_kill9(broker_factory, unique_topic):
    """As Kafka (TV1): an admin marker with a higher producer epoch is written and becomes the
    partition's epoch for that producer; after kill -9 (recovery replays the marker) the
    producer's old-epoch batch is still INVALID_PRODUCER_EPOCH and so is a marker of the old
    epoch; a marker with coordinator epoch -1 after a coordinator epoch 0 stays fenced."""
    from protocol.errors import ErrorCode as E
    topic = unique_topic("adm-epoch")
    b = broker_factory()
    tid = f"{topic}-tid"
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic(topic, 1) == 0
        c.request(10, 3, {"key": tid, "key_type": 1})
        init = c.init_producer_id(tid)
        pid, epoch = init.producer_id, init.producer_epoch
        assert c.request(24, 3, {"v3_and_below_transactional_id": tid, "v3_and_below_producer_id": pid,
                                 "v3_and_below_producer_epoch": epoch,
                                 "v3_and_below_topics": [{"name": topic, "partitions": [0]}]}
                         ).results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0
        assert c.produce(topic, 0, make_batch([b"x"], pid, epoch, 0, True), transactional_id=tid).error_code == 0
        assert write_marker(c, topic, pid, epoch + 1, -1) == 0
        # an idempotent producer that never wrote here gets an entry from a marker alone
        other = c.init_producer_id()
        assert write_marker(c, topic, other.producer_id, other.producer_epoch, 0, commit=True) == 0
    b.restart(kill=True)
    with RawClient.to(b.bootstrap) as c:
        assert sorted(producer_state(c, topic)) == sorted([(pid, epoch + 1, -1, -1),
                                                           (other.producer_id, other.producer_epoch, 0, -1)])
        r = c.produce(topic, 0, make_batch([b"y"], pid, epoch, 1, True), transactional_id=tid)
        assert r.error_code == E.INVALID_PRODUCER_EPOCH
        assert write_marker(c, topic, pid, epoch, -1) == E.INVALID_PRODUCER_EPOCH
        assert write_marker(c, topic, other.producer_id, other.producer_epoch, -1) == \
            E.TRANSACTION_COORDINATOR_FENCED
        assert c.list_offset(topic, 0) == 3, "refused writes leave nothing"
        aborted = c.fetch(topic, 0, 0, isolation=1).aborted_transactions
        assert [(a.producer_id, a.first_offset) for a in aborted] == [(pid, 0)]  # x was aborted
