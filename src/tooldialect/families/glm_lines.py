"""GLM lines: one call per line, read as a whole body (all or nothing), or one line on
its own in prose (the ``line`` rule).

Each ``glm_line`` is read like a grammar-spelled call (``name`` with one ``param``, or a JSON
``arguments`` object); a line the generic reader refuses refuses the body.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Final

from ..lalr import Node
from ..transform import Issue, RawCall, chain_items
from ..transform import Reader as GenericReader

__all__ = ["Reader"]

_BODY: Final = "glm_lines"
_LINE: Final = "line"  # a line on its own (a rule the engine tries where a visible line begins)


class Reader(GenericReader):
    # a body, or a line on its own, is read whole, by this reader alone
    call_nodes = frozenset({_BODY, _LINE})
    read_nodes = call_nodes
    picked_nodes: ClassVar[Mapping[str, frozenset[str]]] = {}

    def read(self, node: Node) -> tuple[list[RawCall], list[Issue]] | None:
        if node.name == _LINE:
            lines = [n for n in node.children if isinstance(n, Node) and n.name == "glm_line"]
        elif node.name == _BODY:
            lines = chain_items(node, "lines", "glm_line")
        else:
            return None
        calls: list[RawCall] = []
        for line in lines:
            got, issues = self.read_call(line)
            if issues or not got:
                return [], issues
            calls.extend(got)
        return calls, []

    def completed(self, values: list[Any]) -> list[RawCall]:
        """The lines read whole before the end of the text cut the body off: their calls
        stand (the cut line itself never does)."""
        done = next((v for v in values if isinstance(v, Node) and v.name == "lines"), None)
        if done is None:
            return []
        calls, issues = self.read(Node(_BODY, [done], done.start, done.end)) or ([], [])
        for call in calls:
            call.gated = True
        return [] if issues else calls

    def salvage(self, values: list[Any]) -> tuple[str | None, RawCall | None]:
        """The name of the call cut off by the end of the text; a registry-gated body is
        all or nothing and returns no part of itself, whatever ``Policy.truncated`` says."""
        return super().salvage(values)[0], None
