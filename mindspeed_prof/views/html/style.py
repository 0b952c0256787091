"""The report's stylesheet: one page that reads on a phone and on a wide screen; name columns
(``WRAP``) wrap, every other cell stays on one line."""

from __future__ import annotations

__all__ = ["CSS", "MAX_COLUMNS"]

#: The most table columns whose wrapping the stylesheet sets (one rule per position).
MAX_COLUMNS = 16


CSS = """*{box-sizing:border-box}
body{font-family:system-ui,sans-serif;margin:0 auto;padding:1em 1.5em;max-width:1240px;
color:#222;line-height:1.4}
h1{margin:.2em 0;font-size:1.6em}h2{margin:1.4em 0 .4em;font-size:1.25em}
.root{color:#555;overflow-wrap:anywhere;margin:.2em 0 1em}
.headline{border-left:6px solid #0072B2;background:#f4f7fb;padding:.6em 1.2em .8em;margin:0}
.headline h2{margin:.2em 0 .5em}
.verdict{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.25em 1em;margin:0}
.verdict dt{font-weight:600;color:#555;font-size:.85em;text-transform:uppercase;
padding-top:.15em}
.verdict dd{margin:0;overflow-wrap:anywhere}
.verdict dd.lead{font-size:1.3em;font-weight:600;line-height:1.25}
.next{margin:.7em 0 0}.next p{margin:.3em 0}
code{font-size:.9em;background:#eaeef3;padding:.1em .3em;white-space:pre-wrap;
overflow-wrap:anywhere}
ul.findings{list-style:none;padding:0;margin:.3em 0}
.findings li{border-left:4px solid #999;padding:.25em .7em;margin:.35em 0;background:#fafafa;
overflow-wrap:anywhere}
.findings li.high{border-color:#b00020}.findings li.medium{border-color:#c77700}
.findings li.low{border-color:#777}
.sev{display:inline-block;min-width:4.8em;text-align:center;border-radius:3px;color:#fff;
font-size:.8em;font-weight:600;padding:0 .4em;margin-right:.5em;background:#777}
.sev.high{background:#b00020}.sev.medium{background:#b36b00}
.findings summary{cursor:pointer}.findings li>.sev{margin-left:1.2em}
.findings .more{margin:.3em 0 .2em 1.2em}
.findings .more p{margin:.25em 0}.impact{color:#555;white-space:nowrap}
figure{margin:1em 0;max-width:100%}
figcaption{font-weight:600;margin-bottom:.3em}
svg{display:block;max-width:100%;height:auto}
.tbl{max-width:100%;overflow-x:auto;margin:.6em 0}
table{border-collapse:collapse}
td,th{border:1px solid #ccc;padding:4px 8px;text-align:right;white-space:nowrap;
vertical-align:top}
th{background:#f3f3f3;white-space:normal;min-width:3em}
td:first-child,th:first-child{text-align:left}
.bad{color:#b00}.empty{color:#555;font-size:.9em;margin-top:-.3em}
li{overflow-wrap:anywhere}
@media (max-width:960px){body{padding:.6em .8em}
td,th{padding:3px 5px;font-size:.9em}.verdict dd.lead{font-size:1.15em}}
@media (max-width:640px){.verdict{grid-template-columns:minmax(0,1fr)}}
""" + "\n".join(
    f".w{i} td:nth-child({i}){{white-space:normal;overflow-wrap:break-word;"
    f"min-width:7em}}.w{i} td:nth-child({i}),.w{i} th:nth-child({i}){{"
    "text-align:left}"
    for i in range(1, MAX_COLUMNS + 1)
)
