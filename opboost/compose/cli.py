"""The ``opboost`` command line.

Subcommands: ``plugins`` (what is installed), ``quickstart`` (the README's main job),
``run FILE`` (one algorithm, one seed), ``study FILE --out DIR`` (every algorithm x seed,
resumable), ``config show FILE`` (the resolved config with every default). ``run`` and
``study`` take ``--set PATH=VALUE`` (override any config value, validated like the file),
``--seeds N ...`` and ``--dry-run`` (validate and print the plan, run nothing).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from opboost.api.exceptions import ConfigError

__all__ = ["main"]


def _cmd_plugins(args: argparse.Namespace) -> int:
    from opboost.core.registry import get_registry

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
    from opboost.compose.quickstart import run_quickstart

    run_quickstart(
        dataset=args.dataset,
        n_seeds=args.seeds,
        n_rounds=args.rounds,
        data_dir=args.data_dir,
        n_jobs=args.n_jobs,
    )
    return 0


def _load(args: argparse.Namespace):
    """The config of ``args.file`` with ``--set`` and ``--seeds`` applied and validated."""
    from opboost.compose.config.experiment import load_config

    overrides = list(args.set or [])
    if args.seeds is not None:
        seeds = args.seeds
        if any(s < 0 for s in seeds) or len(set(seeds)) != len(seeds):
            raise ConfigError(
                f"--seeds must be distinct integers >= 0. Got {' '.join(map(str, seeds))}.",
                file=args.file,
                key="experiment.seeds",
            )
        overrides.append(f"experiment.seeds={list(seeds)}")
    config = load_config(args.file, overrides)
    config.check_data()  # a study on logs: the file and its columns, before anything runs
    return config


def _changes(args: argparse.Namespace) -> str:
    shown = [f"--set {a}" for a in args.set or []]
    if args.seeds is not None:
        shown.append("--seeds " + " ".join(map(str, args.seeds)))
    return f" (with {' '.join(shown)})" if shown else ""


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _data_line(config: Any) -> str:
    if hasattr(config.data, "describe"):  # the user's own logs or a catalogue world
        return config.data.describe()
    params = ", ".join(f"{k}={v!r}" for k, v in config.data.params.items())
    sim = ", ".join(f"{k}={v}" for k, v in config.simulation.items())
    return (
        f"data set: {config.data.name}"
        + (f" ({params})" if params else "")
        + (f"\nsimulation: {sim}")
    )


def _cmd_run(args: argparse.Namespace) -> int:
    from opboost.compose.study.report import aligned_rows
    from opboost.compose.trial.run import run_trial
    from opboost.compose.trial.trial_data import prepare_trial

    config = _load(args)
    algo = config.algorithm(args.algorithm)
    if args.seed is not None and args.seeds is not None:
        raise ConfigError("give --seed or --seeds, not both.", file=config.file)
    if args.seed is not None:
        seeds = [args.seed]
    elif args.seeds is not None:
        seeds = list(config.experiment["seeds"])
    else:
        seeds = [config.experiment["seeds"][0]]
    if args.seed is not None and args.seed < 0:
        raise ConfigError(f"--seed must be >= 0. Got {args.seed}.", file=config.file)
    if args.dry_run:
        print(f"dry run of {config.file}{_changes(args)}: the config is valid; nothing is run.")
        print(_data_line(config))
        print(
            f"would run {algo.label} ({algo.family}) on seed(s) "
            f"{', '.join(map(str, seeds))}: {len(seeds)} trial(s)"
        )
        if algo.search is not None:
            print("  (its search is ignored by 'run'; 'opboost study' runs the search)")
        return 0
    dumped = []
    for seed in seeds:
        data = prepare_trial(config.data, config.simulation, seed, args.data_dir)
        result = run_trial(config, algo, data)
        if args.json:
            dumped.append(result.to_dict())
            continue
        print(f"{algo.label} ({algo.family}) on {data.name}, seed {seed}: {data.rows_text()}")
        if algo.search is not None:
            print("  (its search is ignored by 'run'; 'opboost study' runs the search)")
        rows: list[tuple[str, Any]] = list(result.metrics.items())
        for name in ("n_rounds", "stop_reason", "n_interactions", "action"):
            if name in result.info:
                rows.append((name, result.info[name]))
        if result.fallback is not None:
            rows.append(("fallback", result.fallback))
        rows.append(("seconds", f"{result.timings['total_seconds']:.2f}"))
        print(aligned_rows(rows), end="")
    if args.json:
        print(json.dumps(dumped[0] if len(dumped) == 1 else dumped, indent=1))
    return 0


def _dry_run_study(args: argparse.Namespace, config: Any) -> int:
    from opboost.compose.study.runner import study_plan
    from opboost.compose.trial.plan import trial_filenames

    plan = study_plan(config, args.out, data_dir=args.data_dir, n_jobs=args.n_jobs)
    keys, to_run, reused = plan["trials"], plan["to_run"], set(plan["reused"])
    seeds = config.experiment["seeds"]
    print(f"dry run of {config.file}{_changes(args)}: the config is valid; nothing is run.")
    print(_data_line(config))
    print(
        f"trials: {len(config.algorithms)} algorithm(s) x {len(seeds)} seed(s) "
        f"({', '.join(map(str, seeds))}) = {len(keys)} trial(s) (search candidates included); "
        f"{plan['n_jobs']} parallel job(s)"
    )
    head = ("algorithm", "family", "trials", "stored", "to run", "s / trial")
    rows = []
    for algo in config.algorithms:
        mine = [k for k in keys if k.label == algo.label]
        seconds = plan["seconds_per_trial"].get(algo.label)
        rows.append(
            (
                algo.label,
                algo.family,
                str(len(mine)),
                str(sum(1 for k in mine if k in reused)),
                str(sum(1 for k in mine if k not in reused)),
                "—" if seconds is None else f"{seconds:.2f}",
            )
        )
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    for r in [head, *rows]:
        cells = [r[0].ljust(widths[0]), r[1].ljust(widths[1])]
        cells += [c.rjust(w) for c, w in zip(r[2:], widths[2:], strict=True)]
        print("  " + "  ".join(cells).rstrip())
    trial_dir = Path(args.out) / "trials"
    if reused or plan["stale"]:
        print(f"stored in {trial_dir}: {len(reused)} trial(s) would be reused")
        for reason, files in plan["stale"].items():
            print(f"  {len(files)} stored trial(s) would be re-run because {reason}")
    else:
        print(f"no reusable trials stored in {trial_dir}")
    if not to_run:
        print("nothing to run: every trial is stored (the outputs would be rewritten)")
    elif plan["estimate_seconds"] is None:
        print(f"time estimate: unknown (no stored trial timings in {trial_dir})")
    else:
        unknown = plan["unknown_labels"]
        note = f"; no timing for {', '.join(unknown)}" if unknown else ""
        print(
            f"time estimate: about {_duration(plan['estimate_seconds'])} for {len(to_run)} "
            f"trial(s) on {min(plan['n_jobs'], len(to_run))} job(s), from the timings of "
            f"earlier trials stored in {trial_dir}{note}"
        )
    if args.verbose:
        names = trial_filenames(keys)
        for k in keys:
            print(f"  {'stored' if k in reused else 'run   '}  {names[k]}")
    return 0


def _cmd_study(args: argparse.Namespace) -> int:
    from opboost.compose.study.runner import run_study

    config = _load(args)
    if args.dry_run:
        return _dry_run_study(args, config)
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


_SET_HELP = (
    "override a config value (repeatable): PATH=VALUE, VALUE a TOML literal (bare words are "
    "strings), e.g. simulation.logging_C=0.01, experiment.seeds=[0,1], "
    "algorithms[BOPL-S].booster.n_rounds=5 (algorithms by [index], [label] or [*])"
)


def _add_quick_options(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--set", action="append", metavar="PATH=VALUE", help=_SET_HELP)
    p.add_argument(
        "--seeds", type=int, nargs="+", metavar="SEED", help="override [experiment] seeds"
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help=f"validate the config and print {what}, then exit without running",
    )


def _quickstart_help() -> dict[str, str]:
    """The quickstart options' defaults, read from the packaged config."""
    try:
        from opboost.compose.quickstart import quickstart_defaults

        d = quickstart_defaults()
    except Exception:  # pragma: no cover - a broken install: the command itself will say
        return {
            k: "see opboost/compose/configs/quickstart.toml"
            for k in ("data", "seeds", "rounds", "jobs")
        }
    rounds = ", ".join(str(r) for r in d["n_rounds"]) or "none"
    return {
        "data": f"{d['dataset']}",
        "seeds": f"{d['n_seeds']}",
        "rounds": f"{rounds}, from the packaged config",
        "jobs": f"{d['n_jobs']} from the packaged config, at most the number of CPUs",
    }


