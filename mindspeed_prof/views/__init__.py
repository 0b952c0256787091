"""Views of an analysis for people: text tables (``text``), the HTML report (``html``) and its
Gantt chart (``gantt``). They read ``analysis`` results; nothing below imports them."""
