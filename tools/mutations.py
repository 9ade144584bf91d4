#!/usr/bin/env python3
"""Named mutations of the broker's code: real bugs, put in on purpose, that the conformance
suite (or a test a mutation names) must catch.

    python tools/mutations.py --list              # the mutations, one name a line
    python tools/mutations.py --check             # every mutation still applies (seconds; no broker)
    python tools/mutations.py --only NAME         # NAME on a scratch copy: "NAME caught ..." or "NAME missed"
    python tools/mutations.py                     # all of them, then the report (docs/mutations.md)

Run it from the repository root with the project's Python (the shared venv's). A mutation is
applied to a scratch copy of this checkout (its tracked and untracked files, in a temp dir
outside the repository), never to the checkout itself; the copy runs its own code, as every
checkout does (minikafka/__init__.py). There the conformance suite runs (``-n 2`` pytest
workers by default: the machine is shared), plus the tests the mutation names. A mutation is
caught when a conformance scenario or a named test fails. ``--quick`` first runs the scenarios
a mutation lists as its likely catchers (all of them: the report names each that fails) and, only
when none fails, the whole suite up to its first failure; without ``--quick`` the whole suite
runs for every mutation (about 9 min each on the shared 2-core machine: hours for all).

A mutation names what it breaks, not where it sits: the function by its qualified name
(``UnifiedLog.append``, ``set_log_append_time``; ``handlers/produce.py::handle`` where a name is
common, the path matched by its end) and a piece of code in it, compared as parsed Python
(formatting and comments do not matter), which must occur exactly once there. Code that
moves to another file, gets reformatted or grows around the piece keeps the mutation working.
When the function is gone or the piece no longer occurs exactly once, the mutation fails
loudly (exit 2) and says where the piece is now, if anywhere: update its ``where`` or
``find`` to the code that now does the same thing, so that the mutation still breaks that
behaviour. ``--check`` (and tests/unit/test_mutations.py, which CI runs) applies every
mutation in memory, so a refactoring learns at once which anchors it moved.

The whole run first runs the suite unmutated (a scenario failing there, flaky or broken,
catches nothing), then every mutation, and writes the report (how many, which scenarios and
tests catch each, how long): docs/mutations.md, or ``--report PATH``.
"""
from __future__ import annotations

import argparse
import ast
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# the broker's code: what mutations break (the layers, top-level folders of a checkout)
CODE_DIRS = ("protocol", "storage", "coordinator", "broker")
LAYERS = ("protocol", "storage", "coordinator", "broker", "security")
CONFORMANCE = "tests/conformance/test_conformance.py"
SCENARIO_TEST = "test_scenario_matches_kafka"


@dataclass(frozen=True)
class Mutation:
    name: str
    layer: str          # protocol, storage, coordinator, broker, security
    fault: str          # the bug, as a client would meet it
    where: str          # the function (or module-level name) broken: "Class.method", "path/end.py::name"
    find: str           # code in it (statements, or an expression), exactly once
    replace: str        # what it becomes
    tests: tuple[str, ...] = ()   # tests run besides the conformance suite (pytest node ids)
    first: tuple[str, ...] = ()   # scenario name prefixes expected to catch it (--quick runs them first)


class MutationError(Exception):
    """A mutation no longer applies to the code (its function or its piece of code moved)."""


# ===================================================================== the mutations

HOUR_MS = 3_600_000
RUNTIME_TESTS = "tests/unit/test_transaction_runtime.py"
# the marker a transaction coordinator's marker round asks a partition to write
MARKER = ("Marker(topic, part, md.producer_id, md.producer_epoch, md.state == TxnState.PREPARE_COMMIT, "
          "coordinator.state_partition(md.transactional_id))")

