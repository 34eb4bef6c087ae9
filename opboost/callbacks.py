"""Fit callbacks (placeholder until the booster lands)."""
