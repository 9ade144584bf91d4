"""broker/handlers: the APIS table (what ApiVersions advertises) and the handler modules agree.
The table is the one place that names an API's module and versions; a module is imported on its
API's first use, so a typo in the table would only show on that API's first request."""
from __future__ import annotations

import importlib
import pkgutil

from minikafka.broker import handlers
from minikafka.protocol import schema


def test_every_listed_api_has_its_module_with_a_handler():
    for key, api in handlers.APIS.items():
        mod = handlers.handler(key)
        assert mod is not None and mod.__name__ == f"{handlers.__name__}.{api.module}", key
        assert callable(getattr(mod, "handle", None)), f"{api.module} has no handle()"


def test_every_handler_module_is_listed():
    listed = {api.module for api in handlers.APIS.values()}
    for info in pkgutil.iter_modules(handlers.__path__):
        mod = importlib.import_module(f"{handlers.__name__}.{info.name}")
        if hasattr(mod, "handle"):
            assert info.name in listed, f"{info.name} serves an API that APIS does not list"


def test_advertised_versions_are_within_kafkas_schema():
    for key, api in handlers.APIS.items():
        lo, hi = schema.schema_versions(key)
        top = api.unstable if api.unstable is not None else api.versions[1]
        assert lo <= api.versions[0] <= api.versions[1] <= top <= hi, (schema.API_NAMES[key], api)


def test_an_unknown_key_has_no_handler():
    assert handlers.handler(4) is None and handlers.handler(10_000) is None  # 4: LeaderAndIsr (ZooKeeper mode)
