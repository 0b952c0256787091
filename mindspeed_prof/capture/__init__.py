"""Capture: decide per step, stage and rank what to record, and record it with a backend."""
