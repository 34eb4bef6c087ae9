"""PolicyChoice on logs with candidate sets: every candidate is fitted, scored and served
within each row's candidates (issue 40: it chose the constant action 0, a candidate in only
half the rows, and its DR score counted the rows where 0 could not be served)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from opboost.api.data.logged import LoggedBandit
from opboost.api.policy import ConstantPolicy
from opboost.api.serving.tie_order import constant_action_values
from opboost.api.validation import check_random_state
from opboost.compose.choice import PolicyChoice
from opboost.core.booster_checks import split_holdout
from opboost.core.selection import logs_scorer


def _logs(n: int = 400, seed: int = 0, sparse: bool = False) -> LoggedBandit:
    """Action 0 pays 1 and is a candidate in the first half of the rows only; action 1 (the
    first candidate elsewhere) pays 0.5, action 2 pays 0; uniform logging over candidates."""
    rng = np.random.default_rng(seed)
    mask = np.ones((n, 3), dtype=bool)
    mask[n // 2 :, 0] = False
    probs = mask / mask.sum(axis=1, keepdims=True)
    actions = (rng.random(n)[:, None] > probs.cumsum(axis=1)).sum(axis=1)
    rewards = np.array([1.0, 0.5, 0.0])[actions]
    return LoggedBandit(
        rng.normal(size=(n, 2)),
        actions,
        probs[np.arange(n), actions],
        rewards,
        3,
        logging_probs=probs,
        candidates=sp.csr_matrix(mask) if sparse else mask,
    )


def test_constant_action_values_score_the_served_constant_policy():
    """With candidates, V(a) is the SNIPS value of "a where it is a candidate, else the row's
    first candidate", dense and sparse masks alike (brute force over the rows)."""
    for sparse in (False, True):
        data = _logs(sparse=sparse)
        mask = np.asarray(sp.csr_matrix(data.candidates).toarray())
        w = 1 / data.propensities
        expected = []
        for a in range(3):
            served = np.where(mask[:, a], a, mask.argmax(axis=1))
            hit = served == data.actions
            expected.append((w * hit * data.rewards).sum() / (w * hit).sum())
        np.testing.assert_allclose(constant_action_values(data), expected)
    np.testing.assert_allclose(expected, [0.75, 0.5, 0.0], atol=0.05)


def test_policy_choice_scores_the_constant_as_served_within_candidates():
    """The constant candidate plays 0 where it is a candidate and 1 elsewhere; its DR score
    is that served policy's on the held-out rows (about 0.75, not the 0.5 of counting action 0
    where it cannot be served), and predict(candidates=) serves only candidates."""
    data = _logs()
    choice = PolicyChoice(candidates=["constant"], random_state=0).fit(data)
    assert choice.policy_.action == 0
    seed = int(check_random_state(0).integers(2**31 - 1))
    _, holdout = split_holdout(data, 0.2, seed)
    served = ConstantPolicy(0, 3).predict_proba(holdout.contexts, candidates=holdout.candidates)
    scorer = logs_scorer(holdout, "dr", seed)
    assert choice.scores_["constant"]["value"] == np.mean(scorer.row_values(served))
    unserved = ConstantPolicy(0, 3).predict_proba(holdout.contexts)  # what 2a064fa scored
    unserved_values = scorer.estimator.values_at(holdout, unserved, scorer.q)  # unchecked
    assert np.mean(unserved_values) < 0.6 < choice.scores_["constant"]["value"]
    actions = choice.predict(data.contexts, candidates=data.candidates)
    assert data.candidates[np.arange(len(data)), actions].all()
    assert np.array_equal(actions, np.where(data.candidates[:, 0], 0, 1))


def test_policy_choice_scores_every_learner_on_its_served_candidates():
    """A learned candidate's DR score is that of its argmax over each held-out row's
    candidates (recomputed from the training-part fit, kept with refit=False), and the
    chosen policy's scores are -inf outside the candidates."""
    data = _logs()
    choice = PolicyChoice(candidates=["reward_regression"], refit=False, random_state=0)
    choice.fit(data)
    seed = int(check_random_state(0).integers(2**31 - 1))
    _, holdout = split_holdout(data, 0.2, seed)
    scorer = logs_scorer(holdout, "dr", seed)
    probs = choice.predict_proba(holdout.contexts, candidates=holdout.candidates)
    assert choice.scores_["reward_regression"]["value"] == np.mean(scorer.row_values(probs))
    decision = choice.decision_function(holdout.contexts, candidates=holdout.candidates)
    assert np.isneginf(decision[~holdout.candidates]).all()
    assert np.isfinite(decision[holdout.candidates]).all()
