"""The base-learner toolkit: input checks, the WLS fold, and the checksummed text format."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from opboost.api.exceptions import InvalidParameterError
from opboost.api.learner import BaseProblem
from opboost.api.learner_toolkit import (
    as_contexts,
    dumps_checked,
    learner_seed,
    loads_checked,
    prepare_inputs,
    wls_gradients,
    wls_terms,
)
from opboost.api.numerics.row_blocks import RowWeightedProblem


def test_as_contexts_keeps_float_dtype_and_converts_ints():
    """float32 stays float32, ints become float64, CSR stays CSR."""
    assert as_contexts(np.ones((2, 3), np.float32)).dtype == np.float32
    assert as_contexts(np.ones((2, 3), int)).dtype == np.float64
    assert sp.issparse(as_contexts(sp.csr_matrix(np.eye(2))))


def test_as_contexts_checks_feature_count():
    """A feature-count mismatch names both counts."""
    with pytest.raises(InvalidParameterError, match="contexts have 3 features but the model"):
        as_contexts(np.ones((2, 3)), n_features=4)


def test_prepare_inputs_checks_init_scores_shape():
    """init_scores of the wrong shape are rejected with the expected shape."""
    with pytest.raises(
        InvalidParameterError, match=r"init_scores must have shape \(n, K\) = \(2, 3\)"
    ):
        prepare_inputs("L", np.ones((2, 4)), 3, np.zeros((2, 2)))


def test_learner_seed_prefers_own_random_state():
    """The learner's own seed wins over the booster's; both are deterministic."""
    assert learner_seed(5, 7) == learner_seed(5, 99)
    assert learner_seed(None, 7) == learner_seed(None, 7)


def test_wls_terms_scale_normalises_nonzero_weights():
    """scale makes the nonzero weights average 1; w*y is returned."""
    y = np.array([[1.0, -2.0], [3.0, 0.5]])
    w = np.array([[2.0, 0.0], [4.0, 6.0]])
    work, scale = wls_terms("L", BaseProblem("regression", y, w), (2, 2))
    np.testing.assert_allclose(work, w * y)
    assert scale * w[w > 0].mean() == pytest.approx(1.0)


def test_wls_terms_raw_units_keep_the_weights_and_reject_unknown_units():
    """hessian_units="raw" gives scale 1; an unknown unit names the parameter and choices."""
    y, w = np.ones((2, 2)), np.full((2, 2), 3.0)
    _, scale = wls_terms("L", BaseProblem("regression", y, w), (2, 2), hessian_units="raw")
    assert scale == 1.0
    with pytest.raises(InvalidParameterError, match=r"'hessian_units'.*'raw'"):
        wls_terms("L", BaseProblem("regression", y, w), (2, 2), hessian_units="sum")


def test_wls_terms_all_zero_weights_is_none_and_rejects_classification():
    """All-zero weights give None; a classification problem names the reduction."""
    zeros = np.zeros((2, 2))
    assert wls_terms("L", BaseProblem("regression", zeros, zeros), (2, 2)) is None
    with pytest.raises(InvalidParameterError, match="L solves the 'regression' reduction"):
        wls_terms("L", BaseProblem("classification", zeros, zeros), (2, 2))


def _row_weighted(n: int, k: int, seed: int) -> RowWeightedProblem:
    """A regression problem with one weight per row (some 0) and random targets."""
    rng = np.random.default_rng(seed)
    row_w, y = rng.exponential(size=n), rng.normal(size=(n, k))
    row_w[::7] = 0.0
    return RowWeightedProblem(row_w, k, y.__getitem__)


@pytest.mark.parametrize("units", ["mean", "raw"])
@pytest.mark.parametrize("kind", ["row_weighted", "arrays"])
@pytest.mark.parametrize("layout", ["example_major", "class_major"])
def test_wls_gradients_are_the_float32_products_of_wls_terms(monkeypatch, units, kind, layout):
    """The gradients and hessians written in row blocks are, bit for bit, the float32 casts
    of -s w y and s w from wls_terms' (n, K) arrays (the products the learner made before)."""
    from opboost.api.numerics import row_blocks

    monkeypatch.setattr(row_blocks, "BLOCK_VALUES", 50)  # 250 rows: 50 blocks and a rest
    n, k = 250, 4
    problem = _row_weighted(n, k, seed=1)
    if kind == "arrays":
        problem = BaseProblem("regression", problem.targets, problem.weights)
    factors = 1.0 + 1e-6 * np.arange(k)
    work, scale = wls_terms("L", problem, (n, k), hessian_units=units)
    expected_grad = np.empty((n, k), np.float32)
    np.multiply(work, -(scale * factors), out=expected_grad, casting="same_kind")
    expected_hess = np.empty((n, k), np.float32)
    np.multiply(problem.weights, scale * factors, out=expected_hess, casting="same_kind")
    buffer = np.full((n, k), np.nan)  # the scratch shares memory with the outputs
    grad, hess = buffer.reshape(-1).view(np.float32).reshape(2, n * k)
    if layout == "example_major":
        grad, hess = grad.reshape(n, k), hess.reshape(n, k)
    else:
        grad, hess = grad.reshape(k, n).T, hess.reshape(k, n).T
    assert wls_gradients("L", problem, grad, hess, factors, scratch=buffer, hessian_units=units)
    assert np.array_equal(grad, expected_grad) and np.array_equal(hess, expected_hess)


def test_wls_gradients_reject_what_wls_terms_rejects():
    """All-zero weights give False; bad values, shapes and reductions raise as in wls_terms."""
    n, k = 6, 3
    grad, hess, scratch = np.empty((n, k), np.float32), np.empty((n, k), np.float32), None
    zero = RowWeightedProblem(np.zeros(n), k, lambda rows: np.ones((len(range(n)[rows]), k)))
    assert not wls_gradients("L", zero, grad, hess, np.ones(k), scratch=np.empty((n, k)))
    y, w = np.ones((n, k)), np.ones((n, k))
    bad = [
        (BaseProblem("regression", y * np.nan, w), "weights must be finite"),
        (BaseProblem("regression", y, -w), "weights must be finite"),
        (BaseProblem("regression", y[:2], w[:2]), r"must have shape \(n, K\) = \(6, 3\)"),
        (BaseProblem("classification", y, w), "solves the 'regression' reduction"),
    ]
    for problem, match in bad:
        with pytest.raises(InvalidParameterError, match=match):
            wls_gradients("L", problem, grad, hess, np.ones(k), scratch=scratch)


def test_checked_text_round_trip_and_tamper_detection():
    """dumps/loads round-trip; an edited body or a foreign format is a ValueError."""
    text = dumps_checked("fmt_v1", {"n": 3}, "model body\nline 2")
    header, body = loads_checked(text, "fmt_v1", "E")
    assert header["n"] == 3 and body == "model body\nline 2"
    with pytest.raises(ValueError, match="does not match the SHA-256"):
        loads_checked(text.replace("line 2", "line 3"), "fmt_v1", "E")
    with pytest.raises(ValueError, match="Not a other_v1 ensemble"):
        loads_checked(text, "other_v1", "E")
