#!/usr/bin/env python3
"""Derive the compact protocol facts the broker runs on from Apache Kafka's own
message definitions (../shared/kafka-protocol), so no field list is typed by hand.

Writes:
  protocol/schema.jsonl - per API key: name, version ranges, flexible versions and
                          the field trees (name, type, versions, nullability, tags,
                          defaults); common structs inlined; no prose. One JSON
                          object per line: an index, then one line per API and per
                          data spec.
  protocol/errors.py    - the error code table as an IntEnum plus retriable flags.

Run `make schema` (or `python tools/gen_protocol.py [path/to/kafka-protocol]`).
The outputs are committed so an installed broker never needs ../shared.
"""
import csv
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def strip_comments(text: str) -> str:
    """Remove // comments outside string literals."""
    out, i, n, in_str = [], 0, len(text), False
    while i < n:
        c = text[i]
        if in_str:
            out.append(c)
            if c == "\\":
                out.append(text[i + 1]); i += 2; continue
            if c == '"':
                in_str = False
        elif c == '"':
            in_str = True; out.append(c)
        elif c == "/" and text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def load(path):
    with open(path) as f:
        return json.loads(strip_comments(f.read()))


def vrange(s, hi_cap=None):
    """'N', 'N-M', 'N+', 'none' -> [lo, hi] (hi=None means open) or None."""
    if s is None or s == "none":
        return None
    if s.endswith("+"):
        return [int(s[:-1]), None]
    if "-" in s:
        a, b = s.split("-")
        return [int(a), int(b)]
    return [int(s), int(s)]


def snake(name: str) -> str:
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s)
    return s.lower()


def compact_fields(fields, common):
    out = []
    for f in fields:
        t = f["type"]
        c = {"n": snake(f["name"]), "t": t, "v": vrange(f.get("versions"))}
        if "nullableVersions" in f:
            c["nv"] = vrange(f["nullableVersions"])
        if "taggedVersions" in f:
            c["tv"] = vrange(f["taggedVersions"])
            c["tag"] = f["tag"]
        if "flexibleVersions" in f:
            c["fv"] = vrange(f["flexibleVersions"])
        if "default" in f:
            c["d"] = f["default"]
        elem = t[2:] if t.startswith("[]") else t
        if "fields" in f:
            c["f"] = compact_fields(f["fields"], common)
        elif elem in common:
            c["f"] = compact_fields(common[elem], common)
        if "f" in c:
            c["t"] = "[]struct" if t.startswith("[]") else "struct"
        out.append(c)
    return out


def compact_message(spec):
    common = {s["name"]: s["fields"] for s in spec.get("commonStructs", [])}
    return {
        "name": spec["name"],
        "versions": vrange(spec["validVersions"]),
        "flexible": vrange(spec.get("flexibleVersions", "none")),
        "fields": compact_fields(spec["fields"], common),
    }


def add_known_versions(apis):
    """Versions Kafka 4.1 serves that the message snapshot predates, described here by hand
    (each checked against Kafka 4.1's answers or its client's encoder):
    ConsumerGroupDescribe v1 (Kafka 4.0) adds the int8 MemberType (default -1) at the end of
    each member; the request is v0's."""
    entry = apis.get("69")
    if entry is None or any(l["versions"][1] >= 1 for l in entry["request"]):
        return
    for kind in ("request", "response"):
        layout = json.loads(json.dumps(entry[kind][0]))
        layout["versions"] = [0, 1]
        if kind == "response":
            groups = next(f for f in layout["fields"] if f["n"] == "groups")
            members = next(f for f in groups["f"] if f["n"] == "members")
            members["f"].append({"d": "-1", "n": "member_type", "t": "int8", "v": [1, None]})
        entry[kind] = [layout]


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "..", "shared", "kafka-protocol")
    old_dir, new_dir = os.path.join(src, "messages"), os.path.join(src, "messages-4x")
    apis, data = {}, {}
    # the 4.x specs by (API key, kind): an API may have been renamed since the snapshot
    # (74: ListClientMetricsResources is ListConfigResources from Kafka 4.1 on, KIP-1142)
    newer_specs = {}
    for fn in sorted(os.listdir(new_dir)):
        spec = load(os.path.join(new_dir, fn))
        if spec["type"] in ("request", "response"):
            newer_specs[spec["apiKey"], spec["type"]] = spec
    for fn in sorted(os.listdir(old_dir)):
        spec = load(os.path.join(old_dir, fn))
        kind = spec["type"]
        if kind in ("request", "response"):
            layouts = []
            newer = newer_specs.get((spec["apiKey"], kind))
            # The 4.x set is authoritative for the versions it covers (and for the API's
            # name); the older snapshot supplies versions 4.x dropped (still sent by old clients).
            if newer is not None:
                layouts.append(compact_message(newer))
            layouts.append(compact_message(spec))
            entry = apis.setdefault(str(spec["apiKey"]), {})
            entry[kind] = layouts
            if kind == "request":
                entry["name"] = (newer or spec)["name"][: -len("Request")]
        elif kind in ("header", "data"):
            data[spec["name"]] = compact_message(spec)
    add_known_versions(apis)
    for key, entry in apis.items():
        req = entry["request"]
        lo = min(l["versions"][0] for l in req)
        hi = max(l["versions"][1] for l in req)
        entry["versions"] = [lo, hi]
    # One line per API and per data spec, indexed by the first line: the broker parses a
    # line when its message is first used (parsing every spec took ~3 ms of a 120 ms start).
    specs, index = [], {"apis": {}, "data": {}}
    for key in sorted(apis, key=int):
        entry = apis[key]
        index["apis"][key] = {"name": entry["name"], "versions": entry["versions"], "line": len(specs) + 1}
        specs.append(entry)
    for name in sorted(data):
        index["data"][name] = {"versions": data[name]["versions"], "line": len(specs) + 1}
        specs.append(data[name])
    with open(os.path.join(ROOT, "protocol", "schema.jsonl"), "w") as f:
        for obj in [index] + specs:
            json.dump(obj, f, separators=(",", ":"), sort_keys=True)
            f.write("\n")

    rows = list(csv.DictReader(open(os.path.join(src, "errors.csv"))))
    lines = [
        '"""Kafka error codes. Generated by tools/gen_protocol.py from errors.csv; do not edit."""',
        "import enum",
        "",
        "",
        "class ErrorCode(enum.IntEnum):",
    ]
    for r in rows:
        lines.append(f"    {r['name']} = {int(r['code'])}")
    lines += ["", "", "RETRIABLE = frozenset({"]
    for r in rows:
        if r["retriable"].strip().lower() == "true":
            lines.append(f"    ErrorCode.{r['name']},")
    lines += ["})", "", "", "MESSAGES = {"]
    for r in rows:
        if r["default message"]:
            lines.append(f"    ErrorCode.{r['name']}: {r['default message']!r},")
    lines += [
        "}",
        "",
        "",
        "class KafkaError(Exception):",
        '    """An error that maps to one Kafka error code (raised below the broker layer)."""',
        "",
        "    def __init__(self, code: ErrorCode, message: str | None = None):",
        "        self.code = ErrorCode(code)",
        "        self.message = message or MESSAGES.get(self.code, self.code.name)",
        "        super().__init__(f\"{self.code.name}: {self.message}\")",
        "",
    ]
    with open(os.path.join(ROOT, "protocol", "errors.py"), "w") as f:
        f.write("\n".join(lines))
    print(f"wrote schema for {len(apis)} APIs, {len(data)} data specs, {len(rows)} error codes")


if __name__ == "__main__":
    main()
