"""Leader epochs: storage/leader_epoch.py (Kafka's LeaderEpochFileCache and its
checkpoint file), the log's hooks (stamping, recovery, truncation, DeleteRecords)
and the log manager's bump of every partition by 2 per start."""
from __future__ import annotations

import json
import os

import pytest

from protocol import records as rec
from protocol.records import Record
from storage.config import LogConfig
from storage.leader_epoch import LEADER_EPOCH_CHECKPOINT, LeaderEpochFileCache
from storage.log import UnifiedLog
from storage.log_manager import TOPICS_FILE, LogManager

TS = 1_700_000_000_000


def batch(n: int = 2) -> bytes:
    return rec.build_batch([Record(None, TS + i, b"k", b"v" * 50, ()) for i in range(n)])


def checkpoint_text(d) -> str:
    with open(os.path.join(str(d), LEADER_EPOCH_CHECKPOINT)) as f:
        return f.read()


def stamped_epochs(log: UnifiedLog) -> list[tuple[int, int]]:
    """(base offset, partition leader epoch) of every batch."""
    r = log.read(log.log_start_offset, 1 << 20)
    return [(h.base_offset, h.partition_leader_epoch) for _, h in rec.iter_batch_headers(r.records)]


# ------------------------------------------------------------------ the cache alone

def cache_with(tmp_path, *entries) -> LeaderEpochFileCache:
    tmp_path.mkdir(exist_ok=True)
    c = LeaderEpochFileCache(str(tmp_path))
    for e, o in entries:
        c.assign(e, o)
    return c


def test_checkpoint_file_is_kafkas_format_and_reloads(tmp_path):
    c = cache_with(tmp_path, (0, 0), (2, 5), (4, 9))
    assert checkpoint_text(tmp_path) == "0\n3\n0 0\n2 5\n4 9\n"
    again = LeaderEpochFileCache(str(tmp_path))
    assert again.loaded_from_file and again.entries() == [(0, 0), (2, 5), (4, 9)] == c.entries()


@pytest.mark.parametrize("text", ["", "1\n1\n0 0\n", "0\n2\n0 0\n", "0\n1\n0\n", "0\nx\n"])
def test_malformed_checkpoint_is_not_trusted(tmp_path, text):
    (tmp_path / LEADER_EPOCH_CHECKPOINT).write_text(text)
    c = LeaderEpochFileCache(str(tmp_path))
    assert not c.loaded_from_file and c.entries() == []


def test_assign_same_epoch_later_offset_is_a_no_op(tmp_path):
    c = cache_with(tmp_path, (0, 0), (2, 5))
    assert not c.assign(2, 7)
    assert c.entries() == [(0, 0), (2, 5)]


def test_assign_drops_entries_that_break_monotonicity(tmp_path):
    # a new epoch at the same start offset replaces the epoch in which nothing was written
    assert cache_with(tmp_path / "a", (0, 0), (2, 0)).entries() == [(2, 0)]
    # an older epoch or an earlier offset cuts everything at or after it (Kafka's maybeTruncateNonMonotonicEntries)
    assert cache_with(tmp_path / "b", (0, 0), (2, 5), (4, 9), (3, 7)).entries() == [(0, 0), (2, 5), (3, 7)]
    assert cache_with(tmp_path / "c", (0, 0), (2, 5), (6, 3)).entries() == [(0, 0), (6, 3)]


def test_end_offset_for(tmp_path):
    c = cache_with(tmp_path, (0, 0), (2, 3), (6, 5))
    leo = 9
    assert c.end_offset_for(6, leo) == (6, 9)          # the current epoch ends at the LEO
    assert c.end_offset_for(0, leo) == (0, 3)
    assert c.end_offset_for(1, leo) == (0, 3)          # never led in 1: the epoch before it, ending where 2 starts
    assert c.end_offset_for(4, leo) == (2, 5)
    assert c.end_offset_for(7, leo) == (-1, -1)        # beyond the current epoch
    assert c.end_offset_for(-1, leo) == (-1, -1)
    assert c.end_offset_for(-2, leo) == (-2, 0)        # Kafka: older than anything cached
    c.truncate_from_start(4)
    assert c.end_offset_for(0, leo) == (0, 4)


def test_truncate_from_end_and_start_and_epoch_for_offset(tmp_path):
    c = cache_with(tmp_path, (0, 0), (2, 3), (4, 8))
    assert [c.epoch_for_offset(o) for o in (0, 2, 3, 7, 8, 100)] == [0, 0, 2, 2, 4, 4]
    c.truncate_from_end(8)          # removes entries starting at or after 8
    assert c.entries() == [(0, 0), (2, 3)]
    c.truncate_from_start(5)        # the epoch holding 5 now starts there
    assert c.entries() == [(2, 5)]
    assert checkpoint_text(tmp_path) == "0\n1\n2 5\n"
    assert c.epoch_for_offset(4) is None


