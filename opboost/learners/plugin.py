"""Built-in learners plugins (placeholder until implemented)."""
