"""Two views of an :class:`~tooldialect.explain.Explanation`: the terminal's (rich) and one
self-contained HTML page (inline CSS and script, nothing fetched)."""

from __future__ import annotations

import html
import json
from itertools import pairwise
from typing import Any

from rich.console import Console
from rich.text import Text

from .explain import REGION_KINDS, Explanation

__all__ = ["html_page", "print_explanation"]

STYLES = {
    "text": "",
    "reasoning": "italic cyan",
    "example": "green",
    "call_name": "bold black on yellow",
    "call_arguments": "black on bright_yellow",
    "call": "yellow",
    "markup": "magenta",
    "dropped": "strike white on red",
    "furniture": "dim",
}
# in a view without colour each region but visible text is written ⟦TAG:…⟧
TAGS = {
    "reasoning": "R",
    "example": "E",
    "call_name": "N",
    "call_arguments": "A",
    "call": "C",
    "markup": "M",
    "dropped": "D",
    "furniture": "F",
}
_EXCERPT = 72


def _excerpt(s: str, limit: int = _EXCERPT) -> str:
    s = s if len(s) <= limit else s[: limit - 1] + "…"
    return json.dumps(s, ensure_ascii=False)


def _plain(console: Console) -> bool:
    return console.no_color or console.color_system is None


# -- terminal -------------------------------------------------------------------------------------------


def print_explanation(ex: Explanation, console: Console) -> None:
    """The reply with its regions marked, each block's verdict, every diagnostic with the
    text it covers, and (with a chunk size) the stream's events by delta."""
    plain = _plain(console)
    src = ex.source
    r = ex.result
    head = Text(f"reply: {len(src)} characters, {len(r.calls)} call(s), {len(r.diagnostics)} diagnostic(s)", "bold")
    console.print(head)
    legend = Text("legend: ")
    for kind in REGION_KINDS:
        label = f"{TAGS[kind]}={kind}" if plain and kind in TAGS else kind
        legend.append(label, STYLES[kind] or "default")
        legend.append("  ")
    console.print(legend)
    console.rule(style="dim")
    body = Text()
    for reg in ex.regions:
        piece = src[reg.start : reg.end]
        if plain and reg.kind in TAGS:
            body.append(f"⟦{TAGS[reg.kind]}:")
            body.append(piece)
            body.append("⟧")
        else:
            body.append(piece, STYLES[reg.kind] or "default")
    console.print(body, overflow="fold", soft_wrap=False)
    console.rule(style="dim")
    _print_blocks(ex, console)
    _print_diagnostics(ex, console)
    if ex.stream is not None:
        _print_stream(ex, console)


def _print_blocks(ex: Explanation, console: Console) -> None:
    r = ex.result
    if not ex.blocks:
        console.print(Text("blocks: none (no family's opener outside code and examples)", "bold"))
        return
    console.print(Text(f"blocks: {len(ex.blocks)}", "bold"))
    for i, b in enumerate(ex.blocks):
        opener = _excerpt(b.opener, 40) if b.opener else "(no opener: the reply itself)"
        line = Text(f"block {i}  {b.start}–{b.end}  {opener}  ")
        line.append(f"{b.outcome}", "bold green" if b.outcome == "calls" else "bold red")
        line.append(f": {b.summary}")
        if b.channel != "text":
            line.append(f"  (in {b.channel})")
        console.print(line)
        for c in b.candidates:
            mark = "✓" if c.won else "✗"
            console.print(Text(f"    {mark} {c.family}: {c.reason}", "green" if c.won else "default"))
        for k in b.calls:
            call = r.calls[k]
            args = json.dumps(call.arguments, ensure_ascii=False)
            args = args if len(args) <= 60 else args[:59] + "…"
            console.print(Text(f"    call {k}: {call.name} {args}  span {call.span[0]}–{call.span[1]}", "yellow"))
    for k, call in enumerate(r.calls):
        if not any(k in b.calls for b in ex.blocks):
            console.print(Text(f"call {k}: {call.name}  span {call.span[0]}–{call.span[1]}", "yellow"))


