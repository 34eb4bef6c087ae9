"""The offline boosting loop (London et al. 2023, Algorithms 1-4).

Each round the objective turns the ensemble scores F and the estimator's coefficients c into
a base-learning problem, the base learner fits f_t, the objective gives the closed-form step
alpha_t and F <- F + alpha_t f_t. The booster knows only the plugin interfaces: the maths is
in ``opboost.algorithms.objectives``, the models in ``opboost.algorithms.learners``, the extensions
in ``opboost.core.callbacks``."""

from __future__ import annotations

import functools
import numbers
from collections.abc import Collection, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, clone

from opboost.api.callback import Callback
from opboost.api.component import check_params
from opboost.api.constraints import validate_params
from opboost.api.data.logged import LoggedBandit
from opboost.api.data.tabular_frames import attach_feature_names, attach_schema
from opboost.api.engine import BoosterEngine, Components, RemoteLogs
from opboost.api.serving.exploration import ExplorationMixin
from opboost.api.serving.tie_order import constant_tie_order
from opboost.api.validation import check_fitted
from opboost.core.booster_checks import BOOSTER_CONSTRAINTS
from opboost.core.booster_inputs import check_X, fit_logs, record_features
from opboost.core.loop import run_fit
from opboost.core.progress import Progress
from opboost.core.resolve import (
    FitPlan,
    plan_fit,
    resolve_components,
    set_component_params,
    split_component_params,
)
from opboost.core.selection import challenger_policy

__all__ = ["Booster"]


