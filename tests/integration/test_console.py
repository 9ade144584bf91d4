"""Issue 34: ``minikafka console`` in headless Chromium against a real minikafka (and the
reference Apache Kafka 4.1), with real transactional producers and consumer groups.

1. a transaction left open shows on the overview, pinning its partition's LSO, within 2 s;
2. a hanging transaction (KIP-664) is aborted from the page, after a confirmation: the LSO
   reaches the HWM and a read_committed consumer then receives the records behind it;
3. a group that read a transactional topic to the end shows read_committed lag 0, while its
   read_uncommitted lag counts the markers (and aborted records);
4. a transactional id and a group id made of markup render as text;
5. no page logs an error in the browser console (checked after every browser test).

Screenshots: each test's tmp_path and tests/artifacts/console/."""
from __future__ import annotations

import re
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

from console_kit import (browser, commit, create_topic, group_partition, make_lagging,  # noqa: F401
                         open_transaction, transactional_producer)
from harness import wait_transaction_done, wait_until
from rawclient import RawClient

MARKUP = "<img src=x onerror=alert(1)>"


@pytest.fixture
def console(broker):
    c = broker.console()
    yield c
    c.close()


def pinned_row(browser, topic: str, partition: int = 0) -> dict | None:
    for r in browser.rows("tr.pin"):
        if (r.get("topic"), r.get("partition")) == (topic, str(partition)):
            return r
    return None


def offsets(bootstrap: str, topic: str, partition: int) -> tuple[int, int]:
    """(HWM, LSO) by ListOffsets."""
    with RawClient.to(bootstrap) as c:
        return c.list_offset(topic, partition), c.list_offset(topic, partition, isolation=1)


# ------------------------------------------------------------------------------------------- 1
def test_open_transaction_pins_the_lso_on_the_overview_within_2s(broker, console, browser, unique_topic):
    topic = unique_topic("open")
    tid = f"{topic}-txn"
    create_topic(broker.bootstrap, topic, 2)
    browser.get(console.url)
    browser.wait(lambda: browser.seq() > 0)
    browser.js("window.notReloaded = true;")
    seq0 = browser.seq()
    assert pinned_row(browser, topic) is None

    producer = open_transaction(broker.bootstrap, topic, tid, records=3)  # acknowledged: it is open now
    t0 = time.monotonic()
    row = browser.wait(lambda: pinned_row(browser, topic), 5,
                       message=lambda: f"no pinned row for {topic}: {browser.rows('tr.pin')}")
    elapsed = time.monotonic() - t0
    browser.screenshot("pinned")
    assert elapsed < 2.0, f"shown after {elapsed:.2f} s"
    assert (row["hwm"], row["lso"]) == ("3", "0")
    assert tid in row["text"]
    assert "Ongoing" in row["text"]
    assert browser.js("return window.notReloaded === true;"), "the page was reloaded"
    assert browser.seq() > seq0
    assert offsets(broker.bootstrap, topic, 0) == (3, 0)

    # and once committed, the partition is no longer held back
    producer.commit_transaction(30)
    browser.wait(lambda: pinned_row(browser, topic) is None, 5)
    assert browser.js("return window.notReloaded === true;")


# ------------------------------------------------------------------------------------------- 2
def make_hanging(broker_factory, topic: str):
    """A broker whose coordinator drops partition 1's COMMIT marker (fault hook): the
    coordinator has completed the transaction, the partition keeps it open from offset 0, with
    3 records after it (tests/integration/test_hanging_transactions.py makes the same)."""
    b = broker_factory(env={"MINIKAFKA_FAULT_SKIP_MARKER": f"{topic}:1"})
    create_topic(b.bootstrap, topic, 2)
    tid = f"{topic}-txn"
    p = transactional_producer(b.bootstrap, tid)
    p.begin_transaction()
    for i in range(5):
        p.produce(topic, value=f"txn-{i}".encode(), partition=0)
        p.produce(topic, value=f"hang-{i}".encode(), partition=1)
    p.flush(30)
    p.commit_transaction(30)
    wait_transaction_done(b.bootstrap, tid)
    from confluent_kafka import Producer
    q = Producer({"bootstrap.servers": b.bootstrap, "enable.idempotence": True, "linger.ms": 2})
    for i in range(3):
        q.produce(topic, value=f"after-{i}".encode(), partition=1)
    assert q.flush(30) == 0
    assert offsets(b.bootstrap, topic, 1) == (8, 0)
    assert [r.value for r in b.records(topic) if r.partition == 1] == []
    return b, tid


