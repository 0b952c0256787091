"""Analysis: captures turned into per-stage, per-rank answers, comparisons and reports."""
