"""Shared fixtures: broker subprocesses, topic names, the Java client tool.

* ``minikafka_broker`` the pytest plugin's (``minikafka.testing``): a fresh broker per test,
                      with ``kill9()``, ``restart()``, ``fault(point)``, ``records(topic)``.
* ``broker``          module scope: one fresh broker (temp data dir) per test module.
* ``broker_factory``  function scope: ``broker_factory(overrides=..., start=True)``
                      makes BrokerProcess objects; all are cleaned up at teardown.
* ``unique_topic``    ``unique_topic("prefix")`` -> a fresh legal topic name.
* ``java_client``     session scope: ClientTool compiled against kafka-clients
                      4.1.0 from $MINIKAFKA_EXT (skips if jars or JDK missing).

When a test fails, the tail of the log of every broker it used is attached to
the report (section "broker log").

Running: ``make test`` (fetches the Java jars into ../ext first), or
``MINIKAFKA_EXT=../ext .venv/bin/python -m pytest tests/integration -m "not slow"``
for the quick set.  Java tests skip when $MINIKAFKA_EXT (default ../ext) lacks
kafka-clients-4.1.0 or there is no JDK; ``python tests/java/setup_jars.py --ext
../ext`` fetches the jars.
"""
from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from harness import BrokerProcess, JavaClient, unique_name

# The `minikafka_broker` fixture (installed with the package as a pytest11 entry point of
# this name; listed here too, so that a checkout's tests have it whatever is installed), and
# pytest's own `pytester` (tests/integration/test_pytest_plugin.py runs test files with it)
pytest_plugins = ["minikafka.testing", "pytester"]

_BROKERS_KEY = pytest.StashKey[list]()

