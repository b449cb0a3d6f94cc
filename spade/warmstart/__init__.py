"""The warm start."""
