"""`opboost run|study --set/--seeds/--dry-run`, partial results, plugins, printed tables."""

from __future__ import annotations

import json

import pytest

from opboost.api.exceptions import ConfigError
from opboost.compose.cli import main
from opboost.compose.config import apply_overrides, load_config

TINY = """
[data]
name = "digits"

[simulation]
log_fraction = 0.1

[experiment]
seeds = [0]

[[algorithms]]
label = "BOPL-S"
booster = { n_rounds = 2 }
objective = "bopl_s"
base_learner = { name = "lightgbm_tree", num_leaves = 4, num_threads = 1 }

[[algorithms]]
label = "uniform"
baseline = "uniform"
"""


@pytest.fixture
def tiny(tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text(TINY)
    return path


def test_set_overrides_by_path_index_label_and_star(tiny):
    config = load_config(
        tiny,
        [
            "simulation.logging_C=0.01",
            "experiment.seeds=[0,1]",
            "algorithms[BOPL-S].booster.n_rounds=5",
            "algorithms[0].objective.name=bopl",  # a component by name becomes a table
            "data.name=digits",  # a bare word is a string
        ],
    )
    assert config.simulation["logging_C"] == 0.01
    assert config.experiment["seeds"] == [0, 1]
    algo = config.algorithm("BOPL-S")
    assert algo.booster["n_rounds"] == 5 and algo.objective.name == "bopl"
    config = load_config(tiny, ["algorithms[*].booster.n_rounds=3"])
    assert config.algorithm("BOPL-S").booster["n_rounds"] == 3
    raw = {"algorithms": [{"label": "a"}]}
    assert apply_overrides(raw, ["algorithms[a].booster.n_rounds=1"]) != raw
    assert raw == {"algorithms": [{"label": "a"}]}  # the input is not changed


@pytest.mark.parametrize(
    ("assignment", "key"),
    [
        ("simulation.logging_C=-1", "simulation.logging_C"),
        ("simulation.logging_C=abc", "simulation.logging_C"),
        ("simulation.nope=1", "simulation.nope"),
        ("algorithms[BOPL-S].booster.n_rounds=-1", "algorithms[0].booster.n_rounds"),
        ("experiment.seeds=[0,0]", "experiment.seeds"),
        ("algorithms[nope].booster.n_rounds=1", "algorithms"),
        ("no_equals_sign", None),
    ],
)
def test_bad_set_is_a_config_error_naming_set_and_key(tiny, assignment, key):
    with pytest.raises(ConfigError) as info:
        load_config(tiny, [assignment])
    assert f"--set {assignment}" in str(info.value)
    assert info.value.key == key


def test_cli_bad_set_exits_2(tiny, capsys):
    assert main(["run", str(tiny), "--set", "simulation.logging_C=0", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "--set simulation.logging_C=0" in err and "[simulation.logging_C]" in err
    assert main(["study", str(tiny), "--out", "x", "--seeds", "1", "1", "--dry-run"]) == 2
    assert "--seeds" in capsys.readouterr().err


def test_run_dry_run_and_seeds(tiny, capsys):
    assert main(["run", str(tiny), "--algorithm", "BOPL-S", "--seeds", "3", "4", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "nothing is run" in out and "seed(s) 3, 4: 2 trial(s)" in out
    assert "digits" in out


def test_run_seeds_prints_aligned_metrics(tiny, capsys):
    assert main(["run", str(tiny), "--algorithm", "BOPL-S", "--seeds", "0", "1"]) == 0
    out = capsys.readouterr().out
    assert "seed 0:" in out and "seed 1:" in out
    metric_lines = [line for line in out.splitlines() if line.startswith("  ")]
    starts = {len(line) - len(line[2:].split("  ", 1)[1].lstrip()) for line in metric_lines}
    assert len(starts) == 1  # every value starts in the same column
    for line in metric_lines:
        name, value = line.split(maxsplit=1)[0], line.split()[-1]
        assert name != value  # a long name never runs into its value
        if name.startswith("test_reward"):
            assert len(value.split(".")[1]) == 4


def test_aligned_rows_and_format_value():
    from opboost.compose.study.report import aligned_rows, format_value

    text = aligned_rows([("progressive_greedy_error", 0.28964), ("n_rounds", 7)])
    assert "progressive_greedy_error  0.2896" in text
    assert "n_rounds                  7" in text
    assert aligned_rows([("seconds", 1.5)]) == f"  {'seconds':<24}1.5000\n"
    assert format_value(1e-6) == "1.0000e-06" and format_value(None) == "—"
    assert format_value(float("nan")) == "nan" and format_value(True) == "True"


def test_study_dry_run_lists_stored_trials_and_estimates_time(tiny, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["study", str(tiny), "--out", str(out), "--quiet", "--no-plots"]) == 0
    capsys.readouterr()
    before = sorted(p.name for p in out.rglob("*"))
    args = ["study", str(tiny), "--out", str(out), "--seeds", "0", "1", "--dry-run"]
    assert main([*args, "--verbose"]) == 0
    text = capsys.readouterr().out
    assert "2 algorithm(s) x 2 seed(s) (0, 1) = 4 trial(s)" in text
    assert "2 trial(s) would be reused" in text
    assert "time estimate: about" in text and "for 2 trial(s)" in text
    assert "stored  BOPL-S__s0.json" in text and "run     BOPL-S__s1.json" in text
    assert sorted(p.name for p in out.rglob("*")) == before  # nothing written, no lock
    # a changed value makes the stored trials stale: the plan says so
    assert main([*args, "--set", "simulation.logging_C=0.5"]) == 0
    text = capsys.readouterr().out
    assert "would be re-run because the config" in text
    fresh = tmp_path / "fresh"
    assert main(["study", str(tiny), "--out", str(fresh), "--dry-run"]) == 0
    assert "time estimate: unknown" in capsys.readouterr().out
    assert not fresh.exists()


def test_partial_results_after_each_trial_and_plugins(tiny, tmp_path):
    from opboost.compose.study import run_study

    config = load_config(tiny, ["experiment.seeds=[0,1]"])
    seen = []

    def stop(key, result):
        seen.append(key)
        if len(seen) == 2:
            raise KeyboardInterrupt  # an interrupted study

    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        run_study(config, out, progress=False, plots=False, on_trial=stop)
    md = (out / "results.md").read_text()
    assert "Partial results: 2 of 4 trials finished" in md and "| BOPL-S |" in md
    partial = json.loads((out / "results.json").read_text())
    assert partial["partial"] == {"finished": 2, "planned": 4}
    assert len(partial["trials"]) == 2
    results = run_study(config, out, progress=False, plots=False)
    assert results["timings"]["trials_resumed"] == 2
    final = json.loads((out / "results.json").read_text())
    assert "partial" not in final and "Partial" not in (out / "results.md").read_text()
    names = {p["name"]: p for p in final["plugins"]}
    assert names and all({"distribution", "version", "builtin"} <= set(p) for p in names.values())


def test_quickstart_help_states_the_real_defaults(capsys):
    from opboost.compose.quickstart import quickstart_config, quickstart_defaults

    defaults = quickstart_defaults()
    config = quickstart_config()
    assert defaults["n_seeds"] == len(config.experiment["seeds"])
    assert defaults["n_rounds"] == [config.algorithm("BOPL").booster["n_rounds"]]
    with pytest.raises(SystemExit):
        main(["quickstart", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"(default: {defaults['n_seeds']})" in text
    assert f"(default: {defaults['n_rounds'][0]}, from the packaged config)" in text
    assert f"(default: {defaults['dataset']})" in text
    assert f"(default: {defaults['n_jobs']} from the packaged config" in text
