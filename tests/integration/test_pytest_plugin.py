"""The pytest plugin (minikafka.testing): users' test files run with pytester, as a user's
suite would run them. A fresh broker per test or one per session, kill9/restart keeping
acknowledged data, records() per isolation level, --minikafka-bootstrap pointing the same
tests at another Kafka (here: a second minikafka), with the crash methods skipping."""
from __future__ import annotations

import pytest

# what every user test file below starts with: a raw transactional producer is enough
PRELUDE = '''
from minikafka.admin.wire import WireClient
from minikafka.protocol import records as rec

def create(bootstrap, topic, partitions=2):
    with WireClient.to(bootstrap) as c:
        r = c.request(19, 5, {"topics": [{"name": topic, "num_partitions": partitions,
                                           "replication_factor": 1, "assignments": [], "configs": []}],
                              "timeout_ms": 10000, "validate_only": False})
        assert r.topics[0].error_code == 0, r

def produce(bootstrap, topic, partition, values):
    batch = rec.build_batch([rec.Record(i, 0, None, v, [("h", b"x")]) for i, v in enumerate(values)])
    with WireClient.to(bootstrap) as c:
        body = {"transactional_id": None, "acks": -1, "timeout_ms": 10000,
                "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": batch}]}]}
        assert c.request(0, 9, body).responses[0].partition_responses[0].error_code == 0
'''


def run(pytester: pytest.Pytester, source: str, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_user=PRELUDE + source)
    # -p: the plugin also when this venv's install predates its entry point
    return pytester.runpytest("-p", "minikafka.testing", "-p", "no:cacheprovider", "-rs", *args)


def test_function_scope_fresh_broker_per_test_and_crash_methods(pytester):
    result = run(pytester, '''
PORTS = []

def test_first(minikafka_broker):
    PORTS.append(minikafka_broker.bootstrap)
    create(minikafka_broker.bootstrap, "t")
    produce(minikafka_broker.bootstrap, "t", 1, [b"a", b"b"])
    produce(minikafka_broker.bootstrap, "t", 0, [b"c"])
    minikafka_broker.kill9()
    minikafka_broker.restart()
    got = minikafka_broker.records("t")
    assert [(r.partition, r.offset, r.value, r.headers) for r in got] == [
        (0, 0, b"c", [("h", b"x")]), (1, 0, b"a", [("h", b"x")]), (1, 1, b"b", [("h", b"x")])]
    assert minikafka_broker.records("t", "read_uncommitted") == got

def test_second_gets_a_new_broker(minikafka_broker):
    PORTS.append(minikafka_broker.bootstrap)
    assert PORTS[0] != PORTS[1]
    import pytest
    with pytest.raises(LookupError):
        minikafka_broker.records("t")  # not this broker's topic
    with pytest.raises(ValueError, match="txn.after_prepare"):
        minikafka_broker.fault("txn.typo")
''')
    result.assert_outcomes(passed=2)


def test_session_scope_one_broker_left_running_after_each_test(pytester):
    result = run(pytester, '''
PORTS = []

def test_first_crashes_it(minikafka_broker):
    PORTS.append(minikafka_broker.bootstrap)
    create(minikafka_broker.bootstrap, "kept")
    produce(minikafka_broker.bootstrap, "kept", 0, [b"one"])
    minikafka_broker.kill9()  # and leaves it dead

def test_second_finds_it_running_with_the_data(minikafka_broker):
    PORTS.append(minikafka_broker.bootstrap)
    assert PORTS[0] == PORTS[1] and minikafka_broker.running
    assert [r.value for r in minikafka_broker.records("kept")] == [b"one"]
''', "--minikafka-scope=session")
    result.assert_outcomes(passed=2)


def test_bootstrap_option_points_at_another_kafka(pytester, broker):
    create_and_fill = PRELUDE + f'\ncreate("{broker.bootstrap}", "ext")\nproduce("{broker.bootstrap}", "ext", 0, [b"x"])\n'
    exec(compile(create_and_fill, "<setup>", "exec"), {})
    result = run(pytester, f'''
def test_reads_it(minikafka_broker):
    assert minikafka_broker.bootstrap == "{broker.bootstrap}"
    assert [r.value for r in minikafka_broker.records("ext")] == [b"x"]

def test_cannot_crash_it(minikafka_broker):
    minikafka_broker.kill9()
    raise AssertionError("kill9 did not skip")
''', f"--minikafka-bootstrap={broker.bootstrap}")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*kill9() needs the minikafka broker*external Kafka*"])
    assert broker.running  # untouched


def test_first_start_moves_to_another_port_when_its_free_port_was_taken(tmp_path, monkeypatch):
    # free_port() races with every other process on the machine: the port it found is taken
    # (here: by us, listening) before the broker binds it. The first start tries another port.
    import socket

    from minikafka import testing
    from minikafka.admin.wire import WireClient
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    ports = iter([taken.getsockname()[1]])
    real = testing.free_port
    monkeypatch.setattr(testing, "free_port", lambda: next(ports, None) or real())
    b = testing.BrokerProcess(tmp_path / "data", name="port-race")
    try:
        assert b.port == taken.getsockname()[1]
        b.start()
        assert b.port != taken.getsockname()[1]
        assert "Address already in use" in b.log_text()
        with WireClient.to(b.bootstrap) as c:  # the broker answers on the port it now has
            assert c.request(18, 0, {}).error_code == 0  # ApiVersions
    finally:
        b.close()
        taken.close()
