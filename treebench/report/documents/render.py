"""The templates' environment: one jinja2 loader for the Markdown pages and the HTML site."""

from __future__ import annotations

import json
from functools import cache

from treebench.report.checks import fmt_num
from treebench.report.select import core_time, counted


def md_cell(v) -> str:
    """Return a value as one Markdown table cell: no line breaks, pipes escaped."""
    return " ".join(str("" if v is None else v).split()).replace("|", "\\|")


def md_table(header: list, rows: list[list]) -> str:
    """Return a GitHub Markdown table without padding (the bytes are the content)."""
    lines = ["| " + " | ".join(md_cell(h) for h in header) + " |"]
    lines.append("|" + "---|" * len(header))
    lines += ["| " + " | ".join(md_cell(c) for c in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


@cache
def environment():
    """Return the jinja2 environment of ``templates/``.

    No autoescape for Markdown; HTML templates escape with ``|e``.
    """
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("treebench.report.documents", "templates"),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        autoescape=jinja2.select_autoescape(["html"]),
    )
    env.filters.update(
        md_cell=md_cell,
        core_time=core_time,
        fmt_num=fmt_num,
        tojson_sorted=lambda v: json.dumps(v, sort_keys=True, ensure_ascii=False).replace(
            "</", "<\\/"
        ),
    )
    env.globals.update(md_table=md_table, counted=counted)
    return env


def render(template: str, **context) -> str:
    """Return ``template`` rendered with ``context``."""
    return environment().get_template(template).render(**context)