def _print_diagnostics(ex: Explanation, console: Console) -> None:
    r = ex.result
    console.print(Text(f"diagnostics: {len(r.diagnostics) or 'none'}", "bold"))
    for i, d in enumerate(r.diagnostics):
        where = f"{d.span[0]}–{d.span[1]}" if d.span is not None else "no span"
        line = Text(f"  {i} ")
        line.append(d.kind, "bold red")
        line.append(f" ({d.family or '-'}) {where}")
        if d.message:
            line.append(f": {d.message}")
        console.print(line)
        if d.span is not None:
            console.print(Text(f"      covers {_excerpt(ex.source[d.span[0] : d.span[1]])}", "dim"))
        if d.detail:
            console.print(Text(f"      detail {json.dumps(d.detail, ensure_ascii=False, sort_keys=True)}", "dim"))


def _print_stream(ex: Explanation, console: Console) -> None:
    assert ex.stream is not None
    console.print(Text(f"stream: {len(ex.stream) - 1} deltas of {ex.chunk} characters, then close()", "bold"))
    for step in ex.stream:
        if not step.events:
            continue
        where = "close()" if step.delta < 0 else f"delta {step.delta} [{step.start}:{step.end}]"
        console.print(Text(f"  {where}", "bold"))
        for ev in step.events:
            console.print(Text(f"      {_event_line(ev)}"))


def _event_line(ev: dict[str, Any]) -> str:
    kind = ev["type"]
    if kind in ("text", "reasoning"):
        return f"{kind} {_excerpt(ev['text'], 60)}"
    if kind == "call_start":
        return f"call_start {ev['index']} {ev['name']}" + (f" id={ev['id']}" if ev.get("id") else "")
    if kind == "arguments":
        return f"arguments {ev['index']} {_excerpt(ev['fragment'], 60)}"
    if kind == "call_end":
        return f"call_end {ev['index']} {ev['call']['name']}"
    if kind == "call_abort":
        return f"call_abort {ev['index']} ({ev['reason']})"
    return f"diagnostic {ev['diagnostic']['kind']}"


# -- the page ------------------------------------------------------------------------------------------

