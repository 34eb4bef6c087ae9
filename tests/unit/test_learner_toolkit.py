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
    wls_terms,
)


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


def test_checked_text_round_trip_and_tamper_detection():
    """dumps/loads round-trip; an edited body or a foreign format is a ValueError."""
    text = dumps_checked("fmt_v1", {"n": 3}, "model body\nline 2")
    header, body = loads_checked(text, "fmt_v1", "E")
    assert header["n"] == 3 and body == "model body\nline 2"
    with pytest.raises(ValueError, match="does not match the SHA-256"):
        loads_checked(text.replace("line 2", "line 3"), "fmt_v1", "E")
    with pytest.raises(ValueError, match="Not a other_v1 ensemble"):
        loads_checked(text, "other_v1", "E")
