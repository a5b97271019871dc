"""Qwen3-Coder: what may close a value whose ``</parameter>`` is missing.

``</function>`` can, and a ``<parameter=NAME>`` whose NAME is a parameter of the tool
being called; anything else written inside a value (another ``<function=…>``, another
``<parameter=…>``, a wrapper's closer) is the value's text.  Without a toolset there is
no way to tell parameters apart, so only ``</parameter>`` and ``</function>`` end a value.
"""

from __future__ import annotations

import re
from typing import Final

from ..transform import Reader as GenericReader

__all__ = ["Reader"]

_NAME_END: Final = re.compile(r"[^>\s]{0,256}>")


class Reader(GenericReader):
    tool_stops = frozenset({"PARAM_OPEN"})

    def stop_ok(self, terminal: str, text: str, end: int, tool: str | None, eof: bool) -> bool | None:
        if terminal in ("PARAM_CLOSE", "FUNCTION_CLOSE"):
            return True
        if terminal != "PARAM_OPEN":
            return False  # another function, a wrapper closer …: text inside the value
        if self.tools is None or tool is None:
            return False
        m = _NAME_END.match(text, end)
        if m is None:
            if not eof and len(text) - end < 257 and ">" not in text[end:]:
                return None  # the parameter's name is still arriving
            return False
        spec = self.tools.get(tool)
        if spec is None:
            return False
        props = spec.parameters.get("properties")
        return isinstance(props, dict) and m.group()[:-1] in props
