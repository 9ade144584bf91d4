"""The chaos campaign (tools/chaos.py), CI-sized: at least 10 broker crashes (kill -9 at
random moments and an exit at every MINIKAFKA_FAULT point), producers killed and
restarted, kafka-python and confluent-kafka transactional producers and read_committed
consumers; the checker must find no lost, duplicate, aborted, torn or reordered record.
The long run is `python tools/chaos.py --crashes 100` (docs/chaos.md)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness import REPO_ROOT, tail

pytestmark = pytest.mark.slow

FAULTS = ("txn.before_prepare", "txn.after_prepare", "txn.after_first_marker", "txn.after_markers")


@pytest.mark.timeout(240)
def test_chaos_campaign_ten_crashes(tmp_path):
    out, work = tmp_path / "summary.json", tmp_path / "work"
    proc = subprocess.Popen([sys.executable, "tools/chaos.py", "--crashes", "10", "--max-seconds", "70",
                             "--fault-wait-s", "15", "--seed", "13", "--workdir", str(work), "--json", str(out)],
                            cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _, err = proc.communicate(timeout=200)
    except subprocess.TimeoutExpired:
        proc.terminate()  # the campaign then stops its broker and clients
        _, err = proc.communicate(timeout=30)
    broker_log = work / "broker.log"
    context = (f"\n--- chaos stderr ---\n{tail(err, 40)}\n--- broker log ---\n"
               f"{tail(broker_log.read_text(errors='replace'), 40) if broker_log.exists() else ''}")
    assert out.exists(), f"no summary (exit {proc.returncode}){context}"
    s = json.loads(out.read_text())
    assert proc.returncode == 0 and s["ok"], f"{json.dumps(s, indent=1)}{context}"
    assert s["violations"] and not any(s["violations"].values()), s["violations"]
    assert s["crashes"] >= 10, s
    hit = {p: sum(n for k, n in s["fault_exits"].items() if k.startswith(p)) for p in FAULTS}
    assert all(hit.values()), f"fault points not reached: {hit}"
    assert s["transactions_committed"] > 0 and s["transactions_aborted"] > 0, s
    assert s["records_checked"] > 0 and s["consumer_records_checked"] >= 2 * s["records_checked"], s