# the checkout's code, one folder per layer (what every broker and console subprocess imports): pyproject's package-dir
_ROOT = Path(__file__).resolve().parent.parent
_CODE_DIRS = tuple(tomllib.loads((_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"].values())


def pytest_sessionstart(session: pytest.Session) -> None:
    """Bring the checkout's .pyc files up to date once per run. Each test starts brokers
    (`python -m minikafka`), and with PYTHONDONTWRITEBYTECODE (common in CI images, set
    here) a module edited since its .pyc was written is compiled from source again by
    every start, about 50 ms of each when a layer changed (make compiles at install only)."""
    import compileall
    for d in _CODE_DIRS:
        if (_ROOT / d).is_dir():
            compileall.compile_dir(str(_ROOT / d), quiet=2)


# Running in parallel (`make test` runs `pytest -n 4`, pytest-xdist) ----------------------
# The suite mostly waits (JVM starts, client timeouts, polling), so 4 workers on 2 cores
# finish it in about half the time of one (7 min against 13, with the machine busy with
# other work besides). What a worker is given at a time is a "scope" (xdist's --dist
# loadscope), chosen here rather than with xdist_group marks:
# pytest 9 derives a node's id from its own fields, so xdist 3.8's loadgroup (which renames
# the nodes of marked tests) no longer groups anything.
# * every docker test in one scope, so in one worker, one after another: the session's image
#   builds (``images``) happen once, not once per worker; the image tags, compose project
#   names and wheelhouse port file are the machine's; two container stacks at once on
#   2 cores only slow each other down;
# * a test file, otherwise (its module-scoped brokers start once);
# * the conformance scenarios by family (``txn/...``, ``cg/...``): 630 of them would make
#   one worker's file the last to finish; each family shares brokers per settings group.
def xdist_scope(nodeid: str) -> str:
    path, _, rest = nodeid.partition("::")
    if path.startswith("tests/docker/"):
        return "tests/docker"
    if path == "tests/conformance/test_conformance.py" and "[" in rest:
        return f"{path}::{rest.split('[', 1)[1].split('/', 1)[0]}"
    return path


# The scopes that take longest, started first so none begins near the end of the run
# (order only: a scope not listed keeps its place in collection order after these).
# Two Spark scopes are kept apart in the list so that they rarely overlap.
SLOW_FIRST = (
    "tests/docker",
    "tests/integration/test_spark_pipeline.py",
    "tests/integration/test_consumer_group_protocol.py",
    "tests/integration/test_txn_invariants.py",
    "tests/integration/test_shop_pipeline.py",
    "tests/integration/test_idempotence.py",
    "tests/integration/test_spark_kafka_source.py",
    "tests/integration/test_wheel_install.py",
    "tests/integration/test_chaos.py",
    "tests/integration/test_leader_epochs.py",
    "tests/integration/test_security.py",
    "tests/integration/test_java_tv2.py",
    "tests/integration/test_java_group.py",
    "tests/integration/test_fetch_and_offsets.py",
    "tests/integration/test_clients_roundtrip.py",
)


def xdist_rank(scope: str) -> int:
    return SLOW_FIRST.index(scope) if scope in SLOW_FIRST else len(SLOW_FIRST)


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: unknown without xdist
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    if config.getvalue("dist") not in ("load", "loadscope"):
        return None  # another --dist asked for by name: xdist's own
    from xdist.scheduler import LoadScopeScheduling

    class Scopes(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_scope(nodeid)

    # the scopes in collection order, which each worker sorted slowest first (below), not
    # xdist's default of the scopes with most tests first
    config.option.loadscopereorder = False
    return Scopes(config, log)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In an xdist worker, the slow scopes first (a stable sort: a scope's own tests keep
    their order). Every worker sorts the same way, so the workers' collections agree."""
    if hasattr(config, "workerinput"):
        items.sort(key=lambda item: xdist_rank(xdist_scope(item.nodeid)))


def _remember(request: pytest.FixtureRequest, b: BrokerProcess) -> None:
    node = request.node
    if isinstance(node, pytest.Item):
        node.stash.setdefault(_BROKERS_KEY, []).append(b)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory):
    """One broker for the whole module, fresh data dir."""
    data = tmp_path_factory.mktemp("broker") / "data"
    b = BrokerProcess(data, name="module-broker")
    try:
        b.start()
        yield b
    finally:
        b.close()


@pytest.fixture(autouse=True)
def _track_module_broker(request: pytest.FixtureRequest):
    # Attach the module broker (if the test uses it) to the test item so a
    # failure report can quote its log.
    if "broker" in request.fixturenames:
        _remember(request, request.getfixturevalue("broker"))
    yield


@pytest.fixture
def broker_factory(request: pytest.FixtureRequest, tmp_path: Path):
    """``make(overrides=None, env=None, port=None, start=True, name=None, features=None)``;
    ``features``: finalized levels to format the data dir with, e.g. ``{"transaction.version": 1}``."""
    made: list[BrokerProcess] = []

    def make(overrides: dict | None = None, env: dict | None = None, port: int | None = None,
             start: bool = True, name: str | None = None, features: dict | None = None) -> BrokerProcess:
        name = name or f"broker{len(made)}"
        b = BrokerProcess(tmp_path / name / "data", port=port, overrides=overrides, env=env,
                          name=name, features=features)
        made.append(b)
        _remember(request, b)
        if start:
            b.start()
        return b

    try:
        yield make
    finally:
        for b in made:
            b.close()


@pytest.fixture
def unique_topic(request: pytest.FixtureRequest):
    """``unique_topic(prefix=None)`` -> a new topic name based on the test name."""
    base = request.node.name

    def make(prefix: str | None = None) -> str:
        return unique_name(prefix or base)

    return make


@pytest.fixture(scope="session")
def java_client(tmp_path_factory: pytest.TempPathFactory) -> JavaClient:
    client = JavaClient.build(tmp_path_factory.mktemp("java-classes"))
    if isinstance(client, str):
        pytest.skip(f"Java client unavailable: {client}")
    return client


_WORKER_DOCKER: dict[str, list[str]] = {"docker_skip_reason": [], "docker_facts": []}


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook, in the controller
def pytest_testnodedown(node, error) -> None:
    """What tests/docker/conftest.py prints at the end of a run, from the worker that ran
    the docker tests (xdist's controller loads no conftest below tests/)."""
    for key, lines in _WORKER_DOCKER.items():
        lines.extend(getattr(node, "workeroutput", {}).get(key, ()))


def pytest_terminal_summary(terminalreporter) -> None:
    for reason in _WORKER_DOCKER["docker_skip_reason"][:1]:
        terminalreporter.write_line(f"!!! DOCKER TESTS SKIPPED: {reason}", red=True, bold=True)
    if _WORKER_DOCKER["docker_facts"]:
        terminalreporter.section("docker facts")
        for line in _WORKER_DOCKER["docker_facts"]:
            terminalreporter.write_line(line)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed and call.when in ("setup", "call", "teardown"):
        for b in item.stash.get(_BROKERS_KEY, []):
            try:
                report.sections.append((f"broker log: {b.name} ({b.log_path})", b.log_tail(80)))
            except Exception as exc:  # never break reporting
                report.sections.append((f"broker log: {b.name}", f"<unreadable: {exc}>"))