MUTATIONS: list[Mutation] = [
    # ------------------------------------------------------------------ protocol
    Mutation("crc-not-recomputed-after-log-append-time", "protocol",
             "a LogAppendTime topic's batches are stamped without recomputing their CRC: every fetched batch "
             "is corrupt (kafka-python raises CorruptRecordError)",
             "set_log_append_time", "_U32.pack_into(buf, pos + CRC_OFFSET, compute_crc(buf, pos, size))", "pass",
             first=("produce_validation/log_append_time", "idempotence/log_append_time")),
    Mutation("corrupt-batch-accepted", "protocol",
             "a produced batch whose CRC does not match is stored (Kafka: CORRUPT_MESSAGE)",
             "validate_batch", "computed != header.crc", "False",
             first=("produce_validation/crc_mismatch",)),
    Mutation("leader-epoch-not-stamped", "protocol",
             "appended batches keep the producer's partition leader epoch (-1) instead of the leader's: "
             "consumers cannot detect log truncation (KIP-101)",
             "patch_partition_leader_epoch", "_I32.pack_into(buf, pos + PARTITION_LEADER_EPOCH_OFFSET, epoch)",
             "pass", first=("leader_epochs/",)),
    Mutation("trailing-byte-after-describe-cluster", "protocol",
             "DescribeCluster answers carry a byte after their last field (an encoder writing a field "
             "the version does not have)",
             "encode_response_parts", 'message(api_key, "response", version).encode(body, out)',
             """
             message(api_key, "response", version).encode(body, out)
             if api_key == 60:
                 out.write(b"\\x00")
             """, first=("cluster_apis/describe_cluster",)),
    Mutation("record-run-skips-header-count", "protocol",
             "in a run of alike records (the record walk's fast path) a record whose header count is not 0 "
             "passes unread: a batch no consumer can read is stored",
             "protocol/record_walk.py::_run", "if column(pos - 1) != bytes(k):\n    return -1", "pass",
             tests=("tests/unit/test_record_walk.py::test_runs_agree_with_record_by_record_parsing_whatever_byte_is_changed",)),
    Mutation("uncompressed-trailing-bytes-accepted", "protocol",
             "bytes after the last record an uncompressed batch counts are stored (Kafka: INVALID_RECORD, "
             "records still remaining)",
             "protocol/record_walk.py::walk_records", "if p != end:\n    raise _remaining()", "pass",
             first=("record_validation/",)),
    # ------------------------------------------------------------------ storage
    Mutation("stored-log-append-time-hour-early", "storage",
             "a LogAppendTime topic stores a stamp an hour before the one the Produce answer gives",
             "UnifiedLog.begin_append", "rec.set_log_append_time(target, at, now_ms)",
             f"rec.set_log_append_time(target, at, now_ms - {HOUR_MS})",
             first=("produce_validation/log_append_time", "idempotence/log_append_time", "list_offsets/log_append")),
    Mutation("last-stable-offset-one-too-high", "storage",
             "with a transaction open, the last stable offset is one past the transaction's first offset: a "
             "read_committed consumer reads the open transaction's first record",
             "UnifiedLog.last_stable_offset", "return fuo", "return fuo + 1",
             first=("read_committed/", "txn_produce/")),
    Mutation("aborted-transactions-not-listed", "storage",
             "a read_committed Fetch lists no aborted transactions: the consumer delivers aborted records",
             "UnifiedLog.read", "self._aborted_for_read(fetch_offset, i, r) if include_aborted else None",
             "[] if include_aborted else None", first=("read_committed/",)),
    Mutation("duplicate-batch-not-recognised", "storage",
             "an idempotent producer's retry of a batch already written is not recognised as a duplicate",
             "analyze_append", "dup = entry.find_duplicate(h.producer_epoch, h.base_sequence, h.last_sequence)",
             "dup = None", first=("idempotence/",)),
    Mutation("stale-epoch-produce-gets-producer-fenced", "storage",
             "a produce with an old producer epoch gets PRODUCER_FENCED (fatal for the client) instead of "
             "INVALID_PRODUCER_EPOCH (Kafka 2.7+: abortable)",
             "_check_producer_epoch", "ErrorCode.INVALID_PRODUCER_EPOCH", "ErrorCode.PRODUCER_FENCED",
             first=("idempotence/", "txn_produce/")),
    Mutation("delete-records-to-high-watermark-refused", "storage",
             "DeleteRecords up to the high watermark (every record) is refused with OFFSET_OUT_OF_RANGE",
             "UnifiedLog.delete_records_before", "offset > self.high_watermark", "offset >= self.high_watermark",
             first=("log_start/",)),
    Mutation("log-start-offset-not-checkpointed", "storage",
             "a DeleteRecords is answered before its new log start offset is written to the checkpoint: "
             "after a kill -9 the deleted records are served again",
             "LogManager._on_log_start_offset_change", "self._checkpoint_log_start_offsets(d)", "pass",
             first=("log_start/kill",)),
    # ------------------------------------------------------------------ coordinator (transactions)
    Mutation("marker-written-to-the-wrong-partition", "coordinator",
             "a transaction's markers all go to partition 0 of each topic: partition 1 stays unstable, "
             "partition 0 gets two",
             "MarkerRound.next_wave", MARKER, MARKER.replace("(topic, part,", "(topic, 0,"),
             first=("txn_flow/", "markers/")),
    Mutation("abort-writes-commit-markers", "coordinator",
             "an aborted transaction's markers say COMMIT: read_committed consumers deliver aborted records",
             "MarkerRound.next_wave", MARKER,
             MARKER.replace("md.state == TxnState.PREPARE_COMMIT", "True"), first=("txn_flow/", "read_committed/")),
    Mutation("marker-coordinator-epoch-zero", "coordinator",
             "markers carry coordinator epoch 0 instead of the state partition's leader epoch",
             "TransactionRuntime._write_markers", "self.coordinator_epoch(markers[i].state_partition)", "0",
             first=("markers/",)),
    Mutation("init-producer-id-bumps-epoch-by-two", "coordinator",
             "InitProducerId of a known transactional id bumps its epoch by two",
             "TransactionCoordinator.init_producer_id",
             "new = dict(reset, producer_epoch=md.producer_epoch + 1, last_producer_epoch=NO_PRODUCER_EPOCH)",
             "new = dict(reset, producer_epoch=md.producer_epoch + 2, last_producer_epoch=NO_PRODUCER_EPOCH)",
             first=("txn/init/",)),
    Mutation("end-txn-v2-without-epoch-bump", "coordinator",
             "a transactions V2 commit or abort (EndTxn v5) keeps the producer epoch: a zombie of the same "
             "epoch is not fenced",
             "TransactionCoordinator._end_with_bump", "bumped = md.producer_epoch + 1", "bumped = md.producer_epoch",
             first=("txn_v2/",)),
    Mutation("zombie-end-txn-gets-invalid-producer-epoch", "coordinator",
             "EndTxn (v0-4) from a fenced producer gets INVALID_PRODUCER_EPOCH instead of PRODUCER_FENCED",
             "TransactionCoordinator.end_txn",
             "if md.producer_epoch != epoch:\n    raise TxnError(ErrorCode.PRODUCER_FENCED)",
             "if md.producer_epoch != epoch:\n    raise TxnError(ErrorCode.INVALID_PRODUCER_EPOCH)",
             first=("txn/init/", "txn_flow/")),
    Mutation("commit-point-not-fsynced", "coordinator",
             "with log.flush.interval.messages=1 the PrepareCommit record is not fsynced before EndTxn is "
             "answered: a power cut undoes a commit the client was told about",
             "TransactionRuntime.run", "await self.fsync.flush(lg, lg.log_end_offset)", "pass",
             tests=(RUNTIME_TESTS + "::test_a_commit_point_is_durable_before_it_takes_effect",)),
    Mutation("commit-point-applied-before-fsync", "coordinator",
             "the PrepareCommit decision takes effect (markers may go out, EndTxn is answered) before its "
             "record is fsynced",
             "TransactionRuntime.run", "await self.fsync.flush(lg, lg.log_end_offset)",
             """
             self._apply(result)
             await self.fsync.flush(lg, lg.log_end_offset)
             return
             """, tests=(RUNTIME_TESTS + "::test_a_commit_point_is_durable_before_it_takes_effect",)),
    # ------------------------------------------------------------------ coordinator (groups)
    Mutation("stale-generation-offset-commit-accepted", "coordinator",
             "an OffsetCommit of a member at an old generation is accepted (Kafka: ILLEGAL_GENERATION)",
             "validate_commit", "if generation_id != g.generation_id:\n    return ErrorCode.ILLEGAL_GENERATION", "pass",
             first=("classic/", "offsets/")),
    Mutation("aborted-transactional-offsets-applied", "coordinator",
             "offsets committed in a transaction that aborts become the group's committed offsets",
             "OffsetManager.complete_transaction", "pending = by_producer.pop(producer_id)",
             "pending = by_producer.pop(producer_id)\ncommit = True",
             first=("offsets/txn", "txn_flow/")),
    Mutation("require-stable-ignored", "coordinator",
             "OffsetFetch with require_stable answers an offset a pending transaction is about to replace "
             "(Kafka: UNSTABLE_OFFSET_COMMIT)",
             "OffsetManager.fetch", "require_stable and self.has_pending(group_id, tp)", "False",
             first=("offsets/txn", "txn_flow/")),
    Mutation("consumer-member-greater-epoch-accepted", "coordinator",
             "a KIP-848 heartbeat with a member epoch greater than the coordinator's is accepted "
             "(Kafka: FENCED_MEMBER_EPOCH)",
             "_find_member", "member_epoch > m.member_epoch", "False", first=("cg/",)),
    # ------------------------------------------------------------------ broker
    Mutation("api-versions-without-end-txn-produce-v3", "broker",
             "ApiVersions leaves out EndTxn and caps Produce at v3 (kafka-python's transactional producer "
             "refuses the broker)",
             "api_versions_body", 'keys.append({"api_key": key, "min_version": lo, "max_version": hi})',
             """
             if key != 26:
                 keys.append({"api_key": key, "min_version": lo, "max_version": min(hi, 3) if key == 0 else hi})
             """, first=("cluster_apis/api_versions",)),
    Mutation("every-listener-advertises-plaintext", "broker",
             "Metadata, FindCoordinator and DescribeCluster name the PLAINTEXT listener's address on every "
             "listener: SASL and SSL clients are sent to the wrong port",
             "Context.advertised_address", "self.advertised.get(listener_name)", 'self.advertised.get("PLAINTEXT")',
             first=("sec/ops/", "sec/ssl/")),
    Mutation("produce-answer-log-append-time-hour-early", "broker",
             "the Produce answer's log_append_time_ms is an hour before the stamp stored and fetched",
             "handlers/produce.py::handle", "res.log_append_time_ms",
             f"res.log_append_time_ms - {HOUR_MS} if res.log_append_time_ms >= 0 else -1",
             first=("produce_validation/log_append_time", "idempotence/log_append_time")),
    Mutation("read-committed-fetch-reads-past-lso", "broker",
             "a read_committed Fetch returns records up to the high watermark, open transactions' included",
             "handlers/fetch.py::_read_all",
             "lg.read(fetch_offset, max(limit, 0), max_offset=lso if committed else hw, min_one=total == 0, "
             "include_aborted=committed)",
             "lg.read(fetch_offset, max(limit, 0), max_offset=hw, min_one=total == 0, include_aborted=committed)",
             first=("read_committed/",)),
    Mutation("list-offsets-read-committed-latest-is-high-watermark", "broker",
             "ListOffsets latest for read_committed answers the high watermark instead of the last stable offset",
             "handlers/list_offsets.py::handle", "lg.last_stable_offset if isolation == 1 else lg.high_watermark",
             "lg.high_watermark", first=("read_committed/", "txn_produce/")),
    Mutation("produce-answered-before-flush", "broker",
             "with flush.messages reached, a Produce is answered before its records are fsynced",
             "handlers/produce.py::handle", "await ctx.replicas.flush_log(lg, res.last_offset + 1)", "pass",
             tests=("tests/integration/test_flush.py::test_flush_messages_ack_waits_for_a_slow_fsync",)),
    # ------------------------------------------------------------------ security
    Mutation("deny-acl-ignored", "security",
             "a DENY ACL does not override an ALLOW ACL of the same principal and resource",
             "Authorizer.authorize", "if b.permission == DENY and b.operation in (operation, ALL):\n    return False",
             "pass", first=("acl/",)),
    Mutation("allow-read-does-not-imply-describe", "security",
             "ALLOW READ (or WRITE, DELETE, ALTER) no longer implies DESCRIBE on the same resource",
             "IMPLIED_BY", "{DESCRIBE: (READ, WRITE, DELETE, ALTER), DESCRIBE_CONFIGS: (ALTER_CONFIGS,)}",
             "{DESCRIBE_CONFIGS: (ALTER_CONFIGS,)}", first=("acl/", "sec/")),
    Mutation("list-offsets-without-authorization", "security",
             "ListOffsets answers a principal without DESCRIBE on the topic (Kafka: TOPIC_AUTHORIZATION_FAILED)",
             "handlers/list_offsets.py::handle", "conn.authorize(acl.DESCRIBE, acl.TOPIC, t.name)", "True",
             first=("acl/", "sec/")),
    Mutation("sasl-plain-any-password", "security",
             "SASL/PLAIN logs a known user in with any password",
             "PlainServer.evaluate", "expected is None or not ok", "expected is None",
             first=("cluster_apis/sasl/",)),
    Mutation("ssl-principal-mapping-rules-ignored", "security",
             "ssl.principal.mapping.rules are not applied: a client certificate's principal is its whole "
             "distinguished name (User:CN=alice) and alice's ACLs do not apply",
             "principal_from_cert", 'apply_mapping_rules(rules or [None], ",".join(rdns))', '",".join(rdns)',
             first=("sec/ssl/",)),
]


