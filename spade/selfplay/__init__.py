"""The self-play loop and its stages."""
