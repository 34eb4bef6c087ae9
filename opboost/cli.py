"""The ``opboost`` command line.

Subcommands: ``plugins`` (what is installed), ``quickstart`` (the README's main job),
``run FILE`` (one algorithm, one seed), ``study FILE --out DIR`` (every algorithm x seed,
resumable), ``config show FILE`` (the resolved config with every default).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from opboost.exceptions import ConfigError

__all__ = ["main"]


def _cmd_plugins(args: argparse.Namespace) -> int:
    from opboost.registry import get_registry

    registry = get_registry()
    for info in registry.plugins:
        origin = "built-in" if info.builtin else "entry point"
        print(f"{info.name}  ({info.distribution} {info.version}, {origin})")
        if not info.components:
            print("    (no components)")
        for kind, names in info.components.items():
            print(f"    {kind}: {', '.join(names) if names else '(none)'}")
    return 0


def _cmd_quickstart(args: argparse.Namespace) -> int:
    from opboost.quickstart import run_quickstart

    run_quickstart(
        dataset=args.dataset,
        n_seeds=args.seeds,
        n_rounds=args.rounds,
        data_dir=args.data_dir,
        n_jobs=args.n_jobs,
    )
    return 0


def _fmt(value: object) -> str:
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def _cmd_run(args: argparse.Namespace) -> int:
    from opboost.config import load_config
    from opboost.experiment import run_trial
    from opboost.trial_data import prepare_trial

    config = load_config(args.file)
    algo = config.algorithm(args.algorithm)
    seed = config.experiment["seeds"][0] if args.seed is None else args.seed
    if seed < 0:
        raise ConfigError(f"--seed must be >= 0. Got {seed}.", file=config.file)
    data = prepare_trial(config.data, config.simulation, seed, args.data_dir)
    result = run_trial(config, algo, data)
    if args.json:
        print(json.dumps(result.to_dict(), indent=1))
        return 0
    sizes = data.sizes()
    print(
        f"{algo.label} ({algo.family}) on {data.name}, seed {seed}: {sizes['n_logged']} logged "
        f"training rows, {sizes['n_valid']} validation rows, {sizes['n_test']} test rows"
    )
    if algo.search is not None:
        print("  (its search is ignored by 'run'; 'opboost study' runs the search)")
    for name, value in result.metrics.items():
        print(f"  {name:<24}{_fmt(value)}")
    for name in ("n_rounds", "stop_reason", "n_interactions", "action"):
        if name in result.info:
            print(f"  {name:<24}{_fmt(result.info[name])}")
    if result.fallback is not None:
        print(f"  {'fallback':<24}{result.fallback}")
    print(f"  {'seconds':<24}{result.timings['total_seconds']:.2f}")
    return 0


def _cmd_study(args: argparse.Namespace) -> int:
    from opboost.config import load_config
    from opboost.study import run_study

    config = load_config(args.file)
    out = Path(args.out)
    results = run_study(
        config,
        out,
        n_jobs=args.n_jobs,
        data_dir=args.data_dir,
        progress=not args.quiet,
        plots=not args.no_plots,
    )
    timings = results["timings"]
    print(
        f"{timings['trials_run']} trials run, {timings['trials_resumed']} resumed from "
        f"{out / 'trials'} ({timings['study_seconds']:.1f} s)"
    )
    print((out / "results.md").read_text(encoding="utf-8"))
    for label, info in results["search"].items():
        print(f"search {label}: selected {info['selected_overrides']} on {info['metric']}")
    print(
        f"outputs in {out}: results.json, results.csv, results.md"
        + ("" if args.no_plots else ", *.png")
    )
    if results.get("failed"):
        print(
            f"opboost: error: {len(results['failed'])} trial(s) failed (see 'Failed trials' in "
            f"{out / 'results.md'}; tracebacks in results.json); every other trial is kept. "
            f"Fix the cause and re-run the same command: only the failed trials run again.",
            file=sys.stderr,
        )
        return 1
    return 0


def _cmd_config_show(args: argparse.Namespace) -> int:
    from opboost.config import dumps_resolved, load_config

    print(dumps_resolved(load_config(args.file)), end="")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``opboost`` command."""
    from opboost import __version__

    parser = argparse.ArgumentParser(
        prog="opboost",
        description="Boosted contextual-bandit policies from bandit feedback.",
    )
    parser.add_argument("--version", action="version", version=f"opboost {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("plugins", help="list installed plugins and their components")
    p.set_defaults(func=_cmd_plugins)

    p = sub.add_parser(
        "quickstart",
        help="simulate logged data from a bundled data set, train policies, print a table",
    )
    p.add_argument("--dataset", default=None, help="data set name (default: digits)")
    p.add_argument("--seeds", type=int, default=None, help="number of seeds (default: 3)")
    p.add_argument("--rounds", type=int, default=None, help="boosting rounds (default: 60)")
    p.add_argument("--n-jobs", type=int, default=None, help="parallel trials (default: cores)")
    p.add_argument("--data-dir", default=None, help="directory of real data sets ($OPBOOST_DATA)")
    p.set_defaults(func=_cmd_quickstart)

    p = sub.add_parser("run", help="train and evaluate one algorithm of a config on one seed")
    p.add_argument("file", help="TOML config")
    p.add_argument("--algorithm", default=None, help="label of the algorithm (if several)")
    p.add_argument("--seed", type=int, default=None, help="trial seed (default: first seed)")
    p.add_argument("--data-dir", default=None, help="directory of real data sets ($OPBOOST_DATA)")
    p.add_argument("--json", action="store_true", help="print the full trial result as JSON")
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser("study", help="every algorithm x seed; tables, JSON/CSV and plots")
    p.add_argument("file", help="TOML config")
    p.add_argument("--out", required=True, help="output directory (resumes from its trials/)")
    p.add_argument("--n-jobs", type=int, default=None, help="parallel trials ([experiment])")
    p.add_argument("--data-dir", default=None, help="directory of real data sets ($OPBOOST_DATA)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_study)

    p = sub.add_parser("config", help="inspect config files")
    config_sub = p.add_subparsers(dest="config_command", metavar="ACTION")
    config_sub.required = True
    show = config_sub.add_parser("show", help="print the resolved config with every default")
    show.add_argument("file", help="TOML config")
    show.set_defaults(func=_cmd_config_show)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``opboost`` console script."""
    from opboost.exceptions import OpboostError

    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (OpboostError, ImportError) as exc:
        print(f"opboost: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # missing file, read-only or full disk, ...: names the file
        print(f"opboost: error: {exc}", file=sys.stderr)
        return 2
    except UnicodeDecodeError as exc:  # a text file that is not UTF-8 (configs say which)
        print(f"opboost: error: a file is not UTF-8 text: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