def by_name(name: str) -> Mutation:
    for m in MUTATIONS:
        if m.name == name:
            return m
    raise SystemExit(f"no mutation named {name!r} (--list lists them)")


# ===================================================================== locating code

@dataclass
class Definition:
    path: str           # relative to the root
    qualname: str
    node: ast.AST       # FunctionDef, AsyncFunctionDef, ClassDef, or a module-level Assign


@dataclass
class Source:
    path: str
    text: str
    tree: ast.Module
    definitions: list[Definition] = field(default_factory=list)


def load_sources(root: Path) -> dict[str, Source]:
    out = {}
    for d in CODE_DIRS:
        for p in sorted((root / d).rglob("*.py")):
            rel = p.relative_to(root).as_posix()
            text = p.read_text(encoding="utf-8")
            src = Source(rel, text, ast.parse(text, rel))
            _collect(src, src.tree.body, "")
            out[rel] = src
    return out


def _collect(src: Source, body: list, prefix: str) -> None:
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            q = prefix + node.name
            src.definitions.append(Definition(src.path, q, node))
            _collect(src, node.body, q + ".")
        elif not prefix and isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    src.definitions.append(Definition(src.path, t.id, node))


def _dump(node: ast.AST) -> str:
    return ast.dump(node, include_attributes=False)


