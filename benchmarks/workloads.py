"""The benchmark inputs: the same calls written in each family's syntax.

Every workload is generated (nothing is downloaded): prose, four tools whose arguments
hold newlines, quotes and integers, and a long string argument for the large responses.
A family is a ``Format``: how it writes one call, how calls are grouped, and the special
tokens a detokenizer would deliver whole (deltas never split them).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search_files",
            "description": "Find files whose contents match a pattern.",
            "parameters": {
                "type": "object",
                "properties": {"pattern": {"type": "string"}, "path": {"type": "string"}},
                "required": ["pattern"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "apply_patch",
            "description": "Apply a unified diff.",
            "parameters": {
                "type": "object",
                "properties": {"patch": {"type": "string"}, "dry_run": {"type": "boolean"}},
                "required": ["patch"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "run_shell",
            "description": "Run a shell command.",
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string"}, "timeout": {"type": "integer"}},
                "required": ["command"],
            },
        },
    },
]

_SENTENCE = (
    "The build finished after the cache was warmed, and the report lists every module with its "
    "coverage; nothing here is a call, only prose a user should see as written. "
)
_PATCH_LINE = '+    value = compute("a \\"quoted\\" word", limit=10)  # keep <tags> & ampersands\n'


def prose(n: int) -> str:
    return (_SENTENCE * (n // len(_SENTENCE) + 1))[:n]


def patch_text(n: int) -> str:
    head = "--- a/src/app.py\n+++ b/src/app.py\n@@ -1,3 +1,40 @@\n"
    body = (_PATCH_LINE * (n // len(_PATCH_LINE) + 1))[: max(n - len(head), 0)]
    return head + body


def small_calls(n: int) -> list[tuple[str, dict[str, Any]]]:
    base = [
        ("get_weather", {"city": "Paris", "days": 3}),
        ("search_files", {"pattern": 'TODO "fix"', "path": "src/\nlib/"}),
        ("run_shell", {"command": "ls -la && echo 'done'", "timeout": 30}),
        ("apply_patch", {"patch": patch_text(120), "dry_run": False}),
    ]
    return [base[i % len(base)] for i in range(n)]


def big_calls(n: int, arg_chars: int) -> list[tuple[str, dict[str, Any]]]:
    return [("apply_patch", {"patch": patch_text(arg_chars), "dry_run": False}) for _ in range(n)]


# -- formats ---------------------------------------------------------------------------------------


def _value_text(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v)


@dataclass
class Format:
    """One family's syntax."""

    name: str  # the tooldialect family
    specials: tuple[str, ...]  # tokens a detokenizer delivers whole
    call: Callable[[int, str, dict[str, Any]], str]  # index, name, arguments -> text
    group: Callable[[list[str]], str] = field(default=lambda calls: "".join(calls))
    calls_first: bool = False  # the family reads calls only at the start of a reply
    wrap_prose: Callable[[str], str] = field(default=lambda p: p)

    def render(self, text_before: str, calls: list[tuple[str, dict[str, Any]]]) -> str:
        body = self.group([self.call(i, n, a) for i, (n, a) in enumerate(calls)]) if calls else ""
        if self.calls_first:
            return body + self.wrap_prose(text_before)
        return self.wrap_prose(text_before) + body


def _hermes(i: int, name: str, args: dict[str, Any]) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": args}) + "\n</tool_call>\n"


def _qwen3_coder(i: int, name: str, args: dict[str, Any]) -> str:
    params = "".join(f"<parameter={k}>\n{_value_text(v)}\n</parameter>\n" for k, v in args.items())
    return f"<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>\n"


def _dsml(i: int, name: str, args: dict[str, Any]) -> str:
    params = "".join(
        f'<｜DSML｜parameter name="{k}" string="{"true" if isinstance(v, str) else "false"}">'
        f"{_value_text(v)}</｜DSML｜parameter>\n"
        for k, v in args.items()
    )
    return f'<｜DSML｜invoke name="{name}">\n{params}</｜DSML｜invoke>\n'


def _kimi(i: int, name: str, args: dict[str, Any]) -> str:
    return f"<|tool_call_begin|>functions.{name}:{i}<|tool_call_argument_begin|>{json.dumps(args)}<|tool_call_end|>"