def test_abort_a_hanging_transaction_from_the_page(broker_factory, browser, unique_topic):
    topic = unique_topic("hang")
    b, tid = make_hanging(broker_factory, topic)
    console = b.console()
    browser.get(console.url)
    row = browser.wait(lambda: next((r for r in browser.rows("tr.hanging") if r.get("topic") == topic), None), 30,
                       message=lambda: f"no hanging row: {browser.rows('tr.pin')}")
    assert (row["partition"], row["startOffset"]) == ("1", "0")
    assert tid in row["text"]  # the id whose coordinator completed it
    browser.screenshot("hanging")

    from selenium.webdriver.common.by import By
    browser.click(lambda: browser.driver.find_element(By.CSS_SELECTOR, f"tr.hanging[data-topic='{topic}'] a.abort"))
    browser.wait(lambda: "Abort a hanging transaction" in browser.driver.page_source)
    browser.screenshot("confirm")
    # nothing happens before the confirmation
    assert offsets(b.bootstrap, topic, 1) == (8, 0)
    browser.click(lambda: browser.driver.find_element(By.ID, "confirm-abort"))
    result = browser.wait(lambda: browser.driver.find_element(By.ID, "abort-result").text)
    browser.screenshot("aborted")
    assert result.startswith("Done:"), result

    hwm, lso = wait_until(lambda: (lambda o: o if o[1] == o[0] else None)(offsets(b.bootstrap, topic, 1)), 20)
    assert hwm == lso == 9  # the ABORT marker took offset 8
    browser.click(lambda: browser.driver.find_element(By.ID, "back"))
    browser.wait(lambda: browser.seq() > 0 and pinned_row(browser, topic, 1) is None
                 and not [r for r in browser.rows("tr.hanging") if r.get("topic") == topic], 20)
    browser.screenshot("overview-after")

    # a read_committed consumer now receives the records after the hanging transaction
    from kafka import KafkaConsumer, TopicPartition
    consumer = KafkaConsumer(bootstrap_servers=b.bootstrap, enable_auto_commit=False, auto_offset_reset="earliest",
                             isolation_level="read_committed", fetch_max_wait_ms=100)
    got: list[bytes] = []
    try:
        consumer.assign([TopicPartition(topic, 1)])
        wait_until(lambda: got.extend(r.value for recs in consumer.poll(timeout_ms=200).values() for r in recs)
                   or len(got) >= 3, 20, message=lambda: f"read_committed got {got}")
    finally:
        consumer.close()
    assert got == [f"after-{i}".encode() for i in range(3)]


# ------------------------------------------------------------------------------------------- 3
def test_group_read_to_the_end_shows_read_committed_lag_0(broker, console, browser, unique_topic):
    topic = unique_topic("lag")
    lag = make_lagging(broker.bootstrap, topic, f"{topic}-txn", f"{topic}-done", f"{topic}-behind")
    assert offsets(broker.bootstrap, topic, 0) == (lag.hwm, lag.hwm)
    browser.get(console.url + "groups")
    done = browser.wait(lambda: (lambda r: r if r and r.get("committed-lag") == "0" else None)(
        group_partition(browser, lag.done, topic)), 10,
        message=lambda: f"groups: {browser.rows('tr.group-partition')}")
    assert done["committed"] == str(lag.done_committed)
    assert done["lag"] == str(lag.done_lag)  # the two COMMIT markers, 3 aborted records, the ABORT marker
    behind = browser.wait(lambda: group_partition(browser, lag.behind, topic))
    assert (behind["committed"], behind["lag"], behind["committed-lag"]) == (
        str(lag.behind_committed), str(lag.behind_lag), str(lag.behind_committed_lag))
    browser.screenshot("groups")
    # the overview's summary says the same
    browser.get(console.url)
    summary = browser.wait(lambda: next((r for r in browser.rows("tr.group") if r.get("group") == lag.done), None))
    assert (summary["lag"], summary["committed-lag"]) == (str(lag.done_lag), "0")