def _pattern(find: str) -> tuple[str, list[str]]:
    """-> ("statements", [dumps]) or ("expression", [dump]) of the code to find."""
    try:
        body = ast.parse(textwrap.dedent(find).strip()).body
    except SyntaxError as e:
        raise MutationError(f"its find= is not Python: {e}") from None
    if len(body) == 1 and isinstance(body[0], ast.Expr):
        return "expression", [_dump(body[0].value)]
    return "statements", [_dump(s) for s in body]


def _bodies(node: ast.AST):
    for child in ast.walk(node):
        for attr in ("body", "orelse", "finalbody"):
            seq = getattr(child, attr, None)
            if isinstance(seq, list) and seq and isinstance(seq[0], ast.stmt):
                yield seq
        if isinstance(child, ast.Match):
            for case in child.cases:
                yield case.body


def occurrences(definition: Definition, find: str) -> list[tuple[ast.AST, ast.AST]]:
    """(first node, last node) of every occurrence of ``find`` in the definition."""
    kind, dumps = _pattern(find)
    found = []
    if kind == "expression":
        # an expression that is a whole statement (a call on its own) is replaced as a statement
        statements = {id(n.value): n for n in ast.walk(definition.node) if isinstance(n, ast.Expr)}
        for node in ast.walk(definition.node):
            if isinstance(node, ast.expr) and _dump(node) == dumps[0]:
                whole = statements.get(id(node), node)
                found.append((whole, whole))
        return found
    seen = set()
    for seq in _bodies(definition.node):
        if id(seq) in seen:
            continue
        seen.add(id(seq))
        stmts = [_dump(s) for s in seq]
        for i in range(len(stmts) - len(dumps) + 1):
            if stmts[i:i + len(dumps)] == dumps:
                found.append((seq[i], seq[i + len(dumps) - 1]))
    return found


