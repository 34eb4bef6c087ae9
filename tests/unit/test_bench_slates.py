"""examples/benchmarks/bench_slates.py (issue 51): every method's true value per seed and
slate_boost's paired differences per world, on a tiny size."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "benchmarks" / "bench_slates.py"


def test_each_seed_and_the_paired_differences_are_printed(capsys):
    main = runpy.run_path(str(SCRIPT), run_name="bench_slates")["main"]
    results = main(["--worlds", "pbm_flat", "cascade_skewed", "--rows", "300",
                    "--test-rows", "200", "--seeds", "2"])  # fmt: skip
    out = capsys.readouterr().out
    methods = ["slate_boost", "slate_start", "reward_model", "lambdarank_clicks",
               "lambdarank_position", "xgb_unbiased", "logger"]  # fmt: skip
    for world in ("pbm_flat", "cascade_skewed"):
        for seed in (0, 1):
            line = re.search(rf"^\[{world} seed {seed}\] (.*)$", out, re.M).group(1)
            assert re.findall(r"(\w+) \d\.\d{4}", line) == methods
        assert set(results[world]) == set(methods)
        assert all(len(v) == 2 and v[0].shape == (200,) for v in results[world].values())
        for method in methods[1:]:
            assert re.search(
                rf"^  {method}: \d\.\d{{4}}; difference [+-]\d\.\d{{4}} ± \d", out, re.M
            )


def test_the_methods_can_be_chosen_and_slate_boost_is_always_run(capsys):
    main = runpy.run_path(str(SCRIPT), run_name="bench_slates")["main"]
    main(["--worlds", "pbm_skewed", "--rows", "300", "--test-rows", "100", "--seeds", "1",
          "--methods", "logger"])  # fmt: skip
    out = capsys.readouterr().out
    assert re.search(r"^\[pbm_skewed seed 0\] slate_boost \d\.\d{4} logger \d\.\d{4}$", out, re.M)
    assert re.search(r"^  logger: \d\.\d{4}; difference [+-]\d\.\d{4} ± nan$", out, re.M)
