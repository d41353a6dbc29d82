"""One self-contained HTML page from the page data: no network asset, no server, no value interpolated into markup.

All data travels as JSON inside `<script type="application/json">` with `<`, `>` and `&` escaped, so no string of
an input can close the element; the page's script builds every element with textContent. A Content-Security-Policy
allows only this page's own script and style (by hash): an injected script or stylesheet would not run.
"""

from __future__ import annotations

import base64
import hashlib
from importlib import resources
from typing import Any

from matrix.core.errors import OutputError
from matrix.core.jsonio import dumps_strict

TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>specmatrix report</title>
<style>{css}</style>
</head>
<body>
<header><h1 id="title">specmatrix</h1><p id="subtitle"></p><p id="error"></p></header>
<main>
<section id="problems-section"><h2>Problems</h2><p id="findings-count"></p><table id="findings"></table></section>
<section id="runs-section" hidden><h2>Static verdicts beside the runs</h2><p id="runs-count"></p>
<table id="runs"></table></section>
<section id="tests-section"><h2>Tests &times; runners</h2><p id="tests-count"></p><table id="tests"></table></section>
<section id="outcomes-section"><h2>Outcomes per runner</h2><div id="legend"></div><table id="totals"></table></section>
<section id="grid-section"><h2>Cells &times; runners</h2>
<form id="filters"></form>
<div id="pager"><button type="button" id="prev">&larr; previous</button> <span id="shown"></span>
<button type="button" id="next">next &rarr;</button></div>
<table id="grid"></table>
</section>
<section id="inputs-section"><h2>Inputs</h2>
<table id="inputs"><thead><tr><th>file</th><th>kind</th><th>made</th><th>what</th></tr></thead><tbody></tbody></table>
</section>
</main>
<aside id="panel" hidden><div id="panel-head"><h2 id="panel-title"></h2>
<button type="button" id="panel-close">close</button></div><div id="panel-body"></div></aside>
<script type="application/json" id="specmatrix-data">{data}</script>
<script>{js}</script>
</body>
</html>
"""


def _asset(name: str) -> str:
    return resources.files("matrix.coverage").joinpath("assets", name).read_text(encoding="utf-8")


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def embedded_json(data: Any) -> str:
    """JSON that is safe as the text of a script element: ASCII only, and no `<`, `>` or `&` anywhere."""
    text = dumps_strict(data, where="report page", ensure_ascii=True, separators=(",", ":"))
    # Outside strings JSON has none of these characters; inside strings the \\u escapes decode to the same text.
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def render_html(data: Any) -> str:
    """The page: the template, our own style and script, and the data."""
    css, js = _asset("report.css"), _asset("report.js")
    for name, text, closing in (("report.css", css, "</style"), ("report.js", js, "</script")):
        if closing in text.lower():
            raise OutputError(f"{name} contains {closing!r}, which would end its element early")
    csp = f"default-src 'none'; script-src {_hash(js)}; style-src {_hash(css)}; base-uri 'none'; form-action 'none'"
    return TEMPLATE.format(csp=csp, css=css, js=js, data=embedded_json(data))
