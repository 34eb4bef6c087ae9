"""Built-in online plugins (placeholder until implemented)."""