def _where(where: str) -> tuple[str | None, str]:
    path, sep, qualname = where.rpartition("::")
    return (path if sep else None), qualname


def locate(m: Mutation, sources: dict[str, Source]) -> tuple[Source, Definition, tuple]:
    """The one place ``m`` applies: (source, definition, (first node, last node)), or MutationError
    saying what is there instead."""
    path, qualname = _where(m.where)
    # "Class.method" or "method" alone: the qualified name or its end (a class renamed or added
    # around a function keeps it found)
    defs = [d for s in sources.values() for d in s.definitions
            if (d.qualname == qualname or d.qualname.endswith("." + qualname))
            and (path is None or d.path.endswith(path))]
    hits = [(d, occ) for d in defs for occ in occurrences(d, m.find)]
    if len(hits) == 1:
        d, occ = hits[0]
        return sources[d.path], d, occ
    piece = " ".join(textwrap.dedent(m.find).split())
    if len(hits) > 1:
        where = ", ".join(f"{d.path}:{occ[0].lineno}" for d, occ in hits)
        raise MutationError(f"`{piece}` occurs {len(hits)} times in {m.where} ({where}): make find= say which")
    elsewhere = [f"{d.qualname} ({d.path}:{occ[0].lineno})" for s in sources.values() for d in s.definitions
                 if isinstance(d.node, (ast.FunctionDef, ast.AsyncFunctionDef)) for occ in occurrences(d, m.find)]
    if not defs:
        similar = sorted({f"{d.qualname} ({d.path})" for s in sources.values() for d in s.definitions
                          if d.qualname.rsplit(".", 1)[-1] == qualname.rsplit(".", 1)[-1]})
        msg = f"no function {m.where} in {', '.join(CODE_DIRS)}"
        if similar:
            msg += f"; of that name: {', '.join(similar[:6])}"
    else:
        msg = (f"`{piece}` is not in {m.where} "
               f"({', '.join(f'{d.path}:{d.node.lineno}' for d in defs)})")
    if elsewhere:
        msg += f"; the code is now in {', '.join(elsewhere[:6])}"
    raise MutationError(msg + ". Point where=/find= at the code that now does this")


