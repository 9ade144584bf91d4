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

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import BrokerProcess, JavaClient, unique_name  # noqa: E402

# The `minikafka_broker` fixture (installed with the package as a pytest11 entry point of
# this name; listed here too, so that a checkout's tests have it whatever is installed), and
# pytest's own `pytester` (tests/integration/test_pytest_plugin.py runs test files with it)
pytest_plugins = ["minikafka.testing", "pytester"]

_BROKERS_KEY = pytest.StashKey[list]()

# the checkout's code, one folder per layer (what every broker subprocess imports)
_CODE_DIRS = ("minikafka", "broker", "coordinator", "storage", "protocol")


def pytest_sessionstart(session: pytest.Session) -> None:
    """Bring the checkout's .pyc files up to date once per run. Each test starts brokers
    (`python -m minikafka`), and with PYTHONDONTWRITEBYTECODE (common in CI images, set
    here) a module edited since its .pyc was written is compiled from source again by
    every start, about 50 ms of each when a layer changed (make compiles at install only)."""
    import compileall
    root = Path(__file__).resolve().parent.parent
    for d in _CODE_DIRS:
        if (root / d).is_dir():
            compileall.compile_dir(str(root / d), quiet=2)


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
