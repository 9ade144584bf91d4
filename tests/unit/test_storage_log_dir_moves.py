"""storage: partition moves between log dirs (log_manager's future replicas, log.append_as_follower).

The copy of a log made batch by batch as a follower appends (offsets, epochs, producer state and
aborted transactions as in the source); the swap; and a start after a crash at each step of the
swap (a fault hook that raises stands for the kill): exactly one copy stays, the one the
directory assignment names, or the move goes on from the copy under way."""
from __future__ import annotations

import os

import pytest

from minikafka.protocol import records as rec
from minikafka.protocol.records import Record
from minikafka.storage.config import LogConfig
from minikafka.storage.log_manager import LogManager, parse_future_dir_name

TS = 1_700_000_000_000
SWAP_STEPS = ("logdir.before_commit", "logdir.after_commit", "logdir.after_future_rename", "logdir.after_swap")


class Crash(Exception):
    pass


def manager(dirs, **props) -> LogManager:
    lm = LogManager([str(d) for d in dirs], LogConfig.from_broker_properties(props))
    lm.load()
    return lm


def data(values, pid=-1, epoch=-1, seq=-1, transactional=False) -> bytes:
    return rec.build_batch([Record(None, TS + i, b"k%d" % i, v, ()) for i, v in enumerate(values)],
                           producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=transactional)


def fill(lg) -> None:
    """Plain batches, an idempotent producer, an aborted and a committed transaction, a new
    leader epoch: every kind of state a copy must carry."""
    lg.append(data([b"a" * 300, b"b"]))
    lg.append(data([b"c"], pid=7, epoch=0, seq=0))
    lg.append(data([b"t1"], pid=8, epoch=0, seq=0, transactional=True))
    lg.append(rec.build_control_batch(8, 0, False, 3, TS), origin="coordinator")
    lg.become_leader(lg.leader_epoch + 2)
    lg.append(data([b"t2", b"t3"], pid=8, epoch=0, seq=1, transactional=True))
    lg.append(rec.build_control_batch(8, 0, True, 3, TS), origin="coordinator")
    for i in range(20):
        lg.append(data([b"x" * 500] * 3, pid=7, epoch=0, seq=1 + 3 * i))


def copy_all(current, future, chunk=700) -> None:
    while future.log_end_offset < current.log_end_offset:
        r = current.read(max(future.log_end_offset, current.log_start_offset), chunk,
                         max_offset=current.log_end_offset)
        future.append_as_follower(r.records)


def state(lg) -> tuple:
    producers = sorted((p.producer_id, p.producer_epoch, p.last_sequence, p.current_txn_first_offset)
                       for p in lg.active_producers())
    return (lg.log_start_offset, lg.log_end_offset, lg.last_stable_offset, producers,
            lg.aborted_transactions(0, lg.log_end_offset), lg.read(0, 1 << 20).records,
            [lg.end_offset_for_epoch(e) for e in range(6)])


def moving(tmp_path, **props):
    dirs = [tmp_path / "a", tmp_path / "b"]
    lm = manager(dirs, **props)
    lm.create_topic("t", 1)
    current = lm.get_log("t", 0)
    source = lm.log_dir_of("t", 0)
    target = next(str(d) for d in dirs if str(d) != source)
    fill(current)
    return lm, dirs, source, target


def entries(dirs) -> dict[str, list[str]]:
    return {os.path.basename(d): sorted(n for n in os.listdir(d) if n.startswith("t-0")) for d in dirs}


def test_future_dir_names():
    assert parse_future_dir_name("orders.eu-12." + "ab" * 16 + "-future") == ("orders.eu", 12)
    assert parse_future_dir_name("t-0-future") is None
    assert parse_future_dir_name("t-0." + "ab" * 16 + "-delete") is None


def test_a_copy_made_as_a_follower_serves_what_the_source_does(tmp_path):
    lm, dirs, source, target = moving(tmp_path, **{"log.segment.bytes": "4096"})
    current = lm.get_log("t", 0)
    future = lm.create_future("t", 0, target)
    assert lm.future_log("t", 0) is future and lm.future_log_dir_of("t", 0) == target
    copy_all(current, future)
    assert len(future.segments) > 1
    before = state(current)
    assert state(future)[1:] == before[1:]
    moved = lm.replace_current_with_future("t", 0)
    assert lm.get_log("t", 0) is moved and lm.log_dir_of("t", 0) == target and lm.future_log("t", 0) is None
    assert current.closed and state(moved) == before
    assert moved.append(data([b"after"])).base_offset == current.log_end_offset
    lm.remove_deleted_dir(current.dir)
    assert entries(dirs) == {os.path.basename(source): [], os.path.basename(target): ["t-0"]}
    expected = state(moved)
    lm.close()
    again = manager(dirs, **{"log.segment.bytes": "4096"})
    # (a start moves the leader epoch on: compared up to the epochs)
    assert again.log_dir_of("t", 0) == target and state(again.get_log("t", 0))[:6] == expected[:6]
    again.close()


