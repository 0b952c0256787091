"""Judgements: what the figures mean, each rule judged against the noise of its own rows.

- ``noise``: the floors every rule shares (``--noise-ms``, 1% of the step) and the
  family-wise error level of the tests;
- ``cells``: a row's time per step and per rank (``Who``: a rank and the label that tells two
  captures of one rank apart), from the ranges;
- ``gating``: a step's time is its slowest rank's (synchronous RL waits for it), with the
  spread over ranks and the rank that gated;
- ``lag``: the one rule that says a rank is slow (a consistent lag behind the other ranks
  that clears the step-to-step noise of the row, corrected for the rows tested);
- ``growth``: a stage's own time trending up over the steps (Mann-Kendall, Theil-Sen);
- ``causes``: every finding that costs time, ranked by the milliseconds per step it costs:
  what the verdict, Next and the findings list all read.
"""