def _glm47(i: int, name: str, args: dict[str, Any]) -> str:
    pairs = "".join(f"<arg_key>{k}</arg_key><arg_value>{_value_text(v)}</arg_value>" for k, v in args.items())
    return f"<tool_call>{name}{pairs}</tool_call>"


def _mistral(i: int, name: str, args: dict[str, Any]) -> str:
    return f"[TOOL_CALLS]{name}[ARGS]{json.dumps(args)}"


def _harmony(i: int, name: str, args: dict[str, Any]) -> str:
    return (
        f"<|start|>assistant<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>"
        f"{json.dumps(args)}<|call|>"
    )


def _py(v: Any) -> str:
    return repr(v)


def _pythonic(i: int, name: str, args: dict[str, Any]) -> str:
    return f"{name}(" + ", ".join(f"{k}={_py(v)}" for k, v in args.items()) + ")"


FORMATS: dict[str, Format] = {
    "hermes": Format("hermes", ("<tool_call>", "</tool_call>"), _hermes),
    "qwen3_coder": Format("qwen3_coder", ("<tool_call>", "</tool_call>"), _qwen3_coder),
    "dsml": Format(
        "invoke_xml",
        ("<｜DSML｜tool_calls>", "</｜DSML｜tool_calls>"),
        _dsml,
        group=lambda calls: "\n\n<｜DSML｜tool_calls>\n" + "".join(calls) + "</｜DSML｜tool_calls>",
    ),
    "kimi_k2": Format(
        "kimi_k2",
        (
            "<|tool_calls_section_begin|>",
            "<|tool_calls_section_end|>",
            "<|tool_call_begin|>",
            "<|tool_call_argument_begin|>",
            "<|tool_call_end|>",
        ),
        _kimi,
        group=lambda calls: "<|tool_calls_section_begin|>" + "".join(calls) + "<|tool_calls_section_end|>",
    ),
    "glm47": Format(
        "glm",
        ("<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>"),
        _glm47,
    ),
    "mistral": Format("mistral", ("[TOOL_CALLS]", "[ARGS]"), _mistral),
    "harmony": Format(
        "harmony",
        ("<|start|>", "<|channel|>", "<|constrain|>", "<|message|>", "<|call|>", "<|end|>"),
        _harmony,
        wrap_prose=lambda p: f"<|channel|>analysis<|message|>{p}<|end|>" if p else "",
    ),
    "pythonic": Format(
        "pythonic",
        (),
        _pythonic,
        group=lambda calls: "[" + ", ".join(calls) + "]",
        calls_first=True,
        wrap_prose=lambda p: "\n\n" + p if p else "",
    ),
}


# -- workloads -------------------------------------------------------------------------------------


@dataclass
class Workload:
    key: str  # a, b, c, e20, e40, e80, d…, lt100, lt1m, jsx100
    fmt: str
    text: str
    expected_calls: int
    delta_chars: int = 4


def workload(key: str, fmt: str) -> Workload:
    f = FORMATS[fmt]
    if key == "a":
        return Workload(key, fmt, f.render(prose(200), small_calls(1)), 1)
    if key == "b":
        return Workload(key, fmt, f.render(prose(200), small_calls(20)), 20)
    if key == "c":
        return Workload(key, fmt, f.wrap_prose(prose(100_000)).lstrip("\n"), 0)
    if key.startswith("e"):
        size = int(key[1:]) * 1000
        arg = size // 5 * 2 // 5  # 40 % of the response is the five string arguments
        calls = big_calls(5, arg)
        body = f.render("", calls)
        return Workload(key, fmt, f.render(prose(max(size - len(body), 0)), calls), 5)
    raise KeyError(key)


# -- tooldialect-only streams: `<`-heavy text, every family on ----------------------------------------

