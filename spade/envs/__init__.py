"""Environment programs: check, play, store."""
