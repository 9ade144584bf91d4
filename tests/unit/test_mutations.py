"""tools/mutations.py: every mutation still applies to the code (so a refactoring learns at once
which anchors it moved), and a mutation's anchor survives what a refactoring does to the code
around it (another file, another class, reformatting) and fails loudly when its code is gone."""
from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("mutations", ROOT / "tools" / "mutations.py")
mutations = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("mutations", mutations)   # (its dataclasses look their module up)
_spec.loader.exec_module(mutations)


def test_every_mutation_applies_to_the_code():
    assert mutations.check_all(mutations.MUTATIONS) == []


def test_named_layers_and_the_issues_four():
    names = [m.name for m in mutations.MUTATIONS]
    assert len(names) == len(set(names)) >= 25
    assert {m.layer for m in mutations.MUTATIONS} == set(mutations.LAYERS)
    assert {"crc-not-recomputed-after-log-append-time", "api-versions-without-end-txn-produce-v3",
            "every-listener-advertises-plaintext", "produce-answer-log-append-time-hour-early"} <= set(names)
    for m in mutations.MUTATIONS:   # something runs it besides the whole suite, or --quick has a head start
        assert m.first or m.tests, m.name


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    for d in mutations.CODE_DIRS:
        (tmp_path / d).mkdir(exist_ok=True)
    return tmp_path


M = mutations.Mutation("m", "storage", "the stable offset one too high", "Log.stable", "return fuo", "return fuo + 1")


@pytest.mark.parametrize("layout", [
    {"storage/log.py": """
        class Log:
            def stable(self):
                fuo = self.first()
                return fuo
        """},
    # moved to another file and class, reformatted, grown around the piece, a comment in it
    {"storage/unified_log.py": """
        class UnifiedLog:
            def other(self):
                return 1

            def stable(self):
                if self.empty:
                    return None
                fuo = self.first(
                    strict=True)
                return (fuo)  # the first unstable offset
        """},
])
def test_an_anchor_survives_refactoring(tmp_path, layout):
    root = _tree(tmp_path, layout)
    m = mutations.Mutation("m", "storage", "", "stable", "return fuo", "return fuo + 1")
    path, text, _ = mutations.mutated_source(m, mutations.load_sources(root))
    assert "return fuo + 1" in text and path in layout


def test_a_mutation_that_no_longer_applies_says_where_its_code_went(tmp_path):
    root = _tree(tmp_path, {"storage/log.py": """
        class Log:
            def stable(self):
                return self.hw

            def _first_unstable(self):
                fuo = self.first()
                return fuo
        """})
    with pytest.raises(mutations.MutationError,
                       match=r"`return fuo` is not in Log.stable .*now in Log._first_unstable"):
        mutations.mutated_source(M, mutations.load_sources(root))
    gone = mutations.Mutation("g", "storage", "", "Log.renamed", "return fuo", "pass")
    with pytest.raises(mutations.MutationError, match="no function Log.renamed"):
        mutations.mutated_source(gone, mutations.load_sources(root))


def test_a_piece_found_twice_is_refused(tmp_path):
    root = _tree(tmp_path, {"storage/log.py": """
        class Log:
            def stable(self, fuo):
                if fuo:
                    return fuo
                return fuo
        """})
    with pytest.raises(mutations.MutationError, match="occurs 2 times"):
        mutations.mutated_source(M, mutations.load_sources(root))