def mutated_source(m: Mutation, sources: dict[str, Source]) -> tuple[str, str, int]:
    """-> (path, the mutated text of that file, line) ; MutationError if it does not apply."""
    src, _, (first, last) = locate(m, sources)
    data = src.text.encode("utf-8")
    starts = [0]
    for line in data.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    begin = starts[first.lineno - 1] + first.col_offset
    end = starts[last.end_lineno - 1] + last.end_col_offset
    replacement = textwrap.dedent(m.replace).strip("\n")
    if isinstance(first, ast.expr):
        replacement = "(" + " ".join(replacement.split("\n")) + ")"
    else:
        indent = data[starts[first.lineno - 1]:begin].decode("utf-8")
        if indent.strip():
            indent = " " * len(indent)
        replacement = ("\n" + indent).join(replacement.split("\n"))
    text = (data[:begin] + replacement.encode("utf-8") + data[end:]).decode("utf-8")
    try:
        tree = ast.parse(text, src.path)
    except SyntaxError as e:
        raise MutationError(f"the mutated {src.path} is not Python: {e}") from None
    if _dump(tree) == _dump(src.tree):
        raise MutationError(f"replace= changes nothing in {src.path}")
    return src.path, text, first.lineno


def check_all(mutations, root: Path = ROOT) -> list[str]:
    """Why each mutation that does not apply does not ("NAME: reason"); [] when all apply."""
    sources = load_sources(root)
    problems = []
    for m in mutations:
        try:
            mutated_source(m, sources)
        except MutationError as e:
            problems.append(f"{m.name}: {e}")
    return problems


# ===================================================================== running the suite

@dataclass
class Outcome:
    name: str
    status: str                       # caught, missed, error
    catchers: list[str]               # failing scenarios (by name) and tests (node ids), first first
    first_message: str = ""
    seconds: float = 0.0
    detail: str = ""
    load: float = 0.0                 # the machine's 1-min load average when the run ended


