"""examples/benchmarks/bench_designs.py (issue 39): the default, per-action trees and the
held-out choice between them run on one world and print what each seed kept and the paired
comparison with the default, on a tiny size."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "examples" / "benchmarks"


def _import_script(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_each_seed_and_the_paired_summary_are_printed(capsys):
    designs = _import_script("bench_designs")
    designs.main(["--worlds", "smooth", "--rows", "800", "--seeds", "2"])
    out = capsys.readouterr().out
    seeds = re.findall(r"^\[smooth seed (\d), 504 logged\] default (\S+) .* kept (\w+) ", out, re.M)
    assert [s for s, _, _ in seeds] == ["0", "1"]
    assert all(0.0 <= float(v) <= 1.0 and kept in ("stacked", "per_action") for _, v, kept in seeds)
    for method in ("per_action", "policy_choice"):
        assert re.search(rf"^  {method}: [+-]\d\.\d{{4}} ± \d\.\d{{4}}; time ", out, re.M)
