"""benchmarks/converter_coverage.py: locating torch's conversion code, arc
keys that survive line shifts, the verdict file, and a tiny real run."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import converter_coverage  # noqa: E402
from converter_arcs import (  # noqa: E402
    CONVERSION_FUNCTIONS,
    ArcKey,
    Function,
    branch_arcs,
    conversion_functions,
    keyed_arcs,
    locate_functions,
)

pytest.importorskip("coverage")


def _torch_version() -> tuple[int, ...]:
    import torch

    return tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2])


# The nine functions are located by name in the torch of requirements-dev.txt
# and later ones; an older torch (dev.py test-oldest) may define them
# elsewhere, and the benchmark then names the missing ones.
needs_dev_torch = pytest.mark.skipif(
    _torch_version() < (2, 13), reason="benchmarks/converter_coverage.py targets torch>=2.13")

SOURCE = '''\
class Converter:
    def convert(self, t):
        if t is None:
            return None
        def inner(x):
            if x:  # a comment
                return 1
            return 2
        if t is None:
            return None
        return inner(t)

    def other(self):
        pass
'''


@needs_dev_torch
def test_the_nine_conversion_functions_are_found_in_the_installed_torch():
    functions = conversion_functions()
    names = [name for names in CONVERSION_FUNCTIONS.values() for name in names]
    assert [f.name for f in functions] == names and len(names) == 9
    for f in functions:
        text = f.path.read_text().splitlines()
        assert f"def {f.name.split('.')[1]}(" in text[f.first_line - 1]
        assert f.first_line < f.last_line


def test_a_missing_or_repeated_function_is_named():
    with pytest.raises(ValueError, match=r"not found: \['Converter.gone'\]"):
        locate_functions(Path("x.py"), SOURCE, ("Converter.convert", "Converter.gone"))
    twice = SOURCE + "\n\nclass Converter:\n    def other(self):\n        pass\n"
    with pytest.raises(ValueError, match=r"more than once: \['Converter.other'\]"):
        locate_functions(Path("x.py"), twice, ("Converter.other",))


def keys(source: str, name: str = "Converter.convert") -> list[ArcKey]:
    (function,) = locate_functions(Path("x.py"), source, (name,))
    return [arc.key for arc in keyed_arcs(function, source, branch_arcs(source))]


def test_keys_are_texts_with_occurrences_and_nested_exits():
    found = keys(SOURCE)
    assert ArcKey("Converter.convert", "if t is None :", "return None", 1) in found
    assert ArcKey("Converter.convert", "if t is None :", "return None", 2) in found
    assert ArcKey("Converter.convert", "if x :", "return 1", 1) in found
    assert all(k.function == "Converter.convert" for k in found)
    assert not keys(SOURCE, "Converter.other")  # no branch


def test_keys_survive_a_line_shift_and_reformatting():
    shifted = "import os\n\n# torch grew\n\n\n" + SOURCE.replace("if x:  # a comment", "if  x :")
    assert keys(shifted) == keys(SOURCE)
    changed = SOURCE.replace("return 1", "return 3")
    assert keys(changed) != keys(SOURCE)


@needs_dev_torch
def test_keys_of_torchs_conversion_code_survive_a_line_shift():
    (meta_tensor,) = [f for f in conversion_functions() if f.name == "MetaConverter.meta_tensor"]
    source = meta_tensor.path.read_text()
    shifted_source = "# one\n# two\n\n" + source
    shifted = Function(meta_tensor.name, meta_tensor.path, meta_tensor.first_line + 3,
                       meta_tensor.last_line + 3)
    before = keyed_arcs(meta_tensor, source, branch_arcs(source))
    after = keyed_arcs(shifted, shifted_source, branch_arcs(shifted_source))
    assert len(before) > 100
    assert [a.key for a in after] == [a.key for a in before]
    assert len({a.key for a in before}) == len(before)  # each key names one arc
    assert [a.line for a in after] == [a.line + 3 for a in before]


@needs_dev_torch
def test_the_verdict_file_parses_and_every_verdict_has_a_known_reason():
    reasons, verdicts = converter_coverage.load_verdicts()
    assert {"covered-by-the-suite", "input-not-drawn", "cuda-or-xpu-only", "defensive-raise", "dead-code",
            "legacy-path", "misuse-assert", "call-never-made"} <= set(reasons)
    assert verdicts
    known = {f.name for f in conversion_functions()}
    for key, verdict in verdicts.items():
        assert key.function in known
        assert verdict["reason"] in reasons and verdict["why"]


def test_every_arc_of_the_installed_torch_has_exactly_one_verdict():
    """Checked on the torch the file was written for: a later one may add
    or change arcs, which the benchmark shows as "no verdict"."""
    import torch

    _, verdicts = converter_coverage.load_verdicts()
    document = converter_coverage.json.loads(converter_coverage.VERDICTS.read_text())
    if not torch.__version__.startswith(document["torch"]):
        pytest.skip(f"verdicts written for torch {document['torch']}")
    arcs = set()
    for f in conversion_functions():
        source = f.path.read_text()
        arcs |= {a.key for a in keyed_arcs(f, source, branch_arcs(source))}
    assert set(verdicts) == arcs


def test_an_unknown_reason_is_named(tmp_path):
    bad = tmp_path / "verdicts.json"
    bad.write_text('{"reasons": {"dead-code": {"reachable_on_cpu": false, "meaning": "m"}},'
                   ' "verdicts": [{"function": "F.f", "branch": "if a :", "destination": "b",'
                   ' "reason": "too-hard", "why": "w"}]}')
    with pytest.raises(ValueError, match="'too-hard'; expected one of dead-code"):
        converter_coverage.load_verdicts(bad)


@needs_dev_torch
def test_a_tiny_run_covers_arcs_of_each_function_the_dense_kind_reaches():
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "converter_coverage.py"),
         "--metafidelity-examples=1", "--metafidelity-kinds=dense",
         "--metafidelity-converters=fake"],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    table = dict(re.findall(r"^(\w+\.\w+) +(\d+/\d+) \(", done.stdout, re.M))
    assert len(table) == 9, done.stdout
    reached = ("MetaTensorDescriber.describe_tensor", "MetaConverter.meta_tensor",
               "MetaConverter.__call__", "FakeTensorConverter.from_real_tensor",
               "FakeTensorMode.from_tensor")
    for name in reached:
        covered, total = table[name].split("/")
        assert 0 < int(covered) <= int(total), (name, table[name])
    assert "reachable on CPU covered:" in done.stdout