def scratch_copy(root: Path, label: str) -> Path:
    """A copy of the checkout's files (tracked and untracked, not ignored) outside the repository."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                            capture_output=True, check=True).stdout.decode().split("\0")
    dest = Path(tempfile.mkdtemp(prefix=f"minikafka-mutant-{label}-"))
    for rel in filter(None, listed):
        src = root / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def _scenario_nodes(copy: Path, prefixes) -> list[str]:
    golden = copy / "tests" / "conformance" / "golden"
    names = sorted(p.relative_to(golden).as_posix()[:-5] for p in golden.rglob("*.json"))
    return [f"{CONFORMANCE}::{SCENARIO_TEST}[{n}]" for n in names if any(n.startswith(p) for p in prefixes)]


def run_pytest(copy: Path, targets: list[str], workers: int, timeout_s: float, stop_first: bool, log_path: Path
               ) -> tuple[int | None, list[tuple[str, str]]]:
    """pytest in the copy -> (exit code or None on timeout, [(failed test, its message)] in order)."""
    junit = copy / ".mutation-junit.xml"
    cmd = [sys.executable, "-m", "pytest", *targets, "-q", "-p", "no:cacheprovider", f"--junitxml={junit}"]
    if workers > 0:
        cmd += ["-n", str(workers)]
    if stop_first:
        cmd += ["--maxfail=1"]
    env = dict(os.environ, PYTHONPATH=str(copy))
    with open(log_path, "ab") as out:
        proc = subprocess.Popen(cmd, cwd=copy, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            code = proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            code = None
    return code, _failures(junit)


def _failures(junit: Path) -> list[tuple[str, str]]:
    if not junit.exists():
        return []
    out = []
    for case in ET.parse(junit).iter("testcase"):
        bad = case.find("failure")
        if bad is None:
            bad = case.find("error")
        if bad is None:
            continue
        name = case.get("name", "")
        scenario = re.fullmatch(rf"{SCENARIO_TEST}\[(.+)\]", name)
        test = scenario.group(1) if scenario else f"{case.get('classname', '').replace('.', '/')}.py::{name}"
        out.append((test, _first_line(bad.get("message") or bad.text or "")))
    return out


def _first_line(message: str) -> str:
    """The first mismatch of a conformance failure (scenario, step, field, Kafka's value and
    ours), else the message's first line."""
    lines = [ln.strip() for ln in message.splitlines() if ln.strip()]
    for ln in lines:
        if ", step " in ln:
            return ln
    return lines[0][:300] if lines else ""


def run_mutation(m: Mutation | None, workers: int, quick: bool, timeout_s: float, keep: bool,
                 ignore: set[str] = frozenset()) -> Outcome:
    """Apply ``m`` (None: nothing, the baseline) to a scratch copy and run the suite there."""
    name = m.name if m else "baseline"
    copy = scratch_copy(ROOT, name)
    log_path = Path(str(copy) + ".log")
    t0 = time.monotonic()
    try:
        if m is not None:
            path, text, _ = mutated_source(m, load_sources(copy))
            (copy / path).write_text(text, encoding="utf-8")
        failures: list[tuple[str, str]] = []
        code: int | None = 0
        if quick and m is not None:
            # the likely catchers all run (a few dozen scenarios): the report names each that fails
            first = _scenario_nodes(copy, m.first)
            if first or m.tests:
                code, failures = run_pytest(copy, first + list(m.tests), workers, timeout_s, False, log_path)
        if not [f for f in failures if f[0] not in ignore]:
            code, failures = run_pytest(copy, [CONFORMANCE, *m.tests] if m else [CONFORMANCE], workers, timeout_s,
                                        quick, log_path)
        catchers = [(t, msg) for t, msg in failures if t not in ignore]
        seconds, load = time.monotonic() - t0, os.getloadavg()[0]
        if catchers:
            return Outcome(name, "caught", [t for t, _ in catchers], catchers[0][1], seconds, load=load)
        if code is None:
            return Outcome(name, "error", [], seconds=seconds, load=load,
                           detail=f"timed out after {timeout_s:.0f} s; log {log_path}")
        if code not in (0, 1):
            return Outcome(name, "error", [], seconds=seconds, load=load,
                           detail=f"pytest exit code {code}; log {log_path}")
        return Outcome(name, "missed", [], seconds=seconds, load=load)
    finally:
        if not keep:
            shutil.rmtree(copy, ignore_errors=True)
            if log_path.exists():
                log_path.unlink()


def describe(o: Outcome) -> str:
    if o.status == "caught":
        more = f" (+{len(o.catchers) - 1} more)" if len(o.catchers) > 1 else ""
        return f"{o.name} caught by {o.catchers[0]}{more}: {o.first_message}"
    if o.status == "missed":
        return f"{o.name} missed"
    return f"{o.name} error: {o.detail}"


# ===================================================================== the report