class Booster(ExplorationMixin, BaseEstimator):
    """Boosted off-policy learning of a softmax ensemble policy from logged bandit feedback.

    Parameters
    ----------
    objective
        "auto" (default): "poem" (BOPL's risk with a sample-variance penalty) when the
        fit starts from the learner's own reward model with per-row coefficients, else "bopl_s"
        (docs/benchmarks/defaults.md); "bopl_s", "bopl", "poem", ... or an Objective instance.
    estimator
        training coefficients; "ips" (default), "truncated_ips" (one per row), "dr"
        (doubly robust: per-action coefficients from a cross-fitted LightGBM reward model),
        "dm" (the reward model alone) or an instance.
    base_learner
        "lightgbm_tree" (default), "sklearn_tree", ... or a BaseLearner instance.
    n_rounds
        T, the maximum number of boosting rounds (0 <= T <= 1,000,000; 0: the start F_0 alone,
        for a fit that has one), or "auto" (default): 100, but 0 after a reward-model start on
        candidate pairs (item features, candidate sets), where the rounds only overfit the logs
        (docs/catalogue.md).
    reward_shift
        delta added to every reward before the coefficients (r <- r + delta).
    base_learner_params, estimator_params, objective_params
        parameters for components
        given by name (or set on a clone of an instance).
    scale
        Z > 0 rescales each f_t so (1/n) sum |c_i| sigma_i ||f_t(x_i)||^2 = Z before the
        step (Theorem 1; appendix D.1); None keeps the learner's scale. F is unchanged.
    random_state
        seed (int, Generator or None) for the base learner and the holdout split.
    learning_rate
        nu > 0 multiplies every step, F <- F + nu alpha_t f_t; 1.0 (default).
        With ``l2``, the regularisation of docs/offline.md, "Regularisation".
    l2
        lambda >= 0, penalty lambda sum_t alpha_t^2 on the ensemble weights (London et al.,
        appendix E); the penalised closed-form step is alpha = N / (D + 2 n lambda) with
        N = sum c_i xi_i g_i^T f_i and D = sum |c_i| sigma_i ||f_i||^2. 0.0 (default) is off.
    warm_start
        F_0, where boosting starts (docs/offline.md, "Warm start"). "auto" (default):
        "reward_model" if the base learner fits its own reward model (``lightgbm_tree``,
        stacked designs), else "none". "none" (or None): F_0 = 0, London et al.'s algorithm.
        "reward_model": F_0 = q(x, a) / tau, q a reward model of the logged rewards on
        [x; a] (``lightgbm_tree``: trees, or per-action ridge plus trees, chosen on held-out
        logs): boosting starts at the direct-method policy. "best_constant": F_0 puts
        ``warm_start_prob`` on the best action by SNIPS. "logging": F_0 ~ log pi_0(a|x).
    warm_start_prob
        q in (0, 1), or None (default: 0.7 for "reward_model", else 0.5): the
        share of the way from 1/K to 1 that F_0's average best-action probability goes.
    validation_fraction
        a fraction in (0, 1) of the logs held out (seeded by
        ``random_state``); the booster trains on the rest, scores the policy after every round
        on the held-out logs with ``selection`` and keeps the round with the best estimate:
        ``policy_`` predicts with the selected rounds only (with ``refit``, those of a fit on
        all the logs). None: every round kept. "auto" (default): when the fit starts from the
        learner's reward model over fixed actions (and has no checkpointing or early-stopping
        callback), 0.2 held out and a paired rule: the rounds are kept only where their
        held-out DR gain over the start alone, row by row on the same rows, is clear at 75%
        (one-sided), else the start alone; the best constant action, then the doubly robust
        reduction (``fallback_`` "constant" or "dr_reduction"), replace the kept policy only
        where their own paired gain is clear at 95%; the rounds stop 20 past the best
        held-out one.
        Else None (``opboost.core.resolve.effective_round_choice``; docs/tuning.md, "How many
        rounds").
        With ``selection``, ``selection_policy``, ``safe`` and ``refit``, the label-free model
        selection of docs/tuning.md.
    selection
        the estimator scoring held-out rounds: "snips", "ips", "dr", ... "auto"
        (default): "dr" whose reward model is the fit's own start (fitted on the training
        rows only, so new to the held-out ones) when the fit starts from the learner's reward
        model over fixed actions, else "snips".
    selection_policy
        "argmax" (default; what ``predict`` plays) or "softmax".
    safe
        if True (needs validation_fraction), fall back to the best constant action (chosen
        on the training logs) when the selected policy's lower 95% bound on the held-out logs does
        not exceed that action's held-out estimate: ``fallback_`` is then "constant" and ``policy_``
        a [`ConstantPolicy`][opboost.api.policy.ConstantPolicy]. ``selection_["beats_logging"]``
        says whether the bound beats the logging policy's value (the mean held-out reward).
    refit
        with validation_fraction, True (default) refits on ALL the logs for the selected
        number of rounds (0: the start alone; docs/benchmarks/defaults.md); False keeps the
        selection fit's truncated ensemble. No refit after a fallback.
    verbose
        what ``fit`` prints on stderr. "auto" (default): the fit's progress by stage
        ([`Progress`][opboost.core.callbacks.Progress]) on an interactive terminal once the fit has
        run ``opboost.core.booster_checks.VERBOSE_DELAY``
        seconds, so quick fits, scripts, logs and CI stay silent;
        0 (or False): nothing; 1 (or True) and more: from the start, on any stderr (plain
        lines when it is not a terminal), with a summary line at the end.
        A ``Progress`` among the fit's callbacks replaces it.

    Attributes
    ----------
    policy_
        the fitted [`Policy`][opboost.api.policy.Policy].
    n_rounds_
        the number of rounds run.
    history_
        dict of (n_rounds_,) arrays, one per metric.
    stop_reason_
        why the fit stopped.
    best_round_
        with ``validation_fraction``: the rounds in ``policy_``.
    selection_
        with ``validation_fraction``: the selection report (dict).
    fallback_
        with ``validation_fraction``: "constant" after a fallback to the best constant
        action (``safe``, or the paired rule), "dr_reduction" when the paired rule kept the
        doubly robust reduction, else None.
    reward_start_
        with a learner's own reward-model start a dict (the family chosen, its
        trees, the held-out errors, 1/tau; also ``policy_.metadata["reward_start"]``), else
        None (``warm_start="none"``, another start, or a learner without its own reward
        model).

    Notes
    -----
    Deployment with exploration: ``sample``, ``action_distribution`` and ``sample_slate``
    (``opboost.api.serving.exploration``)."""

    def __init__(
        self,
        *,
        objective: Any = "auto",
        estimator: Any = "ips",
        base_learner: Any = "lightgbm_tree",
        n_rounds: int | str = "auto",
        reward_shift: float = 0.0,
        base_learner_params: Mapping | None = None,
        estimator_params: Mapping | None = None,
        objective_params: Mapping | None = None,
        scale: float | None = None,
        random_state: Any = None,
        learning_rate: float = 1.0,
        l2: float = 0.0,
        warm_start: str | None = "auto",
        warm_start_prob: float | None = None,
        validation_fraction: float | str | None = "auto",
        selection: str = "auto",
        selection_policy: str = "argmax",
        safe: bool = False,
        refit: bool = True,
        verbose: int | str = "auto",
    ) -> None:
        self.objective = objective
        self.estimator = estimator
        self.base_learner = base_learner
        self.n_rounds = n_rounds
        self.reward_shift = reward_shift
        self.base_learner_params = base_learner_params
        self.estimator_params = estimator_params
        self.objective_params = objective_params
        self.scale = scale
        self.random_state = random_state
        self.learning_rate = learning_rate
        self.l2 = l2
        self.warm_start = warm_start
        self.warm_start_prob = warm_start_prob
        self.validation_fraction = validation_fraction
        self.selection = selection
        self.selection_policy = selection_policy
        self.safe = safe
        self.refit = refit
        self.verbose = verbose

    # --- validation and composition -------------------------------------------------------

    #: Accepted values of every parameter (:data:`opboost.core.booster_checks.BOOSTER_CONSTRAINTS`).
    _parameter_constraints: ClassVar[dict[str, Any]] = BOOSTER_CONSTRAINTS

    def validate_params(self) -> None:
        """Check the parameters against ``_parameter_constraints`` (``fit`` does first);
        raise [`InvalidParameterError`][opboost.api.exceptions.InvalidParameterError] on the first
        bad one."""
        validate_params("Booster", self._parameter_constraints, self.get_params(deep=False))

    # scikit-learn's name for the same check
    _validate_params = validate_params

    @classmethod
    def check_params(cls, params: Mapping, where: str = "", *, managed: Collection = ()) -> None:
        """Validate would-be constructor ``params`` (a config's ``booster`` table) without
        building a Booster; see
        [`Component.check_params`][opboost.api.component.Component.check_params]."""
        check_params(cls, "Booster", params, where, managed=managed)

    def resolve_components(self, *, can_start: bool = True, pairs: bool = False) -> Components:
        """The objective, estimator and base learner built from the parameters by registry
        name (or cloned from instances), checked to fit together; ``can_start``: whether the
        fit can start from a reward model, ``pairs``: whether it boosts on candidate pairs
        (what ``objective="auto"`` follows)."""
        return resolve_components(self, can_start=can_start, pairs=pairs)

    # --- fitting --------------------------------------------------------------------------

    def fit(
        self,
        X: Any,
        y: Any = None,
        *,
        n_actions: int | None = None,
        actions: Sequence[Any] | None = None,
        feature_names: Sequence[str] | None = None,
        eval_data: LoggedBandit | None = None,
        callbacks: Sequence[Callback] = (),
    ) -> Booster:
        """Boost for up to ``n_rounds`` rounds on the logs; returns self.

        The logs are either a [`LoggedBandit`][opboost.api.data.logged.LoggedBandit] ``X`` (and no
        ``y``), or, the scikit-learn route (``GridSearchCV``, ``Pipeline``; docs/tuning.md,
        "scikit-learn tools"), a contexts matrix ``X`` (array, sparse matrix or DataFrame) with the
        logged feedback ``y``: an (n, 3) array [action, propensity, reward] or a DataFrame / record
        array with columns "action", "propensity", "reward". ``n_actions`` (K) then defaults
        to max(action) + 1: pass it when some action may be missing from the rows. Action ids
        that are not integers (strings, say) are mapped to the catalogue ``actions`` (every
        action id; default: the sorted ids seen, with an ``ActionCatalogueWarning``) as
        ``LoggedBandit.from_dataframe`` does, and ``predict(X, return_ids=True)`` gives ids.

        ``n_features_in_`` is set, and ``feature_names_in_`` when the names are known: the
        string columns of a DataFrame ``X``, a LoggedBandit's ``feature_names`` attribute or
        ``feature_names``. Prediction then matches DataFrame columns by name.

        ``eval_data`` adds per-round eval metrics (IPS and SNIPS of the softmax and argmax
        policies) to ``history_``. ``callbacks`` are [`Callback`][opboost.api.callback.Callback]
        objects, run in ``order``; a [`Checkpoint`][opboost.core.callbacks.Checkpoint] with
        ``resume=True`` resumes from its directory's last checkpoint.

        ``X`` may also be logs that live elsewhere ([`RemoteLogs`][opboost.api.engine.RemoteLogs],
        such as [`DaskLoggedBandit`][opboost.dask.data.DaskLoggedBandit], docs/dask.md): they supply
        the engine, and the same loop runs it.
        """
        if isinstance(X, RemoteLogs):
            logs = X
        else:  # validate
            logs = fit_logs(self, X, y, n_actions, actions, feature_names, eval_data)
        self.validate_params()
        plan = plan_fit(self, logs, eval_data, callbacks)  # resolve
        run_fit(  # run, then set the fitted attributes (before the callbacks' on_fit_end)
            plan.make_engine,
            plan.n_rounds,
            plan.settings.step,
            plan.callbacks,
            owner=self,
            finish=functools.partial(self._set_fitted, plan, feature_names),
        )
        return self

    def _set_fitted(self, plan: FitPlan, feature_names: Any, fit: BoosterEngine) -> None:
        """Set the fitted attributes from ``fit`` (before the callbacks' ``on_fit_end``)."""
        self.policy_, self.n_rounds_ = fit.policy(), fit.round
        self.history_ = {k: np.asarray(v, dtype=np.float64) for k, v in fit.history.items()}
        self.stop_reason_ = fit.stop_reason
        self.reward_start_ = None  # no reward-model start, unless the fit says otherwise
        for name, value in fit.fitted_attributes().items():
            setattr(self, name, value)
        n_features = getattr(plan.logs, "n_features", None)
        if isinstance(plan.logs, RemoteLogs) and isinstance(n_features, numbers.Integral):
            record_features(self, int(n_features), feature_names)
        if plan.selection is not None:
            self._select(fit, plan.logs, [cb for cb in plan.callbacks if isinstance(cb, Progress)])
        attach_schema(self.policy_, getattr(plan.logs, "schema", None))
        attach_feature_names(self.policy_, getattr(self, "feature_names_in_", None))

    def _select(self, fit, data: LoggedBandit, progress: list[Progress]) -> None:
        """Keep the selected round (or the fallback); refit on all logs when asked. The
        ``progress`` displays show both stages."""
        for p in progress:
            p.stage("hold-out", f"keeping the best of {fit.round} rounds")
        self.policy_, self.best_round_, self.selection_, self.fallback_ = fit.selection.select(fit)
        s = self.selection_
        for p in progress:
            p.note(
                f"[hold-out] round {self.best_round_} kept: {s['method']} {s['value']:.4f} "
                f"[{s['low']:.4f}, {s['high']:.4f}] on {s['n_holdout']} held-out rows"
            )
        challenger = self.fallback_ in fit.selection.challengers
        boosted = self.fallback_ is None and (self.best_round_ or fit.settings.warm_start)
        if self.refit and (challenger or boosted):
            for p in progress:
                p.stage("refit")
            if challenger:  # the policy learner that won, on all the logs
                learner = fit.selection.new_challenger(self.fallback_, fit.seed).fit(data)
                self.policy_ = challenger_policy(learner, constant_tie_order(data))
            else:
                self._refit(data, progress, fit.learner.refit_params())

    def _refit(self, data: LoggedBandit, progress: list[Progress], learner_params: dict) -> None:
        """Replace ``policy_`` by a fit on all of ``data`` with the selected number of rounds
        (shown by the ``progress`` displays of this fit as their stage "refit"), its base
        learner set with ``learner_params`` (the held-out fit's learner's ``refit_params``:
        what it chose, to fit again)."""
        params = {**(self.base_learner_params or {}), **learner_params} or None
        full = clone(self).set_params(
            validation_fraction=None,
            safe=False,
            refit=False,
            n_rounds=self.best_round_,
            verbose=0,
            base_learner_params=params,
        )
        self.policy_ = full.fit(data, callbacks=progress).policy_
        self.policy_.metadata["selected_round"] = self.best_round_
        self.selection_["refit_rounds"] = full.n_rounds_

    # --- prediction -----------------------------------------------------------------------

    def _serve(self, method: str, X: Any, candidates, action_features, **options) -> np.ndarray:
        check_fitted(self, "policy_")  # policy_.<method> on X checked by check_X
        options.update(candidates=candidates, action_features=action_features)
        return getattr(self.policy_, method)(check_X(self, X, method), **options)

    def decision_function(self, X: Any, *, candidates=None, action_features=None) -> np.ndarray:
        """Ensemble scores F(X), shape (m, K). A DataFrame ``X`` is matched to the fitted
        ``feature_names_in_`` by column name; any ``X`` must have ``n_features_in_`` columns.
        ``candidates``, ``action_features`` (a catalogue): as in ``Policy.decision_function``."""
        return self._serve("decision_function", X, candidates, action_features)

    def predict_proba(self, X: Any, *, candidates=None, action_features=None) -> np.ndarray:
        """Softmax policy, shape (m, K) (columns of a DataFrame ``X`` matched by name)."""
        return self._serve("predict_proba", X, candidates, action_features)

    def predict(
        self, X: Any, *, return_ids: bool = False, candidates=None, action_features=None
    ) -> np.ndarray:
        """Argmax action per row, shape (m,) (columns of a DataFrame ``X`` matched by name,
        encoded with the logs' schema); ``return_ids``: the action ids of the catalogue
        (``LoggedBandit.from_dataframe(..., actions=...)``) instead of indices."""
        return self._serve("predict", X, candidates, action_features, return_ids=return_ids)

    def score(self, X: Any, y: Any = None) -> float:
        """SNIPS estimate of the argmax policy's (``predict``'s) value on held-out logs: a
        LoggedBandit ``X``, or contexts ``X`` with feedback ``y`` as in
        [`fit`][opboost.core.booster.Booster.fit]. Higher is better; what ``GridSearchCV`` maximises
        when no ``scoring`` is given. Action ids are matched by id to the fit's catalogue (a fold
        may lack some actions)."""
        from opboost.core.metrics import off_policy_scorer

        return off_policy_scorer("snips", policy="argmax")(self, X, y)

    # --- scikit-learn parameters ----------------------------------------------------------

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # CSR contexts, as in a LoggedBandit
        tags.target_tags.required = True  # y is the logged feedback (unless X is the logs)
        return tags

    def set_params(self, **params: Any) -> Booster:
        """Set parameters. ``<component>__<param>=value`` (component: objective, estimator,
        base_learner) sets that entry of ``<component>_params`` (a new dict; the component is
        built with it at fit), e.g. ``set_params(base_learner__num_leaves=8)``, so the names
        work in ``GridSearchCV`` grids and ``Pipeline`` (``booster__base_learner__...``).
        ``get_params`` reports them inside ``<component>_params`` (the only source of truth, so
        ``clone`` copies them)."""
        plain, nested = split_component_params(params)
        if plain:
            super().set_params(**plain)
        set_component_params(self, nested)
        return self

    def save(self, path: Any) -> Any:
        """Save the fitted policy (see [`Policy.save`][opboost.api.policy.Policy.save])."""
        check_fitted(self, "policy_")
        return self.policy_.save(path)
