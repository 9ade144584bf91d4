"""tools/librdkafka_suite.py reads librdkafka's test table and its runner's output right (the
runs themselves need a built librdkafka checkout and are documented in docs/peer_suites.md)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("librdkafka_suite", ROOT / "tools" / "librdkafka_suite.py")
suite = importlib.util.module_from_spec(_spec)
sys.modules["librdkafka_suite"] = suite  # its dataclasses look their module up
_spec.loader.exec_module(suite)

GREEN, CYAN, RED, RESET = "\x1b[32m", "\x1b[36m", "\x1b[31m", "\x1b[0m"


def summary(*rows: tuple[str, str]) -> str:
    return "#====#\n" + "".join(f"|{GREEN} {name:40} | {state:>10} |   0.100s {RESET}|\n"
                                 for name, state in rows) + "#====#\n"


def test_passed_with_skipped_subtests():
    text = (f"{CYAN}[0045_a / 0.0s] {GREEN}================= Test 0045_a PASSED ================={RESET}\n"
            + summary(("<MAIN>", "PASSED"), ("0045_a", "PASSED"), ("0045_b", "SKIPPED")))
    result, subtests, reason = suite.parse_log(text, 0)
    assert (result, subtests, reason) == ("PASSED", {"0045_a": "PASSED", "0045_b": "SKIPPED"}, "")
    assert suite.cell(suite.Outcome(result, subtests)) == "PASSED (1/2 run)"


def test_failure_inside_a_named_sub_test_is_a_failure_not_a_crash():
    # the runner aborts (exit -6) after a failure in "0081_admin (do_test_X:12)": no summary table
    text = (f"{RED}### Test \"0081_admin (do_test_CreateAcls:1539)\" failed at 0081-admin.c:1622:"
            f"do_test_CreateAcls() at Sun: ###\nTest assertion failed: \"!error\": No Authorizer\n"
            f"{RED}### Test \"<MAIN>\" failed at test.c:1946:test_wait_exit() at Sun: ###\n"
            "3 thread(s) still active in librdkafka\n")
    result, subtests, reason = suite.parse_log(text, -6)
    assert result == "FAILED" and subtests == {"0081_admin": "FAILED"}
    assert reason.startswith("0081-admin.c:1622:do_test_CreateAcls():") and "No Authorizer" in reason


def test_runner_dying_without_a_failed_test_is_a_crash():
    result, _, reason = suite.parse_log("[0001_x / 0.0s] ================= Running test 0001_x\n"
                                        "Segmentation fault\n", -11)
    assert result == "CRASHED" and "Segmentation fault" in reason


def test_all_skipped_and_nothing_run():
    assert suite.parse_log(summary(("<MAIN>", "PASSED"), ("0028_x", "SKIPPED")), 0)[0] == "SKIPPED"
    assert suite.parse_log("", 0)[0] == "NONE"


def test_test_table_flags_scenarios_and_versions(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test.c").write_text("""
struct test tests[] = {
    _TEST(0001_multiobj, 0),
    _TEST(0004_conf, TEST_F_LOCAL),
    _TEST(0045_subscribe_update_topic_remove,
          0,
          TEST_BRKVER(0, 9, 0, 0),
          .scenario = "noautocreate"),
    _TEST(0170_share_consumer, 0, TEST_BRKVER(4, 2, 0, 0)),
    /* comment */
    {NULL}};
""")
    t = suite.test_table(tmp_path)
    assert set(t) == {"0001_multiobj", "0004_conf", "0045_subscribe_update_topic_remove", "0170_share_consumer"}
    assert t["0004_conf"]["local"] and not t["0001_multiobj"]["local"]
    assert t["0045_subscribe_update_topic_remove"]["scenario"] == "noautocreate"
    assert t["0170_share_consumer"]["minver"] == (4, 2, 0, 0) > suite.KAFKA_TUPLE
