"""learners."""
