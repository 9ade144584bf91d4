"""Imports flow one way: broker -> coordinator -> storage -> protocol (DESIGN.md).
Only broker/ knows trio; protocol/ touches no sockets or files."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ["broker", "coordinator", "storage", "protocol"]
ALLOWED = {layer: set(LAYERS[i:]) for i, layer in enumerate(LAYERS)}


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
    return out


@pytest.mark.parametrize("layer", LAYERS)
def test_imports_flow_downward(layer):
    bad = []
    for path in (ROOT / layer).rglob("*.py"):
        for mod in imports_of(path):
            top = mod.split(".")[0]
            if top in LAYERS and top not in ALLOWED[layer]:
                bad.append(f"{path.relative_to(ROOT)} imports {mod}")
    assert not bad


@pytest.mark.parametrize("layer", ["coordinator", "storage", "protocol"])
def test_only_broker_knows_trio(layer):
    users = [str(p.relative_to(ROOT)) for p in (ROOT / layer).rglob("*.py") if "trio" in
             {m.split(".")[0] for m in imports_of(p)}]
    assert not users


def test_protocol_is_sans_io():
    for path in (ROOT / "protocol").rglob("*.py"):
        mods = {m.split(".")[0] for m in imports_of(path)}
        assert not mods & {"socket", "trio", "asyncio", "selectors"}, path