# ------------------------------------------------------------------------------------------- 4
def test_ids_made_of_markup_render_as_text(broker, console, browser, unique_topic):
    topic = unique_topic("xss")
    create_topic(broker.bootstrap, topic)
    producer = open_transaction(broker.bootstrap, topic, MARKUP)
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": MARKUP, "enable.auto.commit": False})
    try:
        commit(c, offsets=[TopicPartition(topic, 0, 1)])
    finally:
        c.close()
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    def no_markup_executed(where: str) -> None:
        assert browser.driver.find_elements(By.TAG_NAME, "img") == [], f"{where}: an <img> element was made"
        try:
            alert = browser.driver.switch_to.alert
            raise AssertionError(f"{where}: an alert opened: {alert.text}")
        except NoAlertPresentException:
            pass

    browser.get(console.url)
    row = browser.wait(lambda: pinned_row(browser, topic), 10)
    assert MARKUP in row["text"]
    browser.wait(lambda: any(r.get("group") == MARKUP for r in browser.rows("tr.group")))
    assert MARKUP in browser.js("return document.getElementById('live').innerText;")
    browser.screenshot("overview")
    no_markup_executed("overview")

    browser.get(console.url + "transactions")
    row = browser.wait(lambda: next((r for r in browser.rows("tr.txn") if r.get("tid") == MARKUP), None), 10)
    assert row["text"].startswith(MARKUP)
    no_markup_executed("transactions")
    # the link to its own page
    browser.click(lambda: next(r for r in browser.driver.find_elements(By.CSS_SELECTOR, "tr.txn")
                               if r.get_attribute("data-tid") == MARKUP).find_element(By.CSS_SELECTOR, "a.tid"))
    assert browser.wait(lambda: browser.driver.find_elements(By.ID, "tid") and
                        browser.driver.find_element(By.ID, "tid").text) == MARKUP
    assert urllib.parse.unquote(browser.driver.current_url.split("id=", 1)[1]) == MARKUP
    browser.screenshot("transaction")
    no_markup_executed("transaction")

    browser.get(console.url + "groups")
    assert browser.wait(lambda: group_partition(browser, MARKUP, topic))["committed"] == "1"
    no_markup_executed("groups")
    assert "&lt;img src=x onerror=alert(1)&gt;" in browser.driver.page_source
    producer.abort_transaction(30)


# ------------------------------------------------------------------------------------------- 5
def test_no_page_logs_a_browser_error(broker, console, browser, unique_topic):
    """Every page, its live updates running (a few snapshots each) and the chart drawn; the
    browser fixture then checks the log (as after every test here)."""
    topic = unique_topic("pages")
    create_topic(broker.bootstrap, topic)
    producer = open_transaction(broker.bootstrap, topic, f"{topic}-txn")
    browser.get(console.url)
    browser.wait(lambda: pinned_row(browser, topic), 10)
    for path in ("", "transactions", f"transaction?id={urllib.parse.quote(topic + '-txn')}",
                 f"partitions?topic={topic}&partition=0", "partitions?internal=1", "groups",
                 f"abort?topic={topic}&partition=0&start_offset=0"):
        browser.get(console.url + path)
        if path.startswith("abort"):
            assert "does not see this transaction as hanging" in browser.driver.page_source
            continue
        first = browser.wait(lambda: browser.seq() > 0 and browser.seq())
        browser.wait(lambda: browser.seq() >= first + 2, 10, message=f"{path}: no live update")
        if path.startswith("partitions?topic"):
            browser.wait(lambda: browser.js("return document.querySelectorAll('#chart .uplot canvas').length > 0"))
            browser.wait(lambda: browser.js("return document.querySelector('#chart .u-legend') !== null"))
        assert browser.errors() == [], path
    browser.get(console.url + f"partitions?topic={topic}&partition=0")
    browser.wait(lambda: browser.js("return document.querySelectorAll('#chart .uplot canvas').length > 0"))
    browser.screenshot("partitions")
    producer.abort_transaction(30)


