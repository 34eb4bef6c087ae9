"""examples/benchmarks/bench_designs.py (issue 39): the default, per-action trees and the
held-out choice between them run on one world and print what each seed kept and the paired
comparison with the default, on a tiny size."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "benchmarks" / "bench_designs.py"


def test_each_seed_and_the_paired_summary_are_printed(capsys):
    main = runpy.run_path(str(SCRIPT), run_name="bench_designs")["main"]
    main(["--worlds", "smooth", "--rows", "800", "--seeds", "2"])
    out = capsys.readouterr().out
    seeds = re.findall(r"^\[smooth seed (\d), 504 logged\] default (\S+) .* kept (\w+) ", out, re.M)
    assert [s for s, _, _ in seeds] == ["0", "1"]
    assert all(0.0 <= float(v) <= 1.0 and kept in ("stacked", "per_action") for _, v, kept in seeds)
    for method in ("per_action", "policy_choice"):
        assert re.search(rf"^  {method}: [+-]\d\.\d{{4}} ± \d\.\d{{4}}; time ", out, re.M)


def test_the_per_action_start_is_one_of_the_methods(capsys):
    main = runpy.run_path(str(SCRIPT), run_name="bench_designs")["main"]
    main(["--worlds", "smooth", "--rows", "800", "--seeds", "2", "--methods", "per_action_start"])
    out = capsys.readouterr().out
    assert (
        len(
            re.findall(r"^\[smooth seed \d, 504 logged\] default \S+ .*per_action_start", out, re.M)
        )
        == 2
    )
    assert re.search(r"^  per_action_start: [+-]\d\.\d{4} ± \d\.\d{4}; time ", out, re.M)
    assert "policy_choice" not in out
