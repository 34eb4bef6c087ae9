"""The ``opboost`` command line.

Subcommands: ``plugins`` (what is installed), ``quickstart`` (the README's main job).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

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
        dataset=args.dataset, n_seeds=args.seeds, n_rounds=args.rounds, data_dir=args.data_dir
    )
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
    p.add_argument("--dataset", default="digits", help="data set name (default: digits)")
    p.add_argument("--seeds", type=int, default=3, help="number of simulated logs (default: 3)")
    p.add_argument("--rounds", type=int, default=None, help="boosting rounds (default: tuned)")
    p.add_argument("--data-dir", default=None, help="directory of real data sets ($OPBOOST_DATA)")
    p.set_defaults(func=_cmd_quickstart)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``opboost`` console script."""
    from opboost.exceptions import OpboostError

    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (OpboostError, FileNotFoundError) as exc:
        print(f"opboost: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
