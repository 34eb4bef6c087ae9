"""Built-in objectives plugins (placeholder until implemented)."""
