"""The opboost command line: run, study, config show and error reporting."""

from __future__ import annotations

import json
import tomllib

from opboost.compose.cli import main

CONFIG = """
[data]
name = "wine"

[simulation]
log_fraction = 0.15
logging_C = 0.01

[experiment]
seeds = [0, 1]

[[algorithms]]
label = "uniform"
baseline = "uniform"

[[algorithms]]
label = "BOPL-S"
objective = "bopl_s"
booster = { n_rounds = 4 }
base_learner = { name = "lightgbm_tree", num_leaves = 4, min_data_in_leaf = 5 }
"""


def write(tmp_path, text=CONFIG):
    """The config written to a file."""
    path = tmp_path / "study.toml"
    path.write_text(text)
    return str(path)


def test_run_prints_metrics_and_matches_the_study(tmp_path, capsys):
    """`opboost run` prints the trial's metrics; its numbers equal the study's trial."""
    path = write(tmp_path)
    assert main(["run", path, "--algorithm", "BOPL-S", "--seed", "1"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("BOPL-S (offline) on wine, seed 1:")
    assert "test_reward" in text and "n_rounds                4" in text
    assert main(["run", path, "--algorithm", "BOPL-S", "--seed", "1", "--json"]) == 0
    trial = json.loads(capsys.readouterr().out)
    assert main(["study", path, "--out", str(tmp_path / "out"), "--no-plots", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "4 trials run, 0 resumed" in out and "| BOPL-S | offline |" in out
    saved = json.loads((tmp_path / "out" / "trials" / "BOPL-S__s1.json").read_text())
    assert saved["result"]["metrics"] == trial["metrics"]


def test_config_show_prints_resolved_toml(tmp_path, capsys):
    """`opboost config show` prints TOML with every default filled in."""
    assert main(["config", "show", write(tmp_path)]) == 0
    resolved = tomllib.loads(capsys.readouterr().out)
    assert resolved["simulation"]["valid_fraction"] == 0.0
    assert resolved["algorithms"][1]["base_learner"]["max_bin"] == 255
    assert resolved["algorithms"][1]["booster"]["n_rounds"] == 4


def test_errors_exit_2_with_the_message(tmp_path, capsys):
    """A bad config or an ambiguous run prints one error line and exits with status 2."""
    path = write(tmp_path, CONFIG.replace('objective = "bopl_s"', 'objectve = "bopl_s"'))
    assert main(["run", path]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"opboost: error: {path} [algorithms[1].objectve]: unknown key")
    assert "Did you mean 'objective'?" in err
    assert main(["run", write(tmp_path)]) == 2
    assert "has 2 algorithms; choose one with --algorithm (uniform, BOPL-S)" in (
        capsys.readouterr().err
    )


def test_packaged_quickstart_config_matches_the_example():
    """The packaged quickstart config is the same file as examples/quickstart.toml."""
    from pathlib import Path

    from opboost.compose.quickstart import quickstart_config

    example = Path(__file__).parents[2] / "examples" / "quickstart.toml"
    packaged = Path(__file__).parents[2] / "opboost" / "compose" / "configs" / "quickstart.toml"
    assert packaged.read_text() == example.read_text()
    config = quickstart_config(n_seeds=2, n_rounds=7, n_jobs=1)
    assert config.experiment["seeds"] == [0, 1]
    assert [a.label for a in config.algorithms] == [
        "logging policy",
        "uniform policy",
        "reward regression (LightGBM)",
        "BOPL",
        "BOPL-S",
        "Booster() default",
        "label-free choice",
    ]
    assert config.algorithm("BOPL-S").booster["n_rounds"] == 7


def test_config_show_refuses_absurd_sizes_by_key_file_value_and_limit(tmp_path, capsys):
    """Issue 52 item 8: `[data] n_classes = 1000000` passed `config show` and failed in
    scikit-learn at `run`; `n_rounds = 2**63` ran until killed. Both now exit 2 at `config
    show`, naming the file, the key, the value and the limit."""
    text = CONFIG.replace('name = "wine"', 'name = "synthetic_multiclass"\nn_classes = 1000000')
    path = write(tmp_path, text)
    assert main(["config", "show", path]) == 2
    assert capsys.readouterr().err == (
        f"opboost: error: {path} [data.n_classes]: The 'n_classes' parameter of "
        f"SyntheticMulticlass must be at most 2**n_informative / 2 = 524,288 (two clusters per "
        f"class on the corners of the n_informative = 20 hypercube). Got 1,000,000 instead; use "
        f"fewer classes or more informative features (n_informative).\n"
    )
    text = text.replace("n_classes = 1000000", "n_classes = 500000\nn_samples = 1000000")
    assert main(["config", "show", write(tmp_path, text)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"opboost: error: {path} [data.n_classes]: The 'n_classes' parameter of "
        f"SyntheticMulticlass asks for 1,000,000 x 500,000 float64 rewards (n_samples x "
        f"n_classes): at least 3725.3 GiB needed, more than the "
    ), err
    assert err.endswith("; use fewer samples or classes.\n"), err
    path = write(tmp_path, CONFIG.replace("n_rounds = 4", f"n_rounds = {2**63}"))
    assert main(["config", "show", path]) == 2
    assert capsys.readouterr().err == (
        f"opboost: error: {path} [algorithms[1].booster.n_rounds]: The 'n_rounds' parameter of "
        f"Booster must be an int >= 0 and <= 1000000. Got 9223372036854775808 instead; use a "
        f"number of boosting rounds such as 100 (0: the start alone), or 'auto'.\n"
    )