def _cmd_config_show(args: argparse.Namespace) -> int:
    from opboost.compose.config.experiment import dumps_resolved, load_config

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
    _add_quickstart(sub)
    _add_run(sub)
    _add_study(sub)

    p = sub.add_parser("config", help="inspect config files")
    config_sub = p.add_subparsers(dest="config_command", metavar="ACTION")
    config_sub.required = True
    show = config_sub.add_parser("show", help="print the resolved config with every default")
    show.add_argument("file", help="TOML config")
    show.set_defaults(func=_cmd_config_show)
    return parser


def _add_quickstart(sub: Any) -> None:
    p = sub.add_parser(
        "quickstart",
        help="simulate logged data from a bundled data set, train policies, print a table",
    )
    qs = _quickstart_help()
    p.add_argument("--dataset", default=None, help=f"data set name (default: {qs['data']})")
    p.add_argument(
        "--seeds", type=_count, default=None, help=f"number of seeds (default: {qs['seeds']})"
    )
    p.add_argument(
        "--rounds", type=_count, default=None, help=f"boosting rounds (default: {qs['rounds']})"
    )
    p.add_argument(
        "--n-jobs", type=_count, default=None, help=f"parallel trials (default: {qs['jobs']})"
    )
    _add_data_dir(p)
    p.set_defaults(func=_cmd_quickstart)


