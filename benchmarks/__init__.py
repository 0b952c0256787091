"""Benchmarks: ``python -m benchmarks`` runs each module in ``__main__.MODULES``.

A module is one figure group: a module docstring stating its method (copied into RESULTS.md)
and ``run(report: Report) -> None``, which adds figures with ``report.add(...)``. To add a
group, write ``benchmarks/<name>.py`` and append ``"<name>"`` to ``MODULES``.
"""