_COLOURS = {
    "text": ("#1f2328", "transparent"),
    "reasoning": ("#0a5c7a", "#e3f4fa"),
    "example": ("#1a6b2a", "#e6f6e8"),
    "call_name": ("#000", "#ffd54a"),
    "call_arguments": ("#000", "#fff0b3"),
    "call": ("#5a4500", "#fff8dc"),
    "markup": ("#7b1fa2", "#f6e8fb"),
    "dropped": ("#fff", "#c62828"),
    "furniture": ("#888", "#eeeeee"),
}
_TIMELINE_ROWS = 2000  # deltas shown in the page's timeline (the rest counted)
_LIST_ROWS = 500  # blocks and diagnostics listed in full on the page (the rest counted; spans stay marked)

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em;color:#1f2328}
h1{font-size:1.3em}h2{font-size:1.1em;margin-top:1.5em}
#legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:.4em}
#legend li{padding:.1em .5em;border-radius:3px;border:1px solid #ccc}
#reply{white-space:pre-wrap;word-break:break-all;font:13px/1.5 ui-monospace,monospace;border:1px solid #ddd;
padding:.8em;max-height:70vh;overflow:auto;background:#fcfcfc}
.hl{outline:2px solid #1565c0;background:#bbdefb!important;color:#000!important}
li.hl{outline:2px solid #1565c0}
.item{cursor:pointer}
table{border-collapse:collapse;font-size:13px}td,th{border-bottom:1px solid #eee;padding:.15em .6em;text-align:left;vertical-align:top}
.ev{display:inline-block;margin:0 .3em .2em 0;padding:0 .4em;border-radius:3px;background:#eee;font:12px ui-monospace,monospace}
.ev-call_start,.ev-call_end{background:#ffd54a}.ev-arguments{background:#fff0b3}.ev-diagnostic,.ev-call_abort{background:#ef9a9a}
.ev-reasoning{background:#e3f4fa}.bar{display:inline-block;height:8px;background:#90a4ae}
.won{color:#1a6b2a}.lost{color:#666}code{font:12px ui-monospace,monospace}
"""

_JS = """
(function(){
  function marks(el){
    var out=[];
    if(el.dataset.c!==undefined)out.push('[data-c="'+el.dataset.c+'"]');
    if(el.dataset.d!==undefined)el.dataset.d.split(' ').forEach(function(d){out.push('[data-d~="'+d+'"]');});
    return out;
  }
  function light(el,on){
    marks(el).forEach(function(sel){
      document.querySelectorAll(sel).forEach(function(n){n.classList.toggle('hl',on);});
    });
  }
  document.addEventListener('mouseover',function(e){
    var el=e.target.closest('[data-c],[data-d]');if(el)light(el,true);
  });
  document.addEventListener('mouseout',function(e){
    var el=e.target.closest('[data-c],[data-d]');if(el)light(el,false);
  });
})();
"""


def _segments(ex: Explanation) -> list[tuple[int, int, str, int | None, list[int]]]:
    """The regions cut again where a diagnostic's span begins or ends: (start, end, kind,
    call, diagnostics covering it)."""
    n = len(ex.source)
    spans = [(d.span[0], d.span[1], i) for i, d in enumerate(ex.result.diagnostics) if d.span is not None]
    cuts = {0, n}
    for reg in ex.regions:
        cuts.add(reg.start)
    for a, b, _ in spans:
        cuts.add(max(0, min(n, a)))
        cuts.add(max(0, min(n, b)))
    points = sorted(cuts)
    out = []
    ri = 0
    regions = ex.regions
    spans.sort()
    active: list[tuple[int, int, int]] = []
    si = 0
    for a, b in pairwise(points):
        while ri + 1 < len(regions) and regions[ri].end <= a:
            ri += 1
        while si < len(spans) and spans[si][0] <= a:
            active.append(spans[si])
            si += 1
        active = [s for s in active if s[1] > a]
        reg = regions[ri]
        out.append((a, b, reg.kind, reg.call, sorted(s[2] for s in active if s[0] <= a < s[1])))
    return out


def _attrs(attrs: dict[str, Any]) -> str:
    """``class_="x", data_c=1`` → `` class="x" data-c="1"`` (None leaves an attribute out)."""
    return "".join(
        f' {k.rstrip("_").replace("_", "-")}="{html.escape(str(v))}"' for k, v in attrs.items() if v is not None
    )


def _el(tag: str, body: str = "", **attrs: Any) -> str:
    """An element whose body is already HTML."""
    return f"<{tag}{_attrs(attrs)}>{body}</{tag}>"


def _start(tag: str, **attrs: Any) -> str:
    return f"<{tag}{_attrs(attrs)}>"


def _end(tag: str) -> str:
    return f"</{tag}>"


def html_page(ex: Explanation) -> str:
    """The explanation as one page: regions coloured with a legend, the blocks, calls and
    diagnostics (hover one to light its span), and the stream's events by delta."""
    esc = html.escape
    src = ex.source
    r = ex.result
    parts: list[str] = []
    w = parts.append
    css = (
        _CSS
        + "".join(f".k-{k}{{color:{fg};background:{bg}}}" for k, (fg, bg) in _COLOURS.items())
        + ".k-dropped{text-decoration:line-through}"
    )
    w("<!DOCTYPE html>")
    w(_start("html", lang="en"))
    w(
        _el(
            "head",
            _start("meta", charset="utf-8")
            + _start("meta", name="viewport", content="width=device-width")
            + _el("title", f"tooldialect explain: {len(src)} characters")
            + _el("style", css),
        )
    )
    w(_start("body"))
    w(_el("h1", "tooldialect explain"))
    w(
        _el(
            "p",
            f"{len(src)} characters, {len(r.calls)} call(s), {len(r.diagnostics)} diagnostic(s), "
            f"{len(ex.blocks)} block(s).",
        )
    )
    w(
        _el(
            "ul",
            "".join(_el("li", kind, class_=f"k-{kind}", title=meaning) for kind, meaning in REGION_KINDS.items()),
            id="legend",
        )
    )
    w(_start("pre", id="reply"))
    for a, b, kind, call, diags in _segments(ex):
        piece = esc(src[a:b])
        if kind == "text" and call is None and not diags:
            w(piece)
        else:
            w(_el("span", piece, class_=f"k-{kind}", data_c=call, data_d=" ".join(map(str, diags)) if diags else None))
    w(_end("pre"))
    _html_blocks(ex, w)
    _html_diagnostics(ex, w)
    if ex.stream is not None:
        _html_timeline(ex, w)
    w(_el("script", _JS))
    w(_end("body") + _end("html") + "\n")
    return "".join(parts)


def _html_blocks(ex: Explanation, w: Any) -> None:
    esc = html.escape
    r = ex.result
    w(_el("h2", "Blocks"))
    items = []
    for b in ex.blocks[:_LIST_ROWS]:
        cands = "".join(
            _el("li", f"{'✓' if c.won else '✗'} {esc(c.family)}: {esc(c.reason)}", class_="won" if c.won else "lost")
            for c in b.candidates
        )
        head = f"{_el('code', esc(b.opener or '(the reply itself)'))} {b.start}–{b.end}: {_el('b', esc(b.outcome))} — {esc(b.summary)}"
        items.append(_el("li", head + _el("ul", cands)))
    w(_el("ol", "".join(items), id="blocks", start=0))
    if len(ex.blocks) > _LIST_ROWS:
        w(_el("p", f"{len(ex.blocks) - _LIST_ROWS} more blocks not listed."))
    w(_el("h2", "Calls"))
    calls = "".join(
        _el(
            "li",
            f"{_el('b', esc(call.name))} ({esc(call.family)}) {_el('code', esc(call.arguments_json[:200]))} "
            f"span {call.span[0]}–{call.span[1]}",
            class_="item call-item",
            data_c=k,
        )
        for k, call in enumerate(r.calls)
    )
    w(_el("ol", calls, id="calls", start=0))


def _html_diagnostics(ex: Explanation, w: Any) -> None:
    esc = html.escape
    w(_el("h2", "Diagnostics"))
    items = []
    for i, d in enumerate(ex.result.diagnostics[:_LIST_ROWS]):
        where = f"{d.span[0]}–{d.span[1]}" if d.span is not None else "no span"
        detail = esc(json.dumps(d.detail, ensure_ascii=False, sort_keys=True))
        body = f"{_el('b', esc(d.kind))} ({esc(d.family or '-')}) {where}: {esc(d.message)} {_el('code', detail)}"
        items.append(_el("li", body, class_="item diag-item", data_d=i if d.span is not None else None))
    w(_el("ol", "".join(items), id="diagnostics", start=0))
    if len(ex.result.diagnostics) > _LIST_ROWS:
        w(_el("p", f"{len(ex.result.diagnostics) - _LIST_ROWS} more diagnostics not listed."))


def _html_timeline(ex: Explanation, w: Any) -> None:
    assert ex.stream is not None
    esc = html.escape
    n = max(1, len(ex.source))
    steps = ex.stream
    w(_el("h2", f"Stream timeline ({len(steps) - 1} deltas of {ex.chunk} characters, then close())"))
    rows = [_el("tr", _el("th", "delta") + _el("th", "where") + _el("th", "events"))]
    shown = 0
    for step in steps:
        if shown >= _TIMELINE_ROWS and step.delta >= 0:
            continue
        shown += 1
        where = "close()" if step.delta < 0 else f"{step.start}–{step.end}"
        width = max(1.0, 100 * (step.end - step.start) / n)
        bar = _el("span", class_="bar", style=f"margin-left:{100 * step.start / n:.2f}px;width:{width:.2f}px")
        evs = "".join(_el("span", esc(_event_line(ev)[:80]), class_=f"ev ev-{ev['type']}") for ev in step.events)
        label = "close" if step.delta < 0 else str(step.delta)
        rows.append(_el("tr", _el("td", label) + _el("td", f"{where} {bar}") + _el("td", evs)))
    w(_el("table", "".join(rows), id="timeline"))
    if len(steps) - 1 > _TIMELINE_ROWS:
        w(_el("p", f"{len(steps) - 1 - _TIMELINE_ROWS} more deltas not shown."))