def write_report(path: Path, outcomes: list[Outcome], baseline: Outcome, workers: int, total_s: float,
                 quick: bool, command: str) -> None:
    caught = sum(o.status == "caught" for o in outcomes)
    by_name = {m.name: m for m in MUTATIONS}
    loads = [o.load for o in [baseline, *outcomes]]
    how = ("`--quick`: each mutation's likely scenarios (its `first=` prefixes) and named tests all ran, "
           "and the whole suite, up to its first failure, only where none of them failed; so a mutation's "
           "catchers are those among its likely scenarios (others may catch it too)" if quick else
           "the whole conformance suite ran for every mutation: its catchers are every scenario that failed")
    lines = [
        "# Mutation report: does the conformance suite catch real bugs?",
        "",
        "Written by `tools/mutations.py` (run it from the repository root: `.venv/bin/python tools/mutations.py`;",
        "`--only NAME` for one, `--list` for the names). Each mutation is a bug put into the broker's code",
        "on a scratch copy; the conformance suite (and the tests a mutation names) then runs against it.",
        "A mutation is caught when a scenario or a named test fails. The tool is not run in CI (one run",
        "is the suite once per mutation); tests/unit/test_mutations.py, which CI runs, checks that every",
        "mutation still applies to the code.",
        "",
        f"**{caught} of {len(outcomes)} mutations caught.** {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"`-n {workers}`, {total_s / 60:.0f} min in all (the unmutated suite: {baseline.seconds / 60:.1f} min"
        + (f", failing there and not counted: {', '.join(baseline.catchers)}" if baseline.catchers else "")
        + f"); `{command}` at niceness {os.nice(0)}, on a shared 2-core machine, 1-min load average "
        f"{min(loads):.1f} to {max(loads):.1f} (sampled as each run ended): times are indicative. Mode: {how}.",
        "",
        "| mutation | layer | the bug | caught by | min |",
        "|---|---|---|---|---:|",
    ]
    for o in outcomes:
        m = by_name[o.name]
        if o.status == "caught":
            shown = ", ".join(f"`{c}`" for c in o.catchers[:4])
            if len(o.catchers) > 4:
                shown += f" and {len(o.catchers) - 4} more"
            how = f"{len(o.catchers)}: {shown}"
        else:
            how = f"**{o.status.upper()}** {o.detail}"
        lines.append(f"| `{o.name}` | {m.layer} | {m.fault} | {how} | {o.seconds / 60:.1f} |")
    lines += ["", "The first mismatch each mutation caused:", ""]
    for o in outcomes:
        if o.status == "caught":
            lines.append(f"- `{o.name}`: {o.first_message}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


# ===================================================================== command line

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--list", action="store_true", help="print the mutations' names, one a line")
    ap.add_argument("--check", action="store_true", help="check that every mutation applies; run nothing")
    ap.add_argument("--only", metavar="NAME", help="run one mutation")
    ap.add_argument("-n", type=int, default=2, metavar="WORKERS", help="pytest-xdist workers (default 2; 0: none)")
    ap.add_argument("--quick", action="store_true",
                    help="run a mutation's likely catchers first; the whole suite (to its first failure) only if none fails")
    ap.add_argument("--timeout", type=float, default=45, metavar="MIN", help="per run of the suite (default 45)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch copies and their logs")
    ap.add_argument("--report", type=Path, default=ROOT / "docs" / "mutations.md",
                    help="where the whole run writes its report (default docs/mutations.md)")
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join(m.name for m in MUTATIONS))
        return 0
    chosen = [by_name(args.only)] if args.only else MUTATIONS
    problems = check_all(chosen)
    if problems:
        for p in problems:
            print(f"mutation no longer applies: {p}", file=sys.stderr)
        return 2
    if args.check:
        print(f"{len(chosen)} mutations apply")
        return 0
    timeout_s = args.timeout * 60
    if args.only:
        o = run_mutation(chosen[0], args.n, args.quick, timeout_s, args.keep)
        print(describe(o), flush=True)
        return {"caught": 0, "missed": 1}.get(o.status, 2)
    t0 = time.monotonic()
    baseline = run_mutation(None, args.n, False, timeout_s, args.keep)
    print(f"baseline (unmutated): {len(baseline.catchers)} failing in {baseline.seconds / 60:.1f} min"
          + (f": {', '.join(baseline.catchers)} (not counted as catching anything)" if baseline.catchers else ""),
          flush=True)
    outcomes = []
    for m in chosen:
        o = run_mutation(m, args.n, args.quick, timeout_s, args.keep, ignore=set(baseline.catchers))
        outcomes.append(o)
        print(describe(o), f"({o.seconds / 60:.1f} min)", flush=True)
    write_report(args.report, outcomes, baseline, args.n, time.monotonic() - t0, args.quick,
                 " ".join(["python tools/mutations.py", *(sys.argv[1:] if argv is None else argv)]))
    missed = [o.name for o in outcomes if o.status != "caught"]
    print(f"{len(outcomes) - len(missed)} of {len(outcomes)} caught; report: {args.report}"
          + (f"; not caught: {', '.join(missed)}" if missed else ""))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