def _add_run(sub: Any) -> None:
    p = sub.add_parser("run", help="train and evaluate one algorithm of a config on one seed")
    p.add_argument("file", help="TOML config")
    p.add_argument("--algorithm", default=None, help="label of the algorithm (if several)")
    p.add_argument("--seed", type=int, default=None, help="trial seed (default: first seed)")
    _add_data_dir(p)
    p.add_argument("--json", action="store_true", help="print the full trial result as JSON")
    _add_quick_options(p, "what would run")
    p.set_defaults(func=_cmd_run)


def _add_study(sub: Any) -> None:
    p = sub.add_parser("study", help="every algorithm x seed; tables, JSON/CSV and plots")
    p.add_argument("file", help="TOML config")
    p.add_argument("--out", required=True, help="output directory (resumes from its trials/)")
    p.add_argument("--n-jobs", type=_count, default=None, help="parallel trials ([experiment])")
    _add_data_dir(p)
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--verbose", action="store_true", help="with --dry-run: list every trial file")
    _add_quick_options(
        p, "the trial plan (trials stored in --out to reuse, a time estimate from their timings)"
    )
    p.set_defaults(func=_cmd_study)


def _count(text: str) -> int:
    """An argparse type: an integer >= 1 (argparse names the option in its error)."""
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1. Got {text!r}")
    return int(text)


def _add_data_dir(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-dir", default=None, help="directory of real data sets ($OPBOOST_DATA)")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``opboost`` console script."""
    from opboost.api.exceptions import OpboostError

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
