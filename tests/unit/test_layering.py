"""Imports flow one way: broker -> coordinator -> storage -> protocol (DESIGN.md).
Only broker/ knows trio; protocol/ touches no sockets or files. No class is assembled from
mixins, and no module imports another module's private (underscore) names.

Each layer is a top-level folder of the repository and the subpackage ``minikafka.<folder>``
once installed; every import names the layer by its full name (``minikafka.storage.log``) or
is relative inside its own layer. minikafka.testing (the pytest plugin) starts the broker as
a subprocess: of the broker layer it imports only the wire client. The console (console/,
``minikafka.console``) is a client application: it uses Kafka's protocol, the wire client and
the transaction log's record decoder, nothing of the broker, its storage or its
coordinators' logic; and the broker never imports it. The operator commands over the wire
(admin/, ``minikafka.admin``) are clients too: the broker never imports them."""
from __future__ import annotations

import ast
import gc
import importlib.util
import tomllib
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "minikafka"
LAYERS = ["broker", "coordinator", "storage", "protocol"]  # top to bottom
# every folder that is a subpackage of minikafka: pyproject's package-dir (the layers, pipeline, console)
FOLDERS = [f for f in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"].values()
           if f != PACKAGE]
ALLOWED = {layer: set(LAYERS[i:]) for i, layer in enumerate(LAYERS)}