# ------------------------------------------------------------------------------------------- the POST
def http(url: str, data: dict | None = None, headers: dict | None = None) -> tuple[int, str, dict]:
    req = urllib.request.Request(url, data=urllib.parse.urlencode(data).encode() if data is not None else None,
                                 headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, r.read().decode(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), dict(e.headers)


def test_abort_needs_the_sessions_csrf_token_and_a_loopback_host(broker_factory, unique_topic):
    topic = unique_topic("csrf")
    b, _ = make_hanging(broker_factory, topic)
    console = b.console()
    status, _, headers = http(console.url)
    assert status == 200
    assert "script-src 'self'" in headers["content-security-policy"]
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    assert "httponly" in headers["set-cookie"].lower() and "samesite=strict" in headers["set-cookie"].lower()
    confirm = console.url + f"abort?topic={topic}&partition=1&start_offset=0"

    def form_of(cookie: str | None) -> tuple[str, dict]:
        """(the session cookie, the confirmation page's form) once the console calls it hanging."""
        def page():
            status, body, headers = http(confirm, headers={"Cookie": cookie} if cookie else {})
            return (status, body, headers) if 'name="csrf_token"' in body else None
        status, body, headers = wait_until(page, 10)
        got = cookie or headers["set-cookie"].split(";", 1)[0]
        fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', body))
        return got, fields

    cookie, form = form_of(None)
    other_cookie, other_form = form_of(None)
    assert cookie != other_cookie and form["csrf_token"] != other_form["csrf_token"]
    assert form_of(cookie)[1] == form  # the token is the session's
    refused = [
        http(console.url + "abort", {k: v for k, v in form.items() if k != "csrf_token"}, {"Cookie": cookie}),
        http(console.url + "abort", form),  # no session cookie
        http(console.url + "abort", other_form, {"Cookie": cookie}),  # another session's token
        http(console.url + "abort", form, {"Cookie": cookie, "Origin": "http://evil.example"}),
    ]
    assert [r[0] for r in refused] == [403] * 4, [r[1][-300:] for r in refused]
    assert offsets(b.bootstrap, topic, 1) == (8, 0)  # nothing aborted
    # a page of another name (DNS rebinding) is not answered
    port = urllib.parse.urlsplit(console.url).port
    assert http(console.url, headers={"Host": f"evil.example:{port}"})[0] == 421
    status, body, _ = http(console.url + "abort", form, {"Cookie": cookie,
                                                         "Origin": console.url.rstrip("/")})
    assert status == 200 and "Done:" in body, body[-500:]
    wait_until(lambda: (lambda o: o[0] == o[1])(offsets(b.bootstrap, topic, 1)), 10)


def test_read_only_console_has_no_abort(broker):
    c = broker.console("--read-only")
    try:
        status, body, _ = http(c.url + "abort", {"topic": "t", "partition": "0", "start_offset": "0"})
        assert status == 403 and "read-only" in body
    finally:
        c.close()


# ------------------------------------------------------------------------------------------- Kafka 4.1
@pytest.fixture(params=["minikafka", "kafka-4.1"])
def cluster(request, broker_factory):
    """A bootstrap address: a fresh minikafka, or a throwaway Apache Kafka 4.1 from the
    reference distribution (tests/conformance/kafka_reference.py; REFERENCE_DIR)."""
    if request.param == "minikafka":
        yield broker_factory().bootstrap
        return
    from conformance.kafka_reference import KafkaCluster, unavailable_reason
    reason = unavailable_reason()
    if reason:
        pytest.skip(f"reference Kafka unavailable: {reason}")
    kafka = KafkaCluster()
    try:
        kafka.start()
        yield kafka.bootstrap
    finally:
        kafka.close()


def test_same_open_transaction_and_lags_on_minikafka_and_kafka(cluster, browser, unique_topic, tmp_path):
    """The console reads any Kafka through its APIs: the same situation shows the same on
    minikafka and on Apache Kafka 4.1."""
    from minikafka.testing import ConsoleProcess
    topic, open_topic = unique_topic("lag"), unique_topic("open")
    lag = make_lagging(cluster, topic, f"{topic}-txn", f"{topic}-done", f"{topic}-behind")
    create_topic(cluster, open_topic)
    tid = f"{open_topic}-txn"
    producer = open_transaction(cluster, open_topic, tid, records=3)
    with ConsoleProcess(cluster, log_path=tmp_path / "console.log") as console:
        browser.get(console.url)
        row = browser.wait(lambda: pinned_row(browser, open_topic), 20,
                           message=lambda: f"overview: {browser.rows('tr.pin')}\n{console.log_text()[-3000:]}")
        assert (row["hwm"], row["lso"]) == ("3", "0")
        assert tid in row["text"] and "Ongoing" in row["text"]
        browser.screenshot("overview")
        browser.get(console.url + "groups")
        done = browser.wait(lambda: (lambda r: r if r and r.get("committed-lag") == "0" else None)(
            group_partition(browser, lag.done, topic)), 20,
            message=lambda: f"groups: {browser.rows('tr.group-partition')}")
        behind = browser.wait(lambda: group_partition(browser, lag.behind, topic))
        browser.screenshot("groups")
        assert (done["committed"], done["lag"], done["committed-lag"]) == (str(lag.done_committed),
                                                                           str(lag.done_lag), "0")
        assert (behind["committed"], behind["lag"], behind["committed-lag"]) == (
            str(lag.behind_committed), str(lag.behind_lag), str(lag.behind_committed_lag))
        # the transaction's timeline, from __transaction_state
        browser.get(console.url + "transaction?id=" + urllib.parse.quote(tid))
        states = browser.wait(lambda: [r["text"].split("\t")[0].strip() for r in browser.rows("table.timeline-table tr.step")]
                              or None, 20)
        assert states[-1] == "Ongoing", states
        assert "Empty" in states, states
        assert not console.log_text().count("Traceback"), console.log_text()
        assert browser.errors() == []
        browser.get("about:blank")  # before the console stops: its live requests would fail
    producer.abort_transaction(30)


def test_an_unreachable_cluster_is_shown_as_such(tmp_path):
    """No broker on the bootstrap port: the pages say so (no traceback), and the console keeps
    polling, so it shows the cluster once one answers there."""
    from harness import BrokerProcess, free_port
    from minikafka.testing import ConsoleProcess
    port = free_port()
    with ConsoleProcess(f"127.0.0.1:{port}", log_path=tmp_path / "console.log") as console:
        status, body, _ = http(console.url)
        assert status == 200 and "cannot connect to 127.0.0.1:" in body, body[-2000:]
        with BrokerProcess(tmp_path / "data", port=port) as b:
            create_topic(b.bootstrap, "later")
            wait_until(lambda: "later-0" in http(console.url + "partitions")[1], 15)
        assert "Traceback" not in console.log_text(), console.log_text()


def test_the_consoles_principal_and_its_permissions(broker_factory, unique_topic, tmp_path):
    """--command-config as for the other tools (SASL PLAIN here): the console sees and does what
    its principal may. A viewer with Describe and Read sees the hanging transaction, but its abort
    is refused (WriteTxnMarkers needs ClusterAction) and shown as such; the admin's succeeds."""
    from harness import free_port
    from minikafka.testing import ConsoleProcess
    from security_kit import plain_jaas
    topic = unique_topic("perm")
    users = {"admin": "admin-secret", "viewer": "viewer-secret"}
    sasl = free_port()
    b = broker_factory(env={"MINIKAFKA_FAULT_SKIP_MARKER": f"{topic}:1"}, overrides={
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin;User:ANONYMOUS", "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain_jaas(users)}, start=False)
    b.overrides["listeners"] = f"PLAINTEXT://127.0.0.1:{b.port},SASL_PLAINTEXT://127.0.0.1:{sasl}"
    b.start()
    make_hanging(lambda **kw: b, topic)  # its clients: PLAINTEXT, User:ANONYMOUS (a super user)
    configs = {}
    for user, password in users.items():
        configs[user] = tmp_path / f"{user}.properties"
        configs[user].write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config="
                                 "org.apache.kafka.common.security.plain.PlainLoginModule required "
                                 f'username="{user}" password="{password}";\n')
    import subprocess
    import sys
    for args in (["--topic", topic, "--operation", "Describe", "--operation", "Read"],
                 ["--transactional-id", "*", "--operation", "Describe"],
                 ["--cluster", "--operation", "Describe"]):
        r = subprocess.run([sys.executable, "-m", "minikafka", "acls", "--bootstrap-server", f"127.0.0.1:{sasl}",
                            "--command-config", str(configs["admin"]), "--add", "--allow-principal", "User:viewer",
                            *args], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
    for user, expected in (("viewer", 502), ("admin", 200)):
        with ConsoleProcess(f"127.0.0.1:{sasl}", ["--command-config", str(configs[user])],
                            log_path=tmp_path / f"{user}-console.log") as console:
            confirm = console.url + f"abort?topic={topic}&partition=1&start_offset=0"
            status, body, headers = wait_until(
                lambda: (lambda r: r if 'name="csrf_token"' in r[1] else None)(http(confirm)), 15,
                message=lambda: http(console.url)[1][-2000:])
            cookie = headers["set-cookie"].split(";", 1)[0]
            form = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', body))
            status, body, _ = http(console.url + "abort", form, {"Cookie": cookie})
            assert status == expected, body[-1000:]
            if user == "viewer":
                assert "CLUSTER_AUTHORIZATION_FAILED" in body, body[-1000:]
                assert offsets(b.bootstrap, topic, 1) == (8, 0)
    wait_until(lambda: (lambda o: o[0] == o[1])(offsets(b.bootstrap, topic, 1)), 10)
