"""Statistics the judgements rest on, pure functions of plain numbers (no numpy, no scipy):
robust location and spread (``robust``), trends over steps (``trend``) and the correction for
testing many rows at once (``multiple``). Both capture (the anomaly trigger) and analysis (the
verdict, the findings, ``compare``) use them, so they import nothing of the package.
"""
