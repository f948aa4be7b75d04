"""HTML building blocks of the report: table cells that sort by their value, tables, notes, the CSS and the JS.

Every value from the inputs passes through :func:`~rebalance_lab.replay.svg.esc`. The only script is
:data:`SORT_JS`, our own few lines that sort a ``table.sortable`` by the clicked column (numbers by the
cell's ``data-v``); the page reads the same without it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rebalance_lab.replay.report.fmt import fmt_count, fmt_ms
from rebalance_lab.replay.svg import esc


@dataclass(frozen=True)
class Cell:
    """A table cell: what it shows and what it sorts by (numbers sort numerically)."""

    shown: str
    sort: str | float | None = None
    numeric: bool = False

    cls: str = ""

    def render(self) -> str:
        flags = ("n" if self.numeric else "", "unknown" if self.shown == "unknown" else "", self.cls)
        classes = " ".join(c for c in flags if c)
        attrs = f' class="{classes}"' if classes else ""
        if self.sort is not None:
            attrs += f' data-v="{esc(self.sort)}"'
        return f"<td{attrs}>{esc(self.shown)}</td>"


def number(value: float | None, shown: str | None = None) -> Cell:
    if value is None:
        return Cell("unknown", "", numeric=True)
    return Cell(shown if shown is not None else fmt_count(value), value, numeric=True)


def duration(value: float | None) -> Cell:
    return Cell(fmt_ms(value), "" if value is None else value, numeric=True)


def table(headers: Sequence[str], rows: Iterable[Sequence[Cell]], *, sortable: bool = False,
          spans: Sequence[tuple[str, int]] = (), row_classes: Sequence[str] = (), cls: str = "",
          tall: bool = False) -> str:
    """A table; ``spans`` adds a first header row of (label, columns) over groups of columns."""
    head = "<tr>" + "".join(f"<th>{esc(h)}</th>" for h in headers) + "</tr>"
    if spans:
        head = "<tr>" + "".join(f'<th colspan="{n}" class="span">{esc(label)}</th>' for label, n in spans) + \
            "</tr>" + head
    body = "".join(_tr(row, row_classes[i] if i < len(row_classes) else "") for i, row in enumerate(rows))
    classes = " ".join(c for c in ("sortable" if sortable else "", cls) if c)
    attrs = f' class="{classes}"' if classes else ""
    box = "scroll tall" if tall else "scroll"  # a tall table scrolls in its own box, its heading kept in view
    return f'<div class="{box}"><table{attrs}><thead>{head}</thead><tbody>{body}</tbody></table></div>'


def _tr(row: Sequence[Cell], cls: str) -> str:
    attrs = f' class="{esc(cls)}"' if cls else ""
    return f"<tr{attrs}>" + "".join(c.render() for c in row) + "</tr>"


def kv_table(items: Iterable[tuple[str, str]]) -> str:
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in items)
    return f'<table class="kv"><tbody>{rows}</tbody></table>'


def panel(content: str) -> str:
    return f'<div class="panel">{content}</div>'


def note(content: str) -> str:
    return f'<p class="note">{esc(content)}</p>'


def section(anchor: str, title: str, body: str) -> str:
    return f'<section id="{anchor}"><h2>{esc(title)}</h2>{body}</section>'


def legend(items: Iterable[tuple[str, str]]) -> str:
    spans = "".join(f'<span><i style="background:{colour}"></i>{esc(label)}</span>' for label, colour in items)
    return f'<div class="legend">{spans}</div>'


# --- the page -------------------------------------------------------------------------------------------------------

CSS = """
:root{--join:#4c78a8;--sync:#f58518;--whole:#a8a8a8;--members:#2f7d32;--in:#2ca02c;--out:#d62728;--ink:#1f2328;
--muted:#5f6670;--line:#d8dde3;--bg:#f6f7f9;--bar:#4c78a8}
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",sans-serif;color:var(--ink);
background:var(--bg)}
header,main,nav{max-width:1320px;margin:0 auto;padding:0 20px}
header{padding-top:20px}
h1{font-size:1.6em;margin:0 0 4px}h2{margin:36px 0 8px;font-size:1.3em}h3{margin:22px 0 4px}h4{margin:14px 0 4px}
nav{margin-top:12px}nav a{margin-right:14px;color:var(--bar);text-decoration:none}
.sub,.note{color:var(--muted);margin:4px 0 8px}.note{font-size:.9em}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(160px,1fr));gap:10px;margin:14px 0}
.card{background:#fff;border:1px solid var(--line);border-radius:8px;padding:10px 14px}
.card b{display:block;font-size:1.5em;font-variant-numeric:tabular-nums}.card span{color:var(--muted);font-size:.85em}
.card.warn b{color:var(--out)}
article.group{background:#fff;border:1px solid var(--line);border-radius:8px;padding:4px 16px 14px;margin:14px 0}
svg.chart{display:block;width:100%;height:auto;background:#fff}
svg text{font:11px system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;fill:#333}
svg text.title{font-size:12px;fill:var(--muted)}
svg .axis line{stroke:#8a9099}svg .axis line.grid{stroke:#eceef1}
svg .join{fill:var(--join)}svg .sync{fill:var(--sync)}svg .whole{fill:var(--whole)}
svg .ep:hover rect{stroke:#000;stroke-width:1}svg .storm text{fill:var(--out)}
svg .genmark{stroke:#fff;stroke-width:1.5}
svg .step{fill:none;stroke:var(--members);stroke-width:1.8}
svg .in{fill:var(--in)}svg .out{fill:var(--out)}
svg .tbin{fill:#6b6f76}svg .tbin.storm{fill:var(--out)}svg .tbin:hover{opacity:.75}
svg .stwline{fill:none;stroke:#b07aa1;stroke-width:1.6}
svg .bar.q{fill:#e4e4e4;stroke:#9a9a9a;stroke-dasharray:2 2}
svg .hbin,svg .hbar{fill:var(--bar)}svg .hbin:hover,svg .hbar:hover,svg .bar:hover{opacity:.75}
svg .mark{stroke:var(--out);stroke-dasharray:4 3}svg .mark.p50{stroke:var(--ink)}
svg .marklabel{font-weight:600}
svg .marklabel,svg .ep text,svg text.value{paint-order:stroke;stroke:#fff;stroke-width:3px}
svg text.value{font-size:10px;fill:var(--muted)}
.legend{margin:6px 0;font-size:.9em}.legend span{display:inline-block;margin-right:16px}
.legend i{display:inline-block;width:12px;height:12px;margin-right:5px;vertical-align:-1px;border-radius:2px}
.scroll{overflow-x:auto}.scroll.tall{max-height:34em;overflow-y:auto;border-bottom:1px solid var(--line)}
td.label{white-space:normal;overflow-wrap:anywhere;min-width:8em;max-width:13em}
table{border-collapse:collapse;background:#fff;font-size:.85em}
.panel{background:#fff;border:1px solid var(--line);border-radius:8px;padding:8px}
th.span{text-align:center;border-bottom:2px solid var(--line)}
th,td{padding:4px 6px;border-bottom:1px solid #eceef1;text-align:left;white-space:nowrap}
thead th{white-space:normal;vertical-align:bottom}
thead th{background:#eef1f5;position:sticky;top:0}table.sortable th{cursor:pointer}
td.n{text-align:right;font-variant-numeric:tabular-nums}td.unknown{color:var(--muted);font-style:italic}
td.better{color:#1a7f37}td.worse{color:#b42318}tr.actual td{background:#fafbfc;font-weight:600}
.level-measured{color:#1a7f37}.level-estimated,.level-partial{color:#9a6700}.level-unknown{color:#b42318}
table.kv{width:auto}table.kv td{white-space:pre-wrap}
ul.samples{padding-left:18px}pre{white-space:pre-wrap;word-break:break-all;background:#fff;border:1px solid var(--line);
padding:6px 8px;margin:4px 0 10px;font-size:.85em}
.empty{margin-top:24px;background:#fff;border:1px dashed var(--line);border-radius:8px;padding:24px;text-align:center}
footer{max-width:1320px;margin:40px auto 20px;padding:0 20px;color:var(--muted);font-size:.85em}
"""

# Sorting is an extra: the table is already ordered (busiest first) and reads the same without it.
SORT_JS = """
document.querySelectorAll("table.sortable").forEach(function(table){
  table.querySelectorAll("thead tr:last-child th").forEach(function(th,col){
    th.addEventListener("click",function(){
      var body=table.tBodies[0],rows=Array.from(body.rows),dir=th.dataset.dir==="desc"?1:-1;
      th.dataset.dir=dir>0?"asc":"desc";
      function key(row){var c=row.cells[col];return c.dataset.v!==undefined?c.dataset.v:c.textContent;}
      rows.sort(function(a,b){
        var x=key(a),y=key(b),nx=parseFloat(x),ny=parseFloat(y);
        if(!isNaN(nx)||!isNaN(ny)){nx=isNaN(nx)?-Infinity:nx;ny=isNaN(ny)?-Infinity:ny;
          return nx===ny?0:(nx<ny?-dir:dir);}
        return x.localeCompare(y)*dir;});
      rows.forEach(function(r){body.appendChild(r);});});});});
"""

