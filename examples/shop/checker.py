"""Checker: exactly one invoice and one shipment per purchase, read_committed.

Reads ``purchases``, ``invoices`` and ``shipments`` from the beginning with
``isolation_level=read_committed`` (up to each partition's last stable offset)
and reports duplicates, missing and unknown ids.  Exit 0 when everything
matches (and, with ``--expect N``, there are exactly N purchases), 1 otherwise.
With ``--wait S`` it re-checks until consistent or S seconds pass (use it while
the service is still catching up).  The last line on stdout is a JSON summary.

    python -m examples.shop.checker [--expect 10000] [--wait 60]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field

from .model import INVOICES, PURCHASES, SHIPMENTS, default_bootstrap
from .reading import read_topic


@dataclass
class Report:
    purchases: int = 0
    invoices: int = 0
    shipments: int = 0
    duplicate_purchases: list[str] = field(default_factory=list)
    duplicate_invoices: list[str] = field(default_factory=list)
    duplicate_shipments: list[str] = field(default_factory=list)
    missing_invoices: list[str] = field(default_factory=list)
    missing_shipments: list[str] = field(default_factory=list)
    unknown_invoices: list[str] = field(default_factory=list)
    unknown_shipments: list[str] = field(default_factory=list)
    bad_amounts: list[str] = field(default_factory=list)
    expect: int | None = None

    @property
    def problems(self) -> list[str]:
        out = []
        for name in ("duplicate_purchases", "duplicate_invoices", "duplicate_shipments",
                     "missing_invoices", "missing_shipments", "unknown_invoices",
                     "unknown_shipments", "bad_amounts"):
            ids = getattr(self, name)
            if ids:
                out.append(f"{len(ids)} {name.replace('_', ' ')} (first: {ids[:5]})")
        if self.expect is not None and self.purchases != self.expect:
            out.append(f"{self.purchases} purchases, expected {self.expect}")
        return out

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> dict:
        d = {k: (len(v) if isinstance(v, list) else v) for k, v in asdict(self).items()}
        d["ok"] = self.ok
        d["problems"] = self.problems
        return d


def _ids(bootstrap: str, topic: str) -> tuple[Counter, dict]:
    counts: Counter = Counter()
    values: dict = {}
    for r in read_topic(bootstrap, topic, client_id=f"shop-checker-{topic}"):
        obj = json.loads(r.value)
        pid = obj["purchase_id"]
        counts[pid] += 1
        values[pid] = obj
    return counts, values


def check(bootstrap: str, purchases: str = PURCHASES, invoices: str = INVOICES,
          shipments: str = SHIPMENTS, expect: int | None = None) -> Report:
    pc, pv = _ids(bootstrap, purchases)
    ic, iv = _ids(bootstrap, invoices)
    sc, _ = _ids(bootstrap, shipments)
    rep = Report(purchases=len(pc), invoices=sum(ic.values()), shipments=sum(sc.values()),
                 expect=expect)
    rep.duplicate_purchases = sorted(k for k, n in pc.items() if n > 1)
    rep.duplicate_invoices = sorted(k for k, n in ic.items() if n > 1)
    rep.duplicate_shipments = sorted(k for k, n in sc.items() if n > 1)
    rep.missing_invoices = sorted(set(pc) - set(ic))
    rep.missing_shipments = sorted(set(pc) - set(sc))
    rep.unknown_invoices = sorted(set(ic) - set(pc))
    rep.unknown_shipments = sorted(set(sc) - set(pc))
    for pid, inv in iv.items():
        p = pv.get(pid)
        if p and (inv["product_id"] != p["product_id"]
                  or inv["amount_cents"] != p["quantity"] * p["unit_price_cents"]):
            rep.bad_amounts.append(pid)
    rep.bad_amounts.sort()
    return rep


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m examples.shop.checker",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--bootstrap", default=default_bootstrap())
    ap.add_argument("--purchases", default=PURCHASES)
    ap.add_argument("--invoices", default=INVOICES)
    ap.add_argument("--shipments", default=SHIPMENTS)
    ap.add_argument("--expect", type=int, default=None, help="exact number of purchases")
    ap.add_argument("--wait", type=float, default=0, help="re-check for up to this many seconds")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    deadline = time.monotonic() + args.wait
    while True:
        rep = check(args.bootstrap, args.purchases, args.invoices, args.shipments, args.expect)
        if rep.ok or time.monotonic() >= deadline:
            break
        time.sleep(1)
    for p in rep.problems:
        print(f"checker: {p}", file=sys.stderr)
    print(json.dumps(rep.summary()), flush=True)
    return 0 if rep.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
