"""Built-in loss-feedback online learners (placeholder until implemented)."""
