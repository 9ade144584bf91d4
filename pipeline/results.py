"""Reading the job's output without Spark (pyarrow only).

The job writes one complete snapshot of the revenue table per micro-batch::

    <output>/snapshot-000000000007/part-*.parquet + _SUCCESS

A snapshot is complete once ``_SUCCESS`` exists; the newest complete one is
the current table.  A batch re-run after a crash rewrites its own snapshot with
identical content, so readers never see a double count.
"""
from __future__ import annotations

import re
from pathlib import Path

SNAPSHOT_RE = re.compile(r"^snapshot-(\d{12})$")


def snapshot_name(batch_id: int) -> str:
    return f"snapshot-{batch_id:012d}"


def complete_snapshots(output: str | Path) -> list[tuple[int, Path]]:
    """``[(batch_id, path)]`` of complete snapshots, oldest first."""
    out = Path(output)
    if not out.is_dir():
        return []
    found = []
    for d in out.iterdir():
        m = SNAPSHOT_RE.match(d.name)
        if m and (d / "_SUCCESS").exists():
            found.append((int(m.group(1)), d))
    return sorted(found)


def latest_snapshot(output: str | Path) -> tuple[int, Path] | None:
    snaps = complete_snapshots(output)
    return snaps[-1] if snaps else None


def read_revenue(output: str | Path) -> dict[str, dict]:
    """``{product_id: {"orders": n, "quantity": q, "revenue_cents": c}}`` from the
    newest complete snapshot ({} if none yet)."""
    snap = latest_snapshot(output)
    if snap is None:
        return {}
    import pyarrow.parquet as pq
    for _ in range(3):  # a concurrent prune may remove it under us: retry once more
        try:
            rows = pq.read_table(str(snap[1])).to_pylist()
            break
        except (FileNotFoundError, OSError):
            snap = latest_snapshot(output)
            if snap is None:
                return {}
    else:
        return {}
    return {r["product_id"]: {"orders": int(r["orders"]), "quantity": int(r["quantity"]),
                              "revenue_cents": int(r["revenue_cents"])} for r in rows}