def test_follower_appends_keep_whole_batches_and_offsets(tmp_path):
    lm, dirs, source, target = moving(tmp_path)
    current = lm.get_log("t", 0)
    future = lm.create_future("t", 0, target)
    r = current.read(0, 1000, max_offset=current.log_end_offset)
    head = r.records
    assert future.append_as_follower(head[:10]) == 0   # no whole batch: nothing appended
    n = future.append_as_follower(head)                 # a cut trailing batch is left for later
    assert 0 < n < len(head) and future.log_end_offset < current.log_end_offset
    with pytest.raises(Exception):
        future.append_as_follower(head)                 # below its end: refused
    copy_all(current, future)
    assert future.log_end_offset == current.log_end_offset
    lm.close()


def test_the_copy_starts_at_the_source_log_start(tmp_path):
    lm, dirs, source, target = moving(tmp_path)
    current = lm.get_log("t", 0)
    current.delete_records_before(10)
    future = lm.create_future("t", 0, target)
    assert future.log_start_offset == current.batch_base_at(10) <= 10
    copy_all(current, future)
    moved = lm.replace_current_with_future("t", 0)
    assert moved.log_start_offset == 10 and moved.log_end_offset == current.log_end_offset
    lm.close()


@pytest.mark.parametrize("step", SWAP_STEPS)
def test_a_crash_at_each_step_of_the_swap_leaves_one_copy(tmp_path, step):
    lm, dirs, source, target = moving(tmp_path)
    current = lm.get_log("t", 0)
    expected = state(current)
    future = lm.create_future("t", 0, target)
    copy_all(current, future)

    def fault(point):
        if point == step:
            raise Crash(point)
    with pytest.raises(Crash):
        lm.replace_current_with_future("t", 0, fault=fault)
    lm.release_locks()   # the process is gone: its locks with it
    again = manager(dirs)
    if step == "logdir.before_commit":
        # not committed: the partition stays where it was, the complete copy is a future replica again
        assert again.log_dir_of("t", 0) == source and again.future_log_dir_of("t", 0) == target
        assert state(again.get_log("t", 0))[1:6] == expected[1:6]
        assert [n for n in entries(dirs)[os.path.basename(target)]][0].endswith("-future")
    else:
        assert again.log_dir_of("t", 0) == target and again.future_log("t", 0) is None
        assert state(again.get_log("t", 0))[1:6] == expected[1:6]
        assert entries(dirs) == {os.path.basename(source): [], os.path.basename(target): ["t-0"]}
    again.close()


@pytest.mark.parametrize("stop", ["crash", "clean shutdown"])
def test_a_stop_while_copying_resumes_the_copy(tmp_path, stop):
    lm, dirs, source, target = moving(tmp_path)
    current = lm.get_log("t", 0)
    future = lm.create_future("t", 0, target)
    r = current.read(0, 2000, max_offset=current.log_end_offset)
    future.append_as_follower(r.records)
    copied = future.log_end_offset
    lm.release_locks() if stop == "crash" else lm.close()
    again = manager(dirs)
    resumed = again.future_log("t", 0)
    assert again.log_dir_of("t", 0) == source and resumed is not None and resumed.log_end_offset == copied
    copy_all(again.get_log("t", 0), resumed)
    again.replace_current_with_future("t", 0)
    assert again.log_dir_of("t", 0) == target
    again.close()


def test_an_abandoned_copy_is_gone_after_a_crash(tmp_path):
    lm, dirs, source, target = moving(tmp_path)
    future = lm.create_future("t", 0, target)
    abandoned = lm.abandon_future(("t", 0))
    assert abandoned is future and abandoned.dir.endswith("-delete") and lm.future_log("t", 0) is None
    lm.release_locks()
    again = manager(dirs)
    assert again.future_log("t", 0) is None
    assert entries(dirs) == {os.path.basename(source): ["t-0"], os.path.basename(target): []}
    again.close()


def test_deleting_a_moving_topic_removes_both_copies(tmp_path):
    lm, dirs, source, target = moving(tmp_path)
    lm.create_future("t", 0, target)
    lm.delete_topic("t")
    assert entries(dirs) == {os.path.basename(source): [], os.path.basename(target): []}
    lm.close()
