"""The chaos campaign's checker (tools/chaos.py) finds each kind of violation it reports."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("chaos", Path(__file__).resolve().parents[2] / "tools" / "chaos.py")
chaos = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(chaos)


def txn(tid: str, inst: int, t: int, n: int, *events) -> tuple[str, list[dict]]:
    key = f"{tid}|{inst}|{t}"
    out = [{"e": "B", "t": key, "n": n}]
    for e in events:
        out.append({"e": "E", "t": key, "c": True} if e == "E" else
                   {"e": "E", "t": key, "c": False} if e == "E-abort" else {"e": e, "t": key})
    return key, out


def rec(tid, inst, t, i, n):
    return chaos.record_value(tid, inst, t, i, n)


def run(journal, committed, appended=None, consumers=None):
    figures = chaos.check([journal], committed, committed if appended is None else appended, consumers or {})
    return {k: v for k, v in figures["violations"].items() if v}, figures


# one producer "a": txn 1 committed (2 records on partitions 0 and 1), txn 2 aborted,
# txn 3 asked to commit without an answer, txn 4 never asked to commit
J = (txn("a", 1, 1, 2, "E", "C")[1] + txn("a", 1, 2, 1, "E-abort", "A")[1]
     + txn("a", 1, 3, 2, "E")[1] + txn("a", 1, 4, 1)[1])
GOOD = [(0, 0, rec("a", 1, 1, 0, 2)), (1, 0, rec("a", 1, 1, 1, 2))]


def test_a_clean_run_has_no_violation():
    v, figures = run(J, GOOD)
    assert v == {}
    assert (figures["transactions_committed"], figures["transactions_aborted"], figures["transactions_uncertain"],
            figures["transactions_unfinished"], figures["records_checked"]) == (1, 1, 1, 1, 2)


def test_uncertain_transaction_all_or_nothing():
    whole = GOOD + [(0, 5, rec("a", 1, 3, 0, 2)), (1, 5, rec("a", 1, 3, 1, 2))]
    assert run(J, whole)[0] == {}
    assert run(J, GOOD + [(0, 5, rec("a", 1, 3, 0, 2))])[0] == {"torn_visible": 1}


@pytest.mark.parametrize("committed,expected", [
    (GOOD[:1], {"lost_acknowledged": 1, "torn_visible": 1}),
    (GOOD + [(0, 3, rec("a", 1, 2, 0, 1))], {"aborted_visible": 1}),
    (GOOD + [(0, 3, rec("a", 1, 4, 0, 1))], {"aborted_visible": 1}),
    (GOOD + [(0, 3, GOOD[0][2])], {"duplicates": 1, "duplicate_appends": 1}),
    (GOOD + [(0, 3, b"stranger")], {"unknown_records": 1}),
    ([(0, 0, rec("a", 1, 1, 1, 2)), (0, 1, rec("a", 1, 1, 0, 2))], {"order_violations": 1}),
])
def test_each_violation_is_found(committed, expected):
    assert run(J, committed)[0] == expected


def test_later_instance_before_an_earlier_one_is_out_of_order():
    j = J + txn("a", 2, 1, 1, "E", "C")[1]
    ok = GOOD + [(0, 9, rec("a", 2, 1, 0, 1))]
    assert run(j, ok)[0] == {}
    swapped = [(0, 0, rec("a", 2, 1, 0, 1)), (0, 9, GOOD[0][2]), GOOD[1]]
    assert run(j, swapped)[0] == {"order_violations": 1}


def test_duplicate_append_even_of_an_aborted_record():
    aborted = rec("a", 1, 2, 0, 1)
    assert run(J, GOOD, GOOD + [(0, 2, aborted), (0, 4, aborted)])[0] == {"duplicate_appends": 1}


def test_live_consumers():
    assert run(J, GOOD, consumers={"c": (list(GOOD), True)})[0] == {}
    assert run(J, GOOD, consumers={"c": (GOOD[:1], False)})[0] == {}   # stopped early: not complete
    assert run(J, GOOD, consumers={"c": (GOOD[:1], True)})[0] == {"consumer_missing": 1}
    assert run(J, GOOD, consumers={"c": (GOOD + GOOD[:1], True)})[0] == {"duplicates": 1, "order_violations": 1}
    ghost = (0, 3, rec("a", 1, 2, 0, 1))  # delivered live, aborted in the final view
    assert run(J, GOOD, consumers={"c": (GOOD + [ghost], True)})[0] == {"aborted_visible": 1}
    moved = (0, 7, GOOD[0][2])            # delivered at another offset than the final view's
    assert run(J, GOOD, consumers={"c": ([moved, GOOD[1]], True)})[0] == {"aborted_visible": 1}
