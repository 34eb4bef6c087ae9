"""`.ci/run` leaves nothing behind in the temporary directory, however it ends.

Each run builds a virtualenv of about 1 GB; runs that kept theirs filled the machine's disk
until a later run failed with "No space left on device". The script is run here with a stub
`python3` whose venv fails at its first `pip install`, so no package is installed.
"""

from __future__ import annotations

import shutil
import stat
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

STUB_PYTHON3 = """#!/usr/bin/env bash
# `python3 -m venv DIR`: a venv whose `python` fails, so .ci/run stops at its first step.
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  mkdir -p "$3/bin"
  echo 'python() { echo "stub python: refusing $*" >&2; return 7; }' > "$3/bin/activate"
  exit 0
fi
exit 9
"""


def test_ci_run_removes_its_scratch_directory_when_a_step_fails(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    (checkout / ".ci").mkdir(parents=True)
    shutil.copy2(ROOT / ".ci" / "run", checkout / ".ci" / "run")
    shutil.copy2(ROOT / "README.md", checkout / "README.md")
    stubs = tmp_path / "bin"
    stubs.mkdir()
    python3 = stubs / "python3"
    python3.write_text(STUB_PYTHON3)
    python3.chmod(python3.stat().st_mode | stat.S_IXUSR)
    scratch_root = tmp_path / "tmp"
    scratch_root.mkdir()

    result = subprocess.run(
        ["bash", str(checkout / ".ci" / "run")],
        env={"PATH": f"{stubs}:/usr/bin:/bin", "TMPDIR": str(scratch_root), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 7, result.stderr
    assert "stub python: refusing -m pip install --quiet --upgrade pip" in result.stderr
    assert sorted(p.name for p in scratch_root.iterdir()) == []