def module_name(path: Path) -> str:
    """``broker/handlers/fetch.py`` -> ``minikafka.broker.handlers.fetch``."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    if parts[0] == PACKAGE:
        parts = parts[1:]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join((PACKAGE, *parts))


def imports_of(path: Path) -> set[str]:
    """Every module ``path`` imports, relative imports resolved to full names."""
    tree = ast.parse(path.read_text(), str(path))
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            out.add(importlib.util.resolve_name("." * node.level + (node.module or ""), package)
                    if node.level else node.module)
    return out


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == PACKAGE and len(parts) > 1 and parts[1] in LAYERS else None


def python_files(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


CODE = [path for folder in FOLDERS + [PACKAGE] for path in python_files(folder)]


@pytest.mark.parametrize("layer", LAYERS)
def test_imports_flow_downward(layer):
    bad = []
    for path in python_files(layer):
        for mod in imports_of(path):
            other = layer_of(mod)
            if other and other not in ALLOWED[layer]:
                bad.append(f"{path.relative_to(ROOT)} imports {mod}")
    assert not bad


@pytest.mark.parametrize("layer", ["coordinator", "storage", "protocol"])
def test_only_broker_knows_trio(layer):
    users = [str(p.relative_to(ROOT)) for p in python_files(layer) if "trio" in
             {m.split(".")[0] for m in imports_of(p)}]
    assert not users


def test_protocol_is_sans_io():
    for path in python_files("protocol"):
        mods = {m.split(".")[0] for m in imports_of(path)}
        assert not mods & {"socket", "trio", "asyncio", "selectors"}, path


def _outside(mods: set[str], *own: str) -> set[str]:
    """The modules of minikafka in ``mods`` other than protocol's and the ``own`` packages'."""
    return {m for m in mods if m.startswith(f"{PACKAGE}.") and m.split(".")[1] not in ("protocol", *own)}


def test_the_pytest_plugin_runs_the_broker_as_a_subprocess():
    assert _outside(imports_of(ROOT / PACKAGE / "testing.py")) == {"minikafka.admin.wire"}


# what the console may import besides protocol (client-side code, the transaction log's decoder)
CONSOLE_MAY_IMPORT = {"minikafka.admin.wire", "minikafka.coordinator.transaction.state"}
# what the operator commands may import of the broker: the definitions both sides must read
# alike (a properties file, SCRAM, ACL and quota names, feature levels), none of its machinery
ADMIN_MAY_IMPORT = {"minikafka.broker.config", "minikafka.broker.security.sasl",
                    "minikafka.broker.security.authorizer", "minikafka.broker.quotas", "minikafka.broker.features"}


def _users_of(package: str) -> list[str]:
    return [f"{p.relative_to(ROOT)} imports {m}" for layer in LAYERS for p in python_files(layer)
            for m in imports_of(p) if m == f"{PACKAGE}.{package}" or m.startswith(f"{PACKAGE}.{package}.")]


def test_the_console_is_a_client():
    inside = set()
    for path in python_files("console"):
        inside |= _outside(imports_of(path), "console")
    assert inside == CONSOLE_MAY_IMPORT, inside
    assert not _users_of("console")


def test_the_operator_commands_are_clients():
    inside = set()
    for path in python_files("admin"):
        inside |= _outside(imports_of(path), "admin")
    assert inside <= ADMIN_MAY_IMPORT, inside - ADMIN_MAY_IMPORT
    assert not _users_of("admin")


def test_one_import_name():
    """No module imports a layer by its folder name (``import broker``): installed, only
    ``minikafka`` exists."""
    bad = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if rel.parts[0].startswith(".") or rel.parts[0] in ("build", "venv") or "golden" in rel.parts:
            continue
        for mod in imports_of(path):
            if mod.split(".")[0] in FOLDERS:
                bad.append(f"{rel} imports {mod}")
    assert not bad


def test_no_class_is_assembled_from_mixins():
    """A class has one base at most (an interface, an exception, a dataclass's parent): what it
    needs from another class it holds as an object."""
    bad = []
    for path in CODE:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ClassDef):
                continue
            bases = [ast.unparse(b) for b in node.bases]
            if len(bases) > 1 or node.name.endswith("Mixin") or any(b.endswith("Mixin") for b in bases):
                bad.append(f"{path.relative_to(ROOT)}: class {node.name}({', '.join(bases)})")
    assert not bad


def test_no_module_imports_private_names():
    """``from x import _name`` reaches into another module's insides: what a module offers
    others has a public name."""
    bad = []
    for path in CODE:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module != "__future__":
                private = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
                if private:
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {', '.join(private)}")
    assert not bad


def _top_level_imports(path: Path, names: set[str]) -> set[str]:
    """The project modules ``path`` imports outside any function (``from pkg import mod``
    counts ``pkg.mod`` when that is a module)."""
    tree = ast.parse(path.read_text(), str(path))
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in tree.body:
        for sub in ast.walk(node):
            if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                break
            out |= _imported(sub, package, names)
    return out & names


def _imported(node, package: str, names: set[str]) -> set[str]:
    if isinstance(node, ast.Import):
        return {a.name for a in node.names}
    if isinstance(node, ast.ImportFrom):
        base = importlib.util.resolve_name("." * node.level + (node.module or ""), package) \
            if node.level else node.module
        return {base} | {f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in names}
    return set()


def test_no_import_is_deferred_to_dodge_a_cycle():
    """An import inside a function is fine for start-up time, never to hide a cycle: no module
    imports, inside a function, a module that (through imports at the top of modules) imports it."""
    modules = {module_name(p): p for p in CODE}
    names = set(modules)
    graph = {m: _top_level_imports(p, names) for m, p in modules.items()}

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            m = todo.pop()
            if m == goal:
                return True
            if m not in seen:
                seen.add(m)
                todo.extend(graph.get(m, ()))
        return False

    bad = []
    for m, path in modules.items():
        package = m if path.name == "__init__.py" else m.rpartition(".")[0]
        for fn in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(fn):
                    for target in _imported(node, package, names) & names:
                        if reaches(target, m):
                            bad.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {target}, which imports it")
    assert not bad


def test_every_layer_is_a_packaged_folder():
    assert set(LAYERS) <= set(FOLDERS), FOLDERS


def test_requests_are_served_with_the_context_not_the_broker():
    """Handlers and the server are given the Context (broker/context.py), the parts requests are
    served with: none of them imports the Broker (broker/broker.py builds, loads and starts the
    parts; only broker/main.py uses it) or the LogManager, and none reaches storage through a
    ``.logs`` attribute or the Broker through ``conn.broker``: logs through the ReplicaManager,
    topics through the TopicManager, log dirs through the LogDirMover."""
    broker_module, storage = f"{PACKAGE}.broker.broker", f"{PACKAGE}.storage.log_manager"
    served = python_files("broker/handlers") + [ROOT / "broker" / f for f in ("server.py", "context.py")]
    bad = []
    for path in served:
        bad += [f"{path.relative_to(ROOT)} imports {m}" for m in imports_of(path) & {broker_module, storage}]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Attribute) and (node.attr == "logs" or (
                    node.attr == "broker" and isinstance(node.value, ast.Name) and node.value.id == "conn")):
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno} reaches .{node.attr}")
    assert not bad
    importers = {str(p.relative_to(ROOT)) for p in python_files("broker") if broker_module in imports_of(p)}
    assert importers == {"broker/main.py"}


def test_test_modules_have_unique_names():
    """pytest imports a test folder without __init__.py by the file's basename (rootdir
    mode): two such files of one name fail collection on a clean checkout ("import file
    mismatch"), while a warm __pycache__ can hide it locally."""
    seen: dict[str, Path] = {}
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        if (path.parent / "__init__.py").exists():
            continue
        assert path.name not in seen, f"{path.relative_to(ROOT)} and {seen[path.name].relative_to(ROOT)}: rename one"
        seen[path.name] = path


# ----------------------------------------------------------------- at run time
def _reachable(roots):
    """Every object reachable from ``roots`` through references, classes and modules left out
    (shared code, not state); for a function its closure, not its module's globals."""
    seen, todo = set(), list(roots)
    while todo:
        o = todo.pop()
        if id(o) in seen or isinstance(o, (type, types.ModuleType)):
            continue
        seen.add(id(o))
        yield o
        if isinstance(o, types.FunctionType):
            todo.extend(c.cell_contents for c in o.__closure__ or () if c.cell_contents is not None)
        elif isinstance(o, types.MethodType):
            todo.append(o.__self__)
        elif not isinstance(o, types.BuiltinFunctionType):
            todo.extend(gc.get_referents(o))


def _of_broker(o) -> bool:
    """An object of the broker layer: an instance of one of its classes, one of its functions
    (a lambda, a callback) or a method of one of its objects."""
    if isinstance(o, types.MethodType):
        o = o.__func__
    module = o.__module__ if isinstance(o, types.FunctionType) else type(o).__module__
    return (module or "").startswith(f"{PACKAGE}.broker")


def test_storage_and_coordinators_hold_nothing_of_the_broker(tmp_path):
    """Storage and the coordinators never call up into broker/: once a broker has run a
    transaction with offsets, a classic group and a consumer group, nothing reachable from the
    LogManager, its logs, the transaction coordinator or the group coordinator is a broker-layer
    object (no Broker, no callback, no lambda closing over one). The one notification, a
    transaction completed, goes the other way: the ReplicaManager, writing a marker to
    __consumer_offsets, tells the group coordinator."""
    trio = pytest.importorskip("trio")
    from minikafka.broker.broker import Broker
    from minikafka.broker.config import BrokerConfig
    from minikafka.broker.replica_manager import TransactionSupportedOperation
    from minikafka.coordinator.group import OffsetValue
    from minikafka.protocol import records as rec

    b = Broker(BrokerConfig.load(None, [f"log.dirs={tmp_path}", "listeners=PLAINTEXT://127.0.0.1:0"]))
    b.load()
    try:
        b.ctx.topics.create("t", 2)
        groups = b.ctx.group_coordinator

        async def work():
            pid, epoch = await b.ctx.transactions.init_producer_id("tid", 60000, -1, -1, False, False)
            batch = rec.build_batch([rec.Record(0, 0, None, b"v", ())], producer_id=pid, producer_epoch=epoch,
                                    base_sequence=0, is_transactional=True)
            await b.ctx.replicas.append_records(b.ctx.replicas.get_log("t", 0), batch, "tid",
                                            TransactionSupportedOperation.ADD_PARTITION)
            b.ctx.transactions.add_offsets("tid", pid, epoch, "g")
            groups.txn_commit_offsets("g", pid, epoch, "", None, -1, [(("t", 0), OffsetValue(1))], 0)
            await b.ctx.transactions.end_txn("tid", pid, epoch, True, False)
            b.ctx.transactions.marker_round()
            groups.join_group("classic", "", None, "c", "/h", 10000, 10000, "consumer", [("range", b"")],
                              False, 0)
            groups.consumer_heartbeat(1, "kip848", "m", 0, None, None, 30000, ["t"], None, None, [], "c", "/h", 0)
            groups.tick(10_000)

        trio.run(work)
        assert groups.fetch_offsets("g", [("t", 0)], True)[1][0][1].offset == 1  # the transaction completed
        roots = [b.logs, *b.logs.logs(), b.ctx.txn_coordinator, groups]
        bad = sorted({f"{type(o).__module__}.{type(o).__qualname__}: {o!r:.80}"
                      for o in _reachable(roots) if _of_broker(o)})
        assert not bad
    finally:
        b.close()