# ------------------------------------------------------------------ the log

def open_log(path, **kw) -> UnifiedLog:
    return UnifiedLog(str(path), "t", 0, LogConfig(), **kw)


def test_batches_carry_the_leader_epoch_and_the_cache_starts_it_at_the_leo(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.become_leader(0)
    log.append(batch(2))
    log.become_leader(2)
    log.append(batch(1))
    log.append(batch(1))
    assert stamped_epochs(log) == [(0, 0), (2, 2), (3, 2)]
    assert log.leader_epoch_cache.entries() == [(0, 0), (2, 2)]
    assert log.end_offset_for_epoch(0) == (0, 2) and log.end_offset_for_epoch(2) == (2, 4)
    assert log.end_offset_for_epoch(3) == (-1, -1)
    assert [log.leader_epoch_of_offset(o) for o in (0, 1, 2, 3)] == [0, 0, 2, 2]
    log.close()
    again = open_log(tmp_path / "t-0")
    assert again.leader_epoch == 2 and again.leader_epoch_cache.entries() == [(0, 0), (2, 2)]


def test_an_epoch_without_data_is_dropped_on_load(tmp_path):
    """Kafka's LogLoader truncates the cache to the log end offset: an entry that starts
    there (the broker led in it but nothing was written) is gone after the next start."""
    log = open_log(tmp_path / "t-0")
    log.become_leader(0)
    log.append(batch(3))
    log.become_leader(2)
    log.close()
    again = open_log(tmp_path / "t-0")
    assert again.leader_epoch_cache.entries() == [(0, 0)]
    again.become_leader(4)
    assert again.leader_epoch_cache.entries() == [(0, 0), (4, 3)]
    assert again.end_offset_for_epoch(2) == (0, 3)


def test_torn_tail_truncates_the_cache_with_the_log(tmp_path):
    """A kill -9 that tears the first batch of epoch 2: the entry goes with the data it
    described, and the next leadership starts where the log now ends."""
    log = open_log(tmp_path / "t-0")
    log.become_leader(0)
    log.append(batch(3))
    log.become_leader(2)
    log.append(batch(2))
    path = log.active_segment.log_path
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.truncate(size - 10)
    crashed = open_log(tmp_path / "t-0", had_clean_shutdown=False, recovery_point=0)
    assert crashed.log_end_offset == 3
    assert crashed.leader_epoch_cache.entries() == [(0, 0)]
    crashed.become_leader(4)
    crashed.append(batch(1))
    assert stamped_epochs(crashed) == [(0, 0), (3, 4)]
    assert crashed.end_offset_for_epoch(2) == (0, 3)
    assert checkpoint_text(tmp_path / "t-0") == "0\n2\n0 0\n4 3\n"


def test_missing_checkpoint_is_rebuilt_from_the_batches(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.become_leader(0)
    log.append(batch(2))
    log.become_leader(2)
    log.append(batch(2))
    log.become_leader(4)
    log.append(batch(1))
    log.close()
    os.unlink(tmp_path / "t-0" / LEADER_EPOCH_CHECKPOINT)
    again = open_log(tmp_path / "t-0")
    assert again.leader_epoch_cache.entries() == [(0, 0), (2, 2), (4, 4)]
    assert again.leader_epoch == 4


def test_recovery_adds_epochs_the_file_missed(tmp_path):
    """An unclean start re-reads the recovered batches' epochs (Kafka's LogSegment.recover)."""
    log = open_log(tmp_path / "t-0")
    log.become_leader(0)
    log.append(batch(2))
    log.become_leader(2)
    log.append(batch(2))
    (tmp_path / "t-0" / LEADER_EPOCH_CHECKPOINT).write_text("0\n1\n0 0\n")  # a stale file
    crashed = open_log(tmp_path / "t-0", had_clean_shutdown=False, recovery_point=0)
    assert crashed.leader_epoch_cache.entries() == [(0, 0), (2, 2)]


def test_delete_records_moves_the_first_entry(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.become_leader(0)
    log.append(batch(3))
    log.become_leader(2)
    log.append(batch(2))
    assert log.earliest_leader_epoch() == 0
    log.delete_records_before(4)
    assert log.leader_epoch_cache.entries() == [(2, 4)]
    assert log.earliest_leader_epoch() == 2
    assert log.end_offset_for_epoch(0) == (0, 4)
    log.close()
    assert open_log(tmp_path / "t-0", log_start_offset=4).leader_epoch_cache.entries() == [(2, 4)]


def test_truncate_to_truncates_the_cache_and_the_next_append_restores_the_epoch(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.become_leader(0)
    log.append(batch(3))
    log.become_leader(2)
    log.append(batch(2))
    log.truncate_to(3)
    assert log.leader_epoch_cache.entries() == [(0, 0)]
    log.append(batch(1))
    assert log.leader_epoch_cache.entries() == [(0, 0), (2, 3)]
    log.truncate_to(0)
    assert log.leader_epoch_cache.entries() == []
    log.append(batch(1))
    assert log.leader_epoch_cache.entries() == [(2, 0)]


# ------------------------------------------------------------------ the log manager

def manager(d) -> LogManager:
    lm = LogManager([str(d)], LogConfig())
    lm.load()
    return lm


def test_every_start_moves_every_partition_on_by_two(tmp_path):
    lm = manager(tmp_path)
    lm.create_topic("a", 2)
    assert [lm.leader_epoch("a", p) for p in (0, 1)] == [0, 0]
    lm.get_log("a", 0).append(batch(2))
    lm.close()
    lm = manager(tmp_path)
    assert [lm.leader_epoch("a", p) for p in (0, 1)] == [2, 2]
    lm.create_topic("b", 1)
    lm.add_partitions("a", 3)
    assert (lm.leader_epoch("b", 0), lm.leader_epoch("a", 2)) == (0, 0)  # new partitions start at 0
    lm.get_log("a", 0).append(batch(1))
    assert stamped_epochs(lm.get_log("a", 0)) == [(0, 0), (2, 2)]
    # the epochs are in the topics store before any batch carries them
    with open(tmp_path / TOPICS_FILE) as f:
        assert json.load(f)["topics"]["a"]["leader_epochs"] == [2, 2, 0]
    # a crash (no close) is a restart too
    lm = manager(tmp_path)
    assert [lm.leader_epoch("a", p) for p in (0, 1, 2)] == [4, 4, 2] and lm.leader_epoch("b", 0) == 2
    assert lm.get_log("a", 0).leader_epoch_cache.entries() == [(0, 0), (2, 2), (4, 3)]
    assert lm.get_log("a", 1).leader_epoch_cache.entries() == [(4, 0)]
    assert lm.leader_epoch("nope", 0) == -1
    lm.delete_topic("a")
    lm.create_topic("a", 1)
    assert lm.leader_epoch("a", 0) == 0  # a re-created topic is a new topic
    lm.close()


def test_data_dir_from_before_leader_epochs(tmp_path):
    """A topics store without leader_epochs and logs without checkpoint files (everything
    was epoch 0): the start bumps to 2 and rebuilds the cache from the batches."""
    lm = manager(tmp_path)
    lm.create_topic("old", 1)
    lm.get_log("old", 0).append(batch(2))
    lm.close()
    os.unlink(tmp_path / "old-0" / LEADER_EPOCH_CHECKPOINT)
    with open(tmp_path / TOPICS_FILE) as f:
        doc = json.load(f)
    del doc["topics"]["old"]["leader_epochs"]
    with open(tmp_path / TOPICS_FILE, "w") as f:
        json.dump(doc, f)
    lm = manager(tmp_path)
    assert lm.leader_epoch("old", 0) == 2
    assert lm.get_log("old", 0).leader_epoch_cache.entries() == [(0, 0), (2, 2)]
    lm.close()


def test_log_flush_makes_the_epoch_cache_durable_first(tmp_path, monkeypatch):
    """Cache writes are not fsynced on their own; a flush of the log syncs the cache file
    before the data, so durable data never has an epoch its durable cache file lacks."""
    log = open_log(tmp_path / "t-0")
    log.become_leader(3)
    assert log.leader_epoch_cache.dirty
    synced = []
    real = log.leader_epoch_cache.checkpoint.sync
    monkeypatch.setattr(log.leader_epoch_cache.checkpoint, "sync", lambda: (synced.append(1), real())[1])
    log.append(batch(1))
    log.flush()
    assert synced == [1] and not log.leader_epoch_cache.dirty
    log.flush()
    assert synced == [1]  # nothing new to sync


def test_load_cuts_reach_the_file_before_new_data(tmp_path):
    """A load cuts the cache in memory only (become_leader writes it next); a log used
    without become_leader writes the cut before its first append, so a crash right after
    cannot bring back an entry the new data contradicts."""
    log = open_log(tmp_path / "t-0")
    log.become_leader(0)
    log.append(batch(3))
    log.become_leader(2)   # nothing written in epoch 2
    log.close()
    again = open_log(tmp_path / "t-0")
    assert again.leader_epoch == 0 and again.leader_epoch_cache.entries() == [(0, 0)]
    assert checkpoint_text(tmp_path / "t-0") == "0\n2\n0 0\n2 3\n"  # behind, until the next write
    again.append(batch(2))  # epoch 0 again, at offset 3
    assert checkpoint_text(tmp_path / "t-0") == "0\n1\n0 0\n"
    crashed = open_log(tmp_path / "t-0", had_clean_shutdown=False, recovery_point=0)
    assert crashed.leader_epoch_cache.entries() == [(0, 0)]
    assert crashed.end_offset_for_epoch(0) == (0, 5)
