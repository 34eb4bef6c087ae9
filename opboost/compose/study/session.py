"""One running study: the trials it plans, the stored ones it resumes, the new and failed
ones it records as they finish (trial files, partial outputs) and its results."""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from opboost.compose.config.experiment import ExperimentConfig
from opboost.compose.study.errors import StudyError, StudyInterrupted, os_error
from opboost.compose.study.outputs import (
    remove_leftover_temporaries,
    write_partial_outputs,
    write_trial_record,
)
from opboost.compose.study.results_json import assemble, plugins, trial_versions, versions
from opboost.compose.study.workers import (
    clear_trial_data,
    failure_entry,
    install_sigterm,
    run_trials,
)
from opboost.compose.trial.plan import (
    ResolvedTrial,
    TrialKey,
    fingerprint,
    plan_trials,
    resolve_trial,
    trial_filenames,
)
from opboost.compose.trial.store import load_stored_trials

__all__ = ["StudyRun"]


class StudyRun:
    """The state of a study between its plan and its results: ``done`` and ``failed``
    ({key: trial result or failure entry}), ``stale`` ({reason: [stored file, ...]})."""

    def __init__(
        self,
        config: ExperimentConfig,
        out: str | os.PathLike | None,
        data_dir: str | None,
        on_trial: Callable[[TrialKey, dict], None] | None,
    ) -> None:
        from opboost.compose.trial.trial_data import clear_dataset_cache, data_digest

        clear_dataset_cache()  # read the data set afresh: its contents are part of the fingerprint
        clear_trial_data()
        self.config, self.out, self.data_dir, self.on_trial = config, out, data_dir, on_trial
        self.digest = data_digest(config.data, data_dir)
        self.current = versions()
        self.keys = plan_trials(config)
        self.names = trial_filenames(self.keys)
        self.prints = {key: fingerprint(config, key, self.digest) for key in self.keys}
        self.trial_versions = trial_versions(config, self.keys, self.current)
        self.trial_dir = None if out is None else Path(out) / "trials"
        self.done: dict[TrialKey, dict] = {}
        self.stale: dict[str, list[str]] = {}
        self.failed: dict[TrialKey, dict] = {}
        self.errors: list[BaseException] = []
        self.plugin_list: list[dict[str, Any]] = []
        self._partial_at, self._partial_cost = -math.inf, 0.0

    def resume(self) -> list[TrialKey]:
        """Take the stored trials that are still valid (saying on stderr why any other is
        re-run); return the trials to run, in plan order."""
        trial_dir = self.trial_dir
        if trial_dir is not None:
            try:
                trial_dir.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StudyError(
                    f"Cannot create the trial directory {trial_dir} ({os_error(exc)})."
                ) from exc
            remove_leftover_temporaries(Path(self.out), trial_dir)
            self.done, self.stale = load_stored_trials(
                trial_dir, self.keys, self.prints, self.digest, self.trial_versions, self.names
            )
            for reason, files in self.stale.items():
                shown = ", ".join(files[:10]) + (
                    f" and {len(files) - 10} more" if len(files) > 10 else ""
                )
                print(
                    f"opboost study: re-running {len(files)} stored trial(s) of {trial_dir} "
                    f"because {reason}: {shown}.",
                    file=sys.stderr,
                )
        return [k for k in self.keys if k not in self.done]

    def run(self, todo: list[TrialKey], n_jobs: int, progress: bool) -> None:
        """Run ``todo``, recording each trial as it finishes; on SIGTERM say where the
        finished trials are and raise :class:`StudyInterrupted`."""
        self.plugin_list = plugins()
        bar = _progress(len(self.keys), len(self.keys) - len(todo), progress)
        restore = install_sigterm()
        try:
            run_trials(todo, self.resolve, n_jobs, self.finish, self.fail, bar)
        except StudyInterrupted:
            kept = self.trial_dir
            where = "" if kept is None else f"; the finished trials are kept in {kept}"
            print(f"opboost study: terminated (SIGTERM){where}.", file=sys.stderr)
            raise
        finally:
            restore()
            bar.close()

    def resolve(self, key: TrialKey) -> ResolvedTrial:
        """The plain data that runs trial ``key``: resolved here, once, so that a worker runs
        it without reading the config again."""
        return resolve_trial(self.config, key, self.data_dir)

    def finish(self, key: TrialKey, result: dict) -> None:
        """Record a successful trial: its trial file, the partial outputs, ``on_trial``."""
        if self.trial_dir is not None:
            record = {
                "fingerprint": self.prints[key],
                "data_hash": self.digest,
                "versions": self.trial_versions[key],
                "result": result,
            }
            path = self.trial_dir / self.names[key]
            try:
                write_trial_record(path, record)
            except OSError as exc:  # read-only, disk full, ...: stop, keep what is stored
                kept = sum(1 for k in self.done if (self.trial_dir / self.names[k]).is_file())
                raise StudyError(
                    f"Writing the trial file {path} failed ({os_error(exc)}). The {kept} "
                    f"finished trials stored before it are kept in {self.trial_dir}; fix the "
                    f"cause (permissions, free space) and re-run the same study to resume from "
                    f"them."
                ) from exc
        self.done[key] = result
        self.partial()
        if self.on_trial is not None:
            self.on_trial(key, result)

    def fail(self, key: TrialKey, exc: BaseException) -> None:
        """Record a failed trial (the study goes on) and say so on stderr."""
        self.failed[key] = failure_entry(self.config, key, exc)
        self.errors.append(exc)
        print(
            f"opboost study: trial {key.label} seed {key.seed}"
            + ("" if key.candidate is None else f" candidate {key.candidate}")
            + f" failed: {self.failed[key]['error']}",
            file=sys.stderr,
        )
        self.partial()

    def partial(self) -> None:
        """Rewrite results.json and results.md from the trials finished so far. A rewrite
        that took over 50 ms (a huge study) is not repeated until ten times as long has
        passed, so it costs at most ~10% of the study's time."""
        if self.out is None:
            return
        now = time.perf_counter()
        cost = self._partial_cost
        if cost > 0.05 and now - self._partial_at < 10 * cost:
            return
        finished = [k for k in self.keys if k in self.done or k in self.failed]
        try:
            results = self._assemble(finished)
            results["partial"] = {"finished": len(finished), "planned": len(self.keys)}
            write_partial_outputs(results, Path(self.out))
        except Exception:  # best effort: the final outputs report any problem
            pass
        self._partial_at = time.perf_counter()
        self._partial_cost = self._partial_at - now

    def results(self, n_run: int, start: float) -> dict[str, Any]:
        """results.json's content, with ``timings`` (``start``: the study's perf_counter
        start, ``n_run``: trials run); raises the first error when no trial succeeded."""
        if self.errors and not self.done:
            raise self.errors[0]  # no trial at all succeeded: most likely the data or the config
        try:
            results = self._assemble(self.keys)
        except Exception as exc:
            where = ""
            if self.trial_dir is not None:
                where = f" The {len(self.done)} finished trials are kept in {self.trial_dir}; "
                where += "fix the cause and re-run to resume."
            raise StudyError(
                f"Summarising the study's trials failed ({type(exc).__name__}: {exc}).{where}"
            ) from exc
        results["timings"] = {
            "study_seconds": time.perf_counter() - start,
            "trials_run": n_run,
            "trials_resumed": len(self.keys) - n_run,
            "trials_failed": len(self.failed),
            "trials_stale": sum(len(v) for v in self.stale.values()),
            "stale_reasons": sorted(self.stale),
        }
        return results

    def _assemble(self, keys: list[TrialKey]) -> dict[str, Any]:
        return assemble(
            self.config,
            keys,
            self.done,
            self.failed,
            library_versions=self.current,
            plugin_list=self.plugin_list,
        )


def _progress(total: int, initial: int, enabled: bool) -> Any:
    from tqdm.auto import tqdm

    return tqdm(
        total=total,
        initial=initial,
        desc="trials",
        unit="trial",
        # None: tqdm turns itself off when stderr is not a terminal (logs, CI, pipes)
        disable=None if enabled else True,
        file=sys.stderr,
        dynamic_ncols=True,
    )