_JSX_NAMES = ["Todo", "Invoice", "Profile", "Search", "Upload", "Calendar", "Cart", "Settings", "Inbox", "Report"]
_JSX_COMPONENT = """export function {name}List({{ items, onSelect, title = "{name}s" }}) {{
  const [filter, setFilter] = useState<string>("all");
  const visible = items.filter((item) => filter === "all" || item.status === filter);
  const total = visible.reduce((sum, item) => sum + (item.amount ?? 0), 0);
  if (visible.length === 0 && items.length > 0) {{
    return <p className="empty">No {name} matches &ldquo;{{filter}}&rdquo;.</p>;
  }}
  return (
    <section className="{slug}-list" aria-label={{title}}>
      <header>
        <h2>{{title}} <small>({{visible.length}} of {{items.length}})</small></h2>
        <select value={{filter}} onChange={{(e) => setFilter(e.target.value)}}>
          <option value="all">All</option>
          <option value="open">Open</option>
          <option value="done">Done</option>
        </select>
      </header>
      <ul>
        {{visible.map((item, i) => (
          <li key={{item.id}} className={{`row ${{i % 2 ? "odd" : "even"}}`}} onClick={{() => onSelect(item)}}>
            <img src={{item.icon}} alt="" width={{16}} height={{16}} />
            <span>{{item.label}}</span>{{item.amount > 100 && <strong> large</strong>}}
            <br />
          </li>
        ))}}
      </ul>
      <footer>Total: {{total < 0 ? "—" : total.toFixed(2)}} &middot; <a href="/{slug}s?page={{page + 1}}">next</a></footer>
    </section>
  );
}}

The component keeps its filter in state, so a parent only passes the items; when a row
is clicked, <code>onSelect</code> gets the whole item. Below, the page that uses it:

<!-- {slug}.html: the static shell the bundle mounts into -->
<div id="{slug}-root" class="card" data-theme="light">
  <h1>{name}s</h1>
  <p>Loading&hellip; if this stays, check that <em>{slug}.js</em> loaded.</p>
  <script>if (window.innerWidth < 600 && !document.hidden) {{ document.body.classList.add("narrow"); }}</script>
</div>

"""


def jsx(n: int) -> str:
    """``n`` characters of what a model writes when asked for a React component: JSX with
    attributes, ``{expr}``, arrow functions, closing tags, prose between, some HTML."""
    out, size, i = [], 0, 0
    while size < n:
        name = _JSX_NAMES[i % len(_JSX_NAMES)] + ("" if i < len(_JSX_NAMES) else str(i))
        part = _JSX_COMPONENT.format(name=name, slug=name.lower())
        out.append(part)
        size += len(part)
        i += 1
    return "".join(out)[:n]


#: tooldialect-only streams (no peer): every family on, 4-character deltas, no call in them.
STRESS: dict[str, Callable[[], str]] = {
    "lt100": lambda: "<" * 100_000,
    "lt1m": lambda: "<" * 1_000_000,
    "jsx100": lambda: jsx(100_000),
}


def stress(key: str) -> Workload:
    """A stream that is all markers' first character (``lt``) or `<`-heavy code (``jsx``)."""
    return Workload(key, "prose", STRESS[key](), 0)


DSML_LOOP_UNIT = (
    '<｜DSML｜tool_calls><｜DSML｜invoke name="apply_patch"><｜DSML｜parameter name="edits" string="false">{"edits":"'
)
DSML_LOOP_PROSE = ("The patch rewrites the parser so that the stream and the batch agree on every call; " * 20)[:1600]


def dsml_loop(n: int = 150) -> Workload:
    """DESIGN §9's reference input: ``n`` DSML openers, each followed by prose, never closed."""
    return Workload(f"d{n}", "dsml", "".join(DSML_LOOP_UNIT + DSML_LOOP_PROSE for _ in range(n)), 0, 7)


def deltas(text: str, specials: tuple[str, ...], size: int) -> list[str]:
    """Cut ``text`` into deltas of ``size`` characters; a special token is a delta of its own."""
    out: list[str] = []
    i = 0
    n = len(text)
    firsts = {s[0] for s in specials}
    while i < n:
        if text[i] in firsts:
            tok = next((s for s in specials if text.startswith(s, i)), None)
            if tok is not None:
                out.append(tok)
                i += len(tok)
                continue
        j = i + 1
        while j < n and j - i < size:
            if text[j] in firsts and any(text.startswith(s, j) for s in specials):
                break
            j += 1
        out.append(text[i:j])
        i = j
    return out
