"""The markers of a coordinator round bound for one partition are one append
(ReplicaManager.write_markers); when the partition refuses it, each marker is written alone and
gets its own answer, as if the markers had been sent one by one."""
from __future__ import annotations

from minikafka.broker.broker import Broker
from minikafka.broker.config import BrokerConfig
from minikafka.protocol import records as rec
from minikafka.protocol.errors import ErrorCode as E


def control_batches(lg):
    data = lg.read(0, 1 << 20).records
    return [(h.producer_id, h.producer_epoch) for _, h in rec.iter_batch_headers(data) if h.is_control]


def test_markers_of_one_round_share_an_append_or_are_answered_one_by_one(tmp_path):
    b = Broker(BrokerConfig.load(None, [f"log.dirs={tmp_path}", "listeners=PLAINTEXT://127.0.0.1:0"]))
    b.load()
    try:
        b.ctx.topics.create("t", 1)
        lg = b.ctx.replicas.get_log("t", 0)
        for pid, epoch in ((1000, 5), (2000, 3), (3000, 0)):
            lg.append(rec.build_batch([rec.Record(0, None, None, b"v", ())], producer_id=pid, producer_epoch=epoch,
                                      base_sequence=0, is_transactional=True))
        assert lg.last_stable_offset == 0
        # the first producer's marker carries a stale epoch: the shared append is refused,
        # then each marker is written alone
        codes = b.ctx.replicas.write_markers("t", 0, [(1000, 4, True, 0), (2000, 3, True, 0), (3000, 0, False, 0)])
        assert codes == [E.INVALID_PRODUCER_EPOCH, 0, 0]
        assert control_batches(lg) == [(2000, 3), (3000, 0)]
        assert lg.last_stable_offset == 0  # producer 1000's transaction is still open
        end = lg.log_end_offset
        b.ctx.topics.create("u", 1)
        other = b.ctx.replicas.get_log("u", 0)
        for pid in (4000, 5000):
            other.append(rec.build_batch([rec.Record(0, None, None, b"v", ())], producer_id=pid, producer_epoch=0,
                                         base_sequence=0, is_transactional=True))
        assert b.ctx.replicas.write_markers("u", 0, [(4000, 0, True, 0), (5000, 0, False, 0)]) == [0, 0]
        assert control_batches(other) == [(4000, 0), (5000, 0)]
        assert other.last_stable_offset == other.log_end_offset == 4
        assert other.aborted_transactions(0, 4) == [(5000, 1)]  # the aborted one is indexed
        assert b.ctx.replicas.write_markers("t", 0, [(1000, 5, True, 0)]) == [0]
        assert lg.log_end_offset == end + 1 and lg.last_stable_offset == lg.log_end_offset
        assert b.ctx.replicas.write_markers("gone", 0, [(1, 0, True, 0), (2, 0, True, 0)]) == [E.UNKNOWN_TOPIC_OR_PARTITION] * 2
    finally:
        b.close()
