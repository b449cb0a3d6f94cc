"""Experiments: several arms of `spade train` over many training seeds, run resumably and
compared paired by seed and item (`spade experiment`; docs/replication.md)."""
