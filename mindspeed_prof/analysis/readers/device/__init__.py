"""A trace's device ops: kept per stream (``ops``), broken down per step and stage
(``breakdown``), and each stream's idle time and kernel launches (``streams``)."""
