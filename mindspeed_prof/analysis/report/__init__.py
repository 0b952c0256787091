"""The answer of one analysis as data: ``captures`` (what was read), ``settings`` (what the user
chose), ``tables`` (every table, each declared once in ``Tables`` and computed once by
``tables``; ``--json`` is written from the declaration) and ``report`` (the verdict and the
findings over the same tables: ``Report``, what every view reads)."""
