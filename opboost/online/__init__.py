"""online."""
