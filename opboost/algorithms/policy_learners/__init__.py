"""Built-in whole-policy learners (kind "policy_learner"): ``reward_regression`` (the direct
method a user tries first) and ``slate_boost`` (a boosted ranking policy from slate logs). The
label-free choice among learners, ``policy_choice``, composes boosters and lives in
:mod:`opboost.compose.choice`."""
