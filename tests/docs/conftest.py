"""Print how many documentation blocks the docs test ran (tests/docs/test_docs_run.py)."""

from __future__ import annotations


def pytest_terminal_summary(terminalreporter) -> None:
    from test_docs_run import ALL, SLOW

    reports = [r for key in ("passed", "failed") for r in terminalreporter.stats.get(key, [])]
    if not any("_blocks_run[" in getattr(r, "nodeid", "") for r in reports):
        terminalreporter.write_line(
            'docs: no blocks run (their tests are marked slow: -m "slow or not slow" runs them).'
        )
        return
    ran = [b for b in ALL if b.mark is None or (b.mark == "slow" and SLOW)]
    python = sum(b.lang in ("python", "py") for b in ran)
    slow = sum(b.mark == "slow" for b in ALL) if not SLOW else 0
    skipped = sum(b.mark == "skip" for b in ALL)
    terminalreporter.write_line(
        f"docs: {python} Python and {len(ran) - python} shell blocks of README.md and docs/**/*.md "
        f"run; {slow} slow ones left for OPBOOST_DOCS_SLOW=1, {skipped} never run (reasons in "
        f"the docs)."
    )
