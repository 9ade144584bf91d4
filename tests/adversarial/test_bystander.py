"""The bystander itself: on a quiet broker it commits, reads back every record once under
read_committed, and reports per-request latencies."""
from __future__ import annotations


def test_bystander_round_trips_and_reports_latency(broker, bystander):
    b = bystander(broker.bootstrap)
    mark = b.mark()
    b.wait_progress(requests=10)
    assert {"produce", "fetch", "end_txn", "add_partitions_to_txn"} <= {a for _, a, _ in b.samples}
    assert 0 < b.p99(since=mark) < 10
    assert b.p99("produce") > 0
    b.stop()
    b.check()
    assert len(b.consumed) >= 3 and b.consumed[:3] == [b"bystander-0", b"bystander-1", b"bystander-2"]
