"""broker/handlers/authorization.py: every API key the broker advertises in ApiVersions, under
every setting that advertises more, has an entry in AUTHORIZATION, and each entry says what it
checks. The broker refuses to start without one (the table's import fails); this test says which."""
from __future__ import annotations

import itertools
from types import SimpleNamespace

import pytest

from minikafka.broker import handlers
from minikafka.broker.config import BrokerConfig
from minikafka.broker.handlers.authorization import AUTHORIZATION, Auth, Check
from minikafka.broker.security.authorizer import OP, RESOURCE
from minikafka.protocol import schema
from minikafka.protocol.errors import ErrorCode

# every setting that changes which APIs or versions ApiVersions advertises, with its values
ADVERTISING_SETTINGS = {
    "group.coordinator.rebalance.protocols": ["classic", "classic,consumer", "classic,consumer,streams"],
    "unstable.api.versions.enable": ["false", "true"],
}


def _advertised(settings: dict) -> set[int]:
    broker = SimpleNamespace(config=BrokerConfig.from_dict(settings))
    return {k["api_key"] for k in handlers.api_versions_body(broker)["api_keys"]}


@pytest.mark.parametrize("values", list(itertools.product(*ADVERTISING_SETTINGS.values())),
                         ids=lambda values: ";".join(values))
def test_every_advertised_api_has_an_authorization_entry(values):
    settings = dict(zip(ADVERTISING_SETTINGS, values))
    advertised = _advertised(settings)
    missing = sorted(schema.API_NAMES[k] for k in advertised - set(AUTHORIZATION))
    assert not missing, f"advertised with {settings} but not in AUTHORIZATION: {missing}"


def test_the_settings_advertise_every_served_api():
    """Some combination of ADVERTISING_SETTINGS advertises each API of APIS: a new setting that
    turns an API on must be added above, or the test above would not see that API."""
    seen: set[int] = set()
    for values in itertools.product(*ADVERTISING_SETTINGS.values()):
        seen |= _advertised(dict(zip(ADVERTISING_SETTINGS, values)))
    assert seen == set(handlers.APIS), sorted(schema.API_NAMES[k] for k in set(handlers.APIS) - seen)


def test_the_table_names_only_served_apis():
    assert set(AUTHORIZATION) == set(handlers.APIS)


@pytest.mark.parametrize("key", sorted(AUTHORIZATION), ids=lambda k: schema.API_NAMES[k])
def test_each_entry_says_what_is_checked(key):
    """Whole-request checks name a real operation, resource and error, and a request field the
    API has in every served version; an API without one names its finer checks or why it needs none."""
    entry = AUTHORIZATION[key]
    assert isinstance(entry, Auth)
    assert entry.whole or entry.handler or entry.none, f"{schema.API_NAMES[key]}: an empty entry"
    assert not (entry.none and (entry.whole or entry.handler)), f"{schema.API_NAMES[key]}: none and checks"
    lo, hi = handlers.APIS[key].versions
    for check in entry.whole:
        assert isinstance(check, Check)
        assert check.operations and set(check.operations) <= set(OP.values()) - {0, 1}
        assert check.resource_type in set(RESOURCE.values()) - {0, 1}
        assert check.error in (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ErrorCode.GROUP_AUTHORIZATION_FAILED,
                               ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        if check.field is not None:
            for v in range(lo, hi + 1):
                fields = [f.name for f in schema.message(key, "request", v).fields]
                assert check.field in fields, f"{schema.API_NAMES[key]} v{v} has no field {check.field}"
