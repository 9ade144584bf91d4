"""The last stable offset and aborted transactions as readers see them: Fetch (read_committed and
read_uncommitted, fetch offsets before, inside and after aborted ranges, interleaved producers,
several aborts) and ListOffsets (latest, earliest, max timestamp, a timestamp, by isolation level)."""
from ..dsl import (Scenario, add_partitions, await_txn, batch, describe_producers, end_txn, fetch, idem_produce,
                   init_pid, list_offsets, produce, restart, txn_produce)

RC, RU = 1, 0


def plain(values, **kw):
    """A batch without producer id."""
    return idem_produce(None, list(values), **kw)


def txn(who: str, values, seq: int = 0, txn_id: str = "{tx}", timestamps=None, **kw):
    return produce(batch(who, list(values), seq, transactional=True, timestamps=timestamps), txn=txn_id, **kw)


def begin(who: str = "a", txn_id: str = "{tx}"):
    return [init_pid(who, txn=txn_id), add_partitions(who, txn=txn_id)]


def finish(who: str, commit: bool, txn_id: str = "{tx}"):
    return [end_txn(who, commit=commit, txn=txn_id),
            await_txn("CompleteCommit" if commit else "CompleteAbort", txn=txn_id)]


SCENARIOS = [
    Scenario("read_committed/open_txn_lso", "An open transaction after two plain records: LSO 2; what each "
             "isolation level reads and lists, fetch offsets at the LSO, between LSO and HW, at HW, past HW.",
             steps=[
        plain(["p0", "p1"]),
        *begin(),
        txn_produce("a", ["x", "y", "z"]),
        fetch(isolation=RC),
        fetch(isolation=RU),
        list_offsets(isolation=RC),
        list_offsets(isolation=RU),
        list_offsets(timestamp=-2, isolation=RC),
        list_offsets(timestamp=-2, isolation=RU),
        fetch(offset=2, isolation=RC),
        fetch(offset=4, isolation=RC),
        fetch(offset=5, isolation=RC),
        fetch(offset=6, isolation=RC),
        fetch(offset=6, isolation=RU),
    ]),
    Scenario("read_committed/aborted_range_fetch_offsets", "Plain 0-1, aborted 2-4 (marker 5), plain 6-7: "
             "read_committed fetches from before, the start of, inside, the marker of and after the aborted range.",
             steps=[
        plain(["p0", "p1"]),
        *begin(),
        txn_produce("a", ["x", "y", "z"]),
        *finish("a", commit=False),
        plain(["p6", "p7"]),
        fetch(offset=0),
        fetch(offset=2),
        fetch(offset=3),
        fetch(offset=5),
        fetch(offset=6),
        fetch(offset=0, isolation=RU),
        list_offsets(isolation=RC),
    ]),
    Scenario("read_committed/several_aborts", "One producer: aborted, committed, aborted transactions; each "
             "fetch lists the aborted ones from its offset on.", steps=[
        *begin(),
        txn_produce("a", ["a0"], seq=0),
        *finish("a", commit=False),
        add_partitions("a"),
        txn_produce("a", ["c0"], seq=1),
        *finish("a", commit=True),
        add_partitions("a"),
        txn_produce("a", ["a1", "a2"], seq=2),
        *finish("a", commit=False),
        fetch(offset=0),
        fetch(offset=2),
        fetch(offset=4),
        fetch(offset=7),
        fetch(offset=0, isolation=RU),
    ]),
    Scenario("read_committed/interleaved_producers", "Two transactional producers interleave; one aborts while "
             "the other is open (LSO held by the open one), then the other commits.", steps=[
        *begin("a"),
        *begin("b", "{tx2}"),
        txn_produce("a", ["a0"], seq=0),
        txn_produce("b", ["b0"], seq=0, txn="{tx2}"),
        txn_produce("a", ["a1"], seq=1),
        txn_produce("b", ["b1"], seq=1, txn="{tx2}"),
        describe_producers(),
        *finish("b", commit=False, txn_id="{tx2}"),
        fetch(),
        *finish("a", commit=True),
        fetch(offset=0),
        fetch(offset=2),
        fetch(offset=4),
        fetch(isolation=RU),
    ]),
    Scenario("read_committed/lso_held_by_earlier_open_txn", "An open transaction at offset 0 holds the LSO "
             "while plain records and another producer's committed transaction follow.", steps=[
        *begin("a"),
        txn_produce("a", ["a0"]),
        plain(["p"]),
        *begin("b", "{tx2}"),
        txn_produce("b", ["b0"], txn="{tx2}"),
        *finish("b", commit=True, txn_id="{tx2}"),
        fetch(),
        list_offsets(isolation=RC),
        *finish("a", commit=False),
        fetch(),
        list_offsets(isolation=RC),
    ]),
    Scenario("read_committed/txn_spanning_plain_writes", "An aborted transaction with another client's plain "
             "record in the middle of it.", steps=[
        *begin(),
        txn_produce("a", ["x"]),
        plain(["p"]),
        txn_produce("a", ["y"], seq=1),
        *finish("a", commit=False),
        fetch(offset=0),
        fetch(offset=1),
        fetch(offset=2),
    ]),
    Scenario("read_committed/empty_aborted_txn", "A transaction that added the partition but wrote nothing: its "
             "ABORT marker alone, no aborted range.", steps=[
        *begin(),
        *finish("a", commit=False),
        fetch(),
        fetch(isolation=RU),
        describe_producers(),
    ]),
    Scenario("read_committed/committed_marker_offset", "A committed transaction; fetches at its data and at "
             "its marker.", steps=[
        *begin(),
        txn_produce("a", ["x", "y"]),
        *finish("a", commit=True),
        fetch(offset=0),
        fetch(offset=2),
        fetch(offset=3),
        list_offsets(isolation=RC),
    ]),
    Scenario("read_committed/aborted_list_bounded_by_fetched_data", "A one-byte fetch returns only the first "
             "batch: are aborted transactions after it listed?", steps=[
        plain(["p0"]),
        *begin(),
        txn_produce("a", ["x"]),
        *finish("a", commit=False),
        plain(["p1"]),
        fetch(offset=0, max_bytes=1),
        fetch(offset=1, max_bytes=1),
        fetch(offset=2, max_bytes=1),
    ]),
    Scenario("read_committed/list_offsets_open_txn", "ListOffsets latest, earliest and max timestamp under both "
             "isolation levels while the newest record is in an open transaction, then after its commit (the "
             "COMMIT marker is then the newest record).",
             steps=[
        plain(["old"], timestamps=[-5000]),
        *begin(),
        txn("a", ["new"], timestamps=[0]),
        *[list_offsets(timestamp=ts, isolation=iso) for ts in (-1, -2, -3) for iso in (RC, RU)],
        *finish("a", commit=True),
        *[list_offsets(timestamp=ts, isolation=iso) for ts in (-1, -3) for iso in (RC, RU)],
    ]),
    Scenario("read_committed/max_timestamp_in_aborted_txn", "The record with the largest timestamp (a minute "
             "ahead, so newer than the ABORT marker) is in an aborted transaction.", steps=[
        plain(["p0"], timestamps=[-5000]),
        *begin(),
        txn("a", ["x"], timestamps=[60000]),
        *finish("a", commit=False),
        plain(["p1"], timestamps=[-3000]),
        list_offsets(timestamp=-3, isolation=RC),
        list_offsets(timestamp=-3, isolation=RU),
    ]),
    Scenario("read_committed/timestamp_lookup_open_txn", "ListOffsets for a timestamp whose first record is in "
             "an open transaction.", steps=[
        *begin(),
        txn("a", ["x"], timestamps=[-2000]),
        plain(["p"], timestamps=[-1000]),
        list_offsets(timestamp=1, isolation=RC),
        list_offsets(timestamp=1, isolation=RU),
        *finish("a", commit=True),
        list_offsets(timestamp=1, isolation=RC),
    ]),
    Scenario("read_committed/list_offsets_versions", "ListOffsets latest with an open transaction at v1 (no "
             "isolation level), v2, v4, v6, v7, v8 and v9.", steps=[
        plain(["p"]),
        *begin(),
        txn_produce("a", ["x"]),
        list_offsets(v=1, isolation=RU),
        *[list_offsets(v=v, isolation=iso) for v in (2, 4, 6, 7, 8, 9) for iso in (RC, RU)],
        list_offsets(v=1, timestamp=-2, isolation=RU),
    ]),
    Scenario("read_committed/fetch_versions", "An aborted range read at Fetch v4, v7, v11 and v12.", steps=[
        plain(["p"]),
        *begin(),
        txn_produce("a", ["x"]),
        *finish("a", commit=False),
        *[fetch(v=v, isolation=iso) for v in (4, 7, 11, 12) for iso in (RC, RU)],
    ]),
    Scenario("read_committed/restart_kill_aborted_index", "kill -9 after an aborted and a committed "
             "transaction: the aborted ranges and the LSO are rebuilt.", steps=[
        plain(["p"]),
        *begin(),
        txn_produce("a", ["x"]),
        *finish("a", commit=False),
        add_partitions("a"),
        txn_produce("a", ["y"], seq=1),
        *finish("a", commit=True),
        *begin("b", "{tx2}"),
        txn_produce("b", ["open"], txn="{tx2}"),
        restart(kill=True),
        fetch(offset=0),
        fetch(offset=2),
        fetch(offset=0, isolation=RU),
        list_offsets(isolation=RC),
        describe_producers(),
    ]),
]
