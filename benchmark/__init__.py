"""Reproduction harness for the paper's results table (docs/harness.md)."""
