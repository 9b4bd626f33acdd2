"""The HTML shell every gossiplab page shares: one static file that opens offline.

A page is a title, a few header rows and a list of sections; a section holds paragraphs,
tables, figures and preformatted text. Figures are embedded as base64 PNG data URIs and
the styles are inline; there is no script and no link to anything online, so a page can
be mailed or archived on its own and still show everything.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import jinja2


@dataclass(frozen=True)
class Text:
    """A paragraph."""

    text: str


@dataclass(frozen=True)
class Code:
    """Preformatted text, such as a resolved scenario."""

    text: str


@dataclass(frozen=True)
class Link:
    """A table cell that links to another local file, such as a point's report."""

    text: str
    href: str


Cell = str | Link


@dataclass(frozen=True)
class Table:
    """A table; columns from ``numeric_from`` on are right-aligned numbers."""

    header: Sequence[str]
    rows: Sequence[Sequence[Cell]]
    caption: str = ""
    numeric_from: int = 1


@dataclass(frozen=True)
class Figure:
    """A figure with a title and a caption that says how to read it; no PNG means no data."""

    title: str
    caption: str
    png: Path | None
    no_data: str = "no data to plot"


Block = Text | Code | Table | Figure


@dataclass(frozen=True)
class Section:
    title: str
    blocks: Sequence[Block] = field(default_factory=list)

    @property
    def anchor(self) -> str:
        return re.sub(r"[^a-z0-9]+", "-", self.title.lower()).strip("-")


def png_data_uri(png: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode("ascii")


def render_page(
    title: str,
    sections: Sequence[Section],
    *,
    header: Sequence[tuple[str, str]] = (),
    intro: str = "",
) -> str:
    """The whole page as HTML text; every value is escaped."""
    return _TEMPLATE.render(
        title=title,
        header=header,
        intro=intro,
        sections=sections,
        kind=_kind,
        data_uri=png_data_uri,
    )


def _kind(block: Block | Cell) -> str:
    return type(block).__name__.lower()


_TEMPLATE = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined).from_string(
    """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ title }}</title>
<style>
body { font-family: system-ui, sans-serif; color: #222; max-width: 64rem; margin: 2rem auto;
       padding: 0 1rem; line-height: 1.45; }
h1 { font-size: 1.5rem; margin-bottom: 0.5rem; }
h2 { font-size: 1.2rem; margin-top: 2.5rem; border-bottom: 1px solid #ddd; }
h3 { font-size: 1rem; margin: 0 0 0.2rem 0; }
nav { font-size: 0.9rem; margin: 1rem 0; }
nav a { margin-right: 1rem; color: #35608f; }
p.intro { color: #444; }
table { border-collapse: collapse; margin: 0.6rem 0; font-size: 0.92rem; }
caption { text-align: left; font-weight: 600; padding-bottom: 0.3rem; }
th, td { padding: 0.2rem 0.7rem; border-bottom: 1px solid #eee; text-align: left;
         vertical-align: top; }
thead th { border-bottom: 2px solid #ccc; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.wide { overflow-x: auto; }
figure { margin: 1.8rem 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption p { margin: 0.1rem 0 0.5rem 0; color: #444; font-size: 0.92rem; }
.nodata { color: #888; font-style: italic; }
pre { background: #f6f6f6; padding: 0.8rem; overflow-x: auto; font-size: 0.85rem; }
</style>
</head>
<body>
<h1>{{ title }}</h1>
{%- if intro %}
<p class="intro">{{ intro }}</p>
{%- endif %}
{%- if header %}
<table class="header">
{%- for label, value in header %}
<tr><th>{{ label }}</th><td>{{ value }}</td></tr>
{%- endfor %}
</table>
{%- endif %}
<nav>
{%- for section in sections %}
<a href="#{{ section.anchor }}">{{ section.title }}</a>
{%- endfor %}
</nav>
{%- for section in sections %}

<section id="{{ section.anchor }}">
<h2>{{ section.title }}</h2>
{%- for block in section.blocks %}
{%- set k = kind(block) %}
{%- if k == "text" %}
<p>{{ block.text }}</p>
{%- elif k == "code" %}
<pre>{{ block.text }}</pre>
{%- elif k == "table" %}
<div class="wide"><table>
{%- if block.caption %}<caption>{{ block.caption }}</caption>{% endif %}
<thead><tr>{% for name in block.header %}<th>{{ name }}</th>{% endfor %}</tr></thead>
<tbody>
{%- for row in block.rows %}
<tr>{% for cell in row %}<td{% if loop.index0 >= block.numeric_from %} class="num"{% endif %}>
{%- if kind(cell) == "link" -%}
<a href="{{ cell.href }}">{{ cell.text }}</a>
{%- else -%}
{{ cell }}
{%- endif -%}
</td>{% endfor %}</tr>
{%- endfor %}
</tbody>
</table></div>
{%- elif k == "figure" %}
<figure>
<figcaption><h3>{{ block.title }}</h3><p>{{ block.caption }}</p></figcaption>
{%- if block.png %}
<img src="{{ data_uri(block.png) }}" alt="{{ block.title }}">
{%- else %}
<p class="nodata">{{ block.no_data }}</p>
{%- endif %}
</figure>
{%- endif %}
{%- endfor %}
</section>
{%- endfor %}
</body>
</html>
"""
)
