"""Code calls: a body of Python or TypeScript calls to offered tools, all or nothing.

Each call is read in one language, decided by the spellings only one of them has
(:func:`tooldialect.pyliteral.spellings`); a call that mixes them is refused (a backtick
string is both languages').  A dotted callee names its last segment's tool.  Arguments
bind as the signatures in :mod:`tooldialect.render` show them: keyword arguments by
name (Python), positional ones in binding order, and one object whose keys are all
parameters (TypeScript's ``f({a: 1})``) unpacked.  A string where the schema admits no
string is typed from its text.  Any refusal (a value that is not a literal, an unknown
or repeated keyword, too many arguments, ...) refuses the whole body: its calls are not
returned, and one diagnostic says why.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar, Final

from ..coerce import type_literal
from ..lalr import Node, Tok
from ..names import offered
from ..pyliteral import PYTHON, TYPESCRIPT, Refused, is_identifier, keyword_argument, literal, spellings
from ..records import renamed
from ..toolset import parameter_order
from ..transform import Issue, RawCall, chain_items, refusal
from ..transform import Reader as GenericReader
from ..tree import node_text as _text

__all__ = ["Reader", "chain_items"]

_BODY: Final = "code_calls"
_TS_DECLARATIONS: Final = ("CONST", "LET", "VAR")
_FALLBACK: Final = "args"  # the one dict a fallback signature (def f(args: dict, /)) takes


class Reader(GenericReader):
    # the body is read whole, by this reader alone
    call_nodes = frozenset({_BODY})
    read_nodes = call_nodes
    picked_nodes: ClassVar[Mapping[str, frozenset[str]]] = {}
    # a body is all or nothing: its calls go out whole, never argument by argument
    member_nodes = ()

    def announce(self, node: Node) -> str | None:
        """A callee's tool: as written, or the offered tool a dotted callee's last segment
        names (``functions.read_file``); the gate then checks it like any name."""
        written = super().announce(node)
        return offered(written, self.known) or written if written is not None else None

    def read(self, node: Node) -> tuple[list[RawCall], list[Issue]] | None:
        if node.name != _BODY:
            return None  # statements are read with their body, all or nothing
        calls: list[RawCall] = []
        statements = chain_items(node, "statements", "statement")
        for st in statements:
            name = _text(st.find("name")).strip()
            span = (st.start or 0, st.end or 0)
            try:
                args = self.statement(st, name)
            except Refused as refused:
                more = "; no call of this body is returned" if len(statements) > 1 else "; the call is not returned"
                return [], [refusal(name, refused, span, self.max_depth, more)]
            text = json.dumps(args, ensure_ascii=False)
            tool = offered(name, self.known) or name
            notes = [renamed(name, tool, "namespace removed", span)] if tool != name else []
            calls.append(RawCall(tool, args, text, None, span, self.family, notes, gated=True))
        return calls, []

    def statement(self, st: Node, name: str) -> dict[str, Any]:
        """The arguments of one call, bound to the tool's parameters."""
        callee = st.find("name")
        assert isinstance(callee, Node)  # the grammar's statement has a name
        tool = self.tools.get(self.announce(callee)) if self.tools is not None else None
        if tool is None or tool.name not in self.known:
            raise Refused(f"{name!r} is not a tool the toolset offers")
        language = _language(st)
        if not all(is_identifier(part, language) for part in name.split(".")):
            raise Refused(f"{name!r} is a reserved word in {_LANGUAGES[language]}, not a function name")
        args = st.find("arguments")
        assert isinstance(args, Node)
        items = [c for c in args.children if isinstance(c, Node) and c.name in ("py_value", "py_kwarg")]
        positional: list[Any] = []
        keywords: dict[str, Any] = {}
        for item in items:
            if item.name == "py_value":
                if keywords:
                    raise Refused("a positional argument after a keyword argument")
                positional.append(literal(item, self.max_depth, language=language, templates=True))
                continue
            name_, value = keyword_argument(item, self.max_depth, language=language, templates=True)
            if name_ in keywords:
                raise Refused(f"the keyword argument {name_!r} is repeated")
            keywords[name_] = value
        return _bind(tool.name, tool.parameters, positional, keywords)

    def salvage(self, values: list[Any]) -> tuple[str | None, RawCall | None]:
        """The name of the call cut off by the end of the text; an all-or-nothing body
        returns no part of itself, whatever ``Policy.truncated`` says."""
        return super().salvage(values)[0], None


_LANGUAGES: Final = {PYTHON: "Python", TYPESCRIPT: "TypeScript"}


def _language(st: Node) -> str:
    """The language a call is written in: the one whose spellings it uses (Python when it
    uses only spellings both languages share)."""
    python, typescript = spellings(st)
    callee = _text(st.find("name")).strip()
    if "." in callee and "$" in callee:
        typescript.append(f"$ in the name {callee!r}")
    if any(isinstance(c, Tok) and c.type in _TS_DECLARATIONS for c in _prefix_tokens(st)):
        typescript.append("a const/let/var declaration")
    if python and typescript:
        raise Refused(f"mixes Python ({python[0]}) and TypeScript ({typescript[0]}) spellings")
    return TYPESCRIPT if typescript else PYTHON


def _prefix_tokens(st: Node) -> list[Any]:
    out: list[Any] = []
    for c in st.children:
        if isinstance(c, Node) and c.name == "assigned":
            out.extend(c.children)
    return out


def _bind(name: str, schema: Any, positional: list[Any], keywords: dict[str, Any]) -> dict[str, Any]:
    """Positional, keyword and single-object arguments to one object, in binding order."""
    params = parameter_order(schema)
    props = schema.get("properties", {}) if params else {}
    if not keywords and len(positional) == 1 and isinstance(positional[0], dict):
        obj = positional[0]
        if all(k in params for k in obj) and (obj or len(params) != 1):
            keywords, positional = obj, []  # f({a: 1}): the object's keys are the parameters
        elif len(params) != 1:
            unknown = next(k for k in obj if k not in params)
            raise Refused(f"{unknown!r} is not a parameter of {name}")
    wrapped = list(keywords) == [_FALLBACK] and _FALLBACK not in params and isinstance(keywords[_FALLBACK], dict)
    if wrapped and not all(is_identifier(p, PYTHON) for p in params):
        return _bind(name, schema, [keywords[_FALLBACK]], {})  # f(args={"a-b": 1}), as the stub reads
    if len(positional) > len(params):
        raise Refused(f"{name} takes {len(params)} argument(s), {len(positional)} given")
    bound: dict[str, Any] = dict(zip(params, positional))
    for key, value in keywords.items():
        if key not in props:
            raise Refused(f"{key!r} is not a parameter of {name}")
        if key in bound:
            raise Refused(f"{key!r} is given twice (by position and by name)")
        bound[key] = value
    out: dict[str, Any] = {}
    for key, value in bound.items():
        if value is None:
            continue  # a top-level None / null / undefined is an argument not given
        out[key] = type_literal(value, props.get(key) if isinstance(props.get(key), dict) else None)
    return out
