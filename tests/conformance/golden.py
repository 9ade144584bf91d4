"""Golden files: Kafka's normalized answers, one JSON file per scenario."""
from __future__ import annotations

import json
from pathlib import Path

from .kafka_reference import KAFKA_VERSION
from .normalize import flatten, order_free

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"


def feature_args(features: dict) -> tuple[str, ...]:
    """{"transaction.version": 2} -> ("transaction.version=2",): kafka-storage.sh's --feature values."""
    return tuple(f"{k}={v}" for k, v in sorted(features.items()))


def recorded_from(features: dict) -> str:
    return (f"Apache Kafka {KAFKA_VERSION} (KRaft, node 1 broker+controller; node 2 broker for held topics; "
            f"{', '.join(feature_args(features))})")
# Topics whose markers cannot be written: in minikafka through MINIKAFKA_FAULT_HOLD_MARKERS.
HELD_PREFIX = "cfheld-"


def golden_path(name: str) -> Path:
    return GOLDEN_DIR / f"{name}.json"


def write(scenario, transcript: list[dict]) -> Path:
    path = golden_path(scenario.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"scenario": scenario.name, "doc": scenario.doc, "recorded_from": recorded_from(scenario.features),
           "broker_config": dict(sorted(scenario.broker.items())), "steps": transcript}
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path


def load(name: str) -> dict | None:
    path = golden_path(name)
    if not path.exists():
        return None
    return json.loads(path.read_text())


def all_recorded() -> set[str]:
    return {str(p.relative_to(GOLDEN_DIR))[:-5] for p in GOLDEN_DIR.rglob("*.json")}


def compare(scenario, kafka_steps: list[dict], our_steps: list[dict], differences, declared: bool = True) -> list[str]:
    """Human-readable mismatches: scenario, step, field, Kafka's value, ours. Fields declared
    deliberately different (``Scenario.differs``, and for every ApiVersions answer the table of
    api_versions.py) must hold exactly the declared answer instead of Kafka's, and a declared
    answer that is Kafka's own is a mismatch too: the difference is gone. ``declared=False``
    compares with no declarations (two recordings of Kafka)."""
    from .api_versions import declared_differences
    name = scenario.name
    out = []
    for k, o in zip(kafka_steps, our_steps):
        what = k.get("label") or (k["request"]["api"] + f" v{k['request']['version']}" if "request" in k
                                  else f"restart ({k.get('restart')})")
        where = f"{name}, step {k['step']} ({what})"
        if "restart" in k or "restart" in o:
            if k.get("restart") != o.get("restart"):
                out.append(f"{where}: Kafka {k.get('restart')!r}, minikafka {o.get('restart')!r}")
            continue
        for path, kv, ov in differences(k["request"], o["request"]):
            out.append(f"{where}: request field {path}: Kafka's run sent {kv!r}, ours {ov!r}")
        # (reason, path, minikafka's declared answer there)
        decls = []
        if declared:
            step_differs = scenario.differs.get(k["step"])
            if step_differs is not None:
                decls += [(step_differs.reason, p, want) for p, want in step_differs.ours.items()]
            decls += declared_differences(k["request"]["api"], k["response"])
        api = k["request"]["api"]
        kafka_resp, our_resp = order_free(api, k["response"]), order_free(api, o["response"])
        kafka_flat, ours_flat = flatten(kafka_resp), flatten(our_resp)
        for path, kv, ov in differences(kafka_resp, our_resp):
            if any(_under(path, p) for _, p, _ in decls):
                continue
            out.append(f"{where}: field {path}: Kafka {kv!r}, minikafka {ov!r}")
        for reason, p, want in decls:
            expected = {} if want == ABSENT else flatten(want, p)
            got = {q: v for q, v in ours_flat.items() if _under(q, p)}
            if got != expected:
                out.append(f"{where}: field {p} is declared different from Kafka ({reason}) as "
                           f"{want!r}, but minikafka answered {_shown(got, p)!r}")
            if {q: v for q, v in kafka_flat.items() if _under(q, p)} == expected:
                out.append(f"{where}: field {p} is declared different from Kafka ({reason}) as {want!r}, "
                           f"which is Kafka's answer too: the difference is gone, remove the declaration")
    if len(out) > 40:
        out = out[:40] + [f"... and {len(out) - 40} more differences"]
    if len(kafka_steps) != len(our_steps):
        out.append(f"{name}: Kafka's transcript has {len(kafka_steps)} steps, ours {len(our_steps)}")
    return out


# A declared answer that a field is not there at all (an API minikafka does not serve)
ABSENT = "<absent>"


def _shown(got: dict, path: str):
    """The flattened fields under ``path`` as one value for a message."""
    if not got:
        return ABSENT
    return got[path] if list(got) == [path] else got


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + ".") or path.startswith(prefix + "[")
