"""``--html``: a self-contained report (inline SVG charts; opens without network, runs nothing).

What a person reads first is on top: the verdict's sentences, what to run next and the findings.
Then the charts and the tables. Charts scale down to the page (``viewBox``, at most their natural
size); tables sit in wrappers that scroll sideways when a narrow window cannot hold them, and
long names wrap. One module per job: ``page`` (the page and its top), ``charts``, ``tables``,
``style`` (the CSS).
"""

from __future__ import annotations

from mindspeed_prof.views.html.charts import FONT_PT, MAX_BARS, gid
from mindspeed_prof.views.html.page import write_report
from mindspeed_prof.views.html.tables import WRAP

__all__ = ["FONT_PT", "MAX_BARS", "WRAP", "gid", "write_report"]
