"""Base class of online learners (kind "online_learner"), river style.

An online learner sees one context at a time (or a mini-batch), acts, and learns only from
the feedback its setting reveals, never from the hidden label. ``feedback`` says which
setting: "bandit" (the reward of the chosen action only) or "loss" (loss values at the
points the learner queried). Each setting refines this base with its own
``predict_one``/``learn_one`` signatures (see the modules of ``opboost.online``).
"""

from __future__ import annotations

from abc import ABC
from typing import ClassVar

from opboost.component import Component

__all__ = ["OnlineLearner"]


class OnlineLearner(Component, ABC):
    """Root of every online learner."""

    kind: ClassVar[str] = "online_learner"
    #: "bandit" or "loss".
    feedback: ClassVar[str] = ""
