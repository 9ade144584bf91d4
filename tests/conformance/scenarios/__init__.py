"""Every scenario, from the modules of this package (each defines ``SCENARIOS``)."""
from __future__ import annotations

import importlib
import pkgutil


def all_scenarios() -> list:
    found, names = [], set()
    for mod in sorted(m.name for m in pkgutil.iter_modules(__path__)):
        for s in importlib.import_module(f"{__name__}.{mod}").SCENARIOS:
            if s.name in names:
                raise ValueError(f"two scenarios named {s.name}")
            names.add(s.name)
            found.append(s)
    return found
