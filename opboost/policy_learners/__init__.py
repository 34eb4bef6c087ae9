"""Built-in whole-policy learners (kind "policy_learner"): ``reward_regression`` (the direct
method a user tries first) and ``policy_choice`` (a label-free choice among learners)."""
