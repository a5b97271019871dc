"""tooldialect as SGLang's tool-call detector.

    python -m sglang.launch_server --model-path MODEL --tool-call-parser tooldialect

Importing this module adds ``tooldialect`` to SGLang's ``FunctionCallParser`` detector
table; an installed tooldialect names :func:`register` in SGLang's ``sglang.srt.plugins``
entry-point group, which ``sglang.launch_server`` loads before it reads its arguments.
The families come from ``TOOLDIALECT_FAMILIES``, else from the tokenizer's chat template,
else from the model id (``TOOLDIALECT_MODEL``, else the tokenizer's), through
:func:`tooldialect.integrations.setup_for`; ``detector.profile`` is what the template showed.

Each reply is read by one :class:`tooldialect.openai.ChatStream`.  In a stream a
``ToolCallItem``'s ``tool_index`` is the call's position in the reply (SGLang's serving
layer sends it as the chunk's ``index``), its ``name`` is set once, in the call's first
item, and ``parameters`` carries argument fragments; for a whole reply ``tool_index`` is
the tool's position in the request, as SGLang's own detectors set it.  ``ToolCallItem``
has no id: SGLang mints every call's id itself, so a model's own id (Kimi's, Mistral's)
does not reach the client.  ``finish()`` ends the reply.
"""

from __future__ import annotations

from typing import Any

from sglang.srt.function_call.base_format_detector import BaseFormatDetector
from sglang.srt.function_call.core_types import StreamingParseResult, StructureInfo, ToolCallItem
from sglang.srt.function_call.function_call_parser import FunctionCallParser

from .. import openai as _openai
from ..errors import ToolDialectError
from ..stream import parse
from ._setup import Setup, fixed, lenient_toolset, record_entry, setup_for

__all__ = ["NAME", "ToolDialectDetector", "register"]

#: The name the detector is registered under.
NAME = "tooldialect"
#: Characters every call syntax tooldialect reads holds (JSON, XML-like tags, Python calls).
_BRACKETS = frozenset("{[(</")  # what a call could open with; / for a GLM line (tool/param>value)


class ToolDialectDetector(BaseFormatDetector):
    """SGLang detector reading every family tooldialect knows (or those configured)."""

    #: set by :meth:`configured`: the families and policy, instead of the environment's
    fixed_setup: Setup | None = None

    @classmethod
    def configured(cls, families: Any = None, policy: Any = None) -> type[ToolDialectDetector]:
        """A subclass that reads with these families and policy, for a program that puts it
        in ``FunctionCallParser.ToolCallParserEnum`` under a name of its own."""
        return type(cls.__name__, (cls,), {"fixed_setup": fixed(families, policy)})

    def __init__(self, tokenizer: Any = None) -> None:
        super().__init__()
        self.setup = self.fixed_setup or setup_for(tokenizer)
        self.profile = self.setup.profile  # what the chat template showed (None: families configured)
        self._chat: _openai.ChatStream | None = None
        self._closed = False
        self._probe: tuple[str, bool] | None = None  # the last text has_tool_call read

    def _new_chat(self, tools: Any) -> _openai.ChatStream:
        # SGLang gives a detector no way to refuse a request (docs/servers.md): tools the
        # Toolset refuses are read leniently, with a warning, never an error mid-stream
        return _openai.ChatStream(lenient_toolset(tools), families=self.setup.families, policy=self.setup.policy)

    def get_auto_tool_call_structural_tag(
        self, tools: Any = None, thinking_mode: bool = False, parallel_tool_calls: bool = True
    ) -> Any:
        """None (tool_choice "auto" is not constrained); asked by SGLang with the request's
        tools before it generates, so a warning about tools the Toolset refuses is logged
        then, not after the first delta."""
        lenient_toolset(tools)
        return None

    # whole replies ---------------------------------------------------------------------

    def has_tool_call(self, text: str) -> bool:
        """Whether :meth:`detect_and_parse` should read ``text``.  SGLang asks without the
        request's tools, and a toolset changes what is a call (a registry-gated body, a
        name only a tool makes a call), so a reply the reading without tools finds no call
        in still goes to :meth:`detect_and_parse` when it holds a bracket a call could
        open with, or the ``/`` of a GLM line."""
        if self._probe is None or self._probe[0] != text:
            result = parse(text, families=self.setup.families, policy=self.setup.policy)
            found = bool(result.calls or result.reasoning or result.diagnostics) or not _BRACKETS.isdisjoint(text)
            self._probe = (text, found)
        return self._probe[1]

    def detect_and_parse(self, text: str, tools: Any) -> Any:
        chat = self._new_chat(tools)
        positions = {tool.function.name: i for i, tool in enumerate(tools or ()) if tool.function.name}
        normal: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        for delta in chat.feed(text) + chat.close():
            normal.extend(_texts(delta))
            for entry in delta.get("tool_calls", ()):
                call = calls.setdefault(entry["index"], {"parameters": ""})
                if "id" in entry:
                    call["name"] = entry["function"]["name"]
                call["parameters"] += entry["function"].get("arguments", "")
                if "aborted" in entry:
                    call["aborted"] = True
        items = [
            ToolCallItem(tool_index=positions.get(c["name"], -1), name=c["name"], parameters=c["parameters"])
            for _, c in sorted(calls.items())
            if "name" in c and "aborted" not in c
        ]
        return StreamingParseResult(normal_text="".join(normal), calls=items)

    # streaming -------------------------------------------------------------------------

    def parse_streaming_increment(self, new_text: str, tools: Any) -> Any:
        if self._closed:  # text after finish(): as written
            return StreamingParseResult(normal_text=new_text)
        if self._chat is None:
            self._chat = self._new_chat(tools)
        return self._result(self._chat.feed(new_text) if new_text else [])

    def finish(self, tools: Any = None) -> Any:
        """The end of the reply: calls only its end confirms, and held text, go out."""
        if self._closed or self._chat is None:
            self._closed = True
            return StreamingParseResult()
        self._closed = True
        return self._result(self._chat.close())

    def _result(self, deltas: list[dict[str, Any]]) -> Any:
        normal: list[str] = []
        items: list[Any] = []
        for delta in deltas:
            normal.extend(_texts(delta))
            for entry in delta.get("tool_calls", ()):
                item = self._item(entry)
                if item is not None:
                    items.append(item)
        return StreamingParseResult(normal_text="".join(normal), calls=items)

    def _item(self, entry: dict[str, Any]) -> Any:
        if "aborted" in entry:
            return None  # nothing more for it: its arguments never parse (docs/openai.md)
        fragment = record_entry(self, entry)
        # SGLang mints the id when it sees the name
        name = entry["function"]["name"] if "id" in entry else None
        return ToolCallItem(tool_index=entry["index"], name=name, parameters=fragment)

    # constrained decoding ----------------------------------------------------------------

    def _family(self) -> str | None:
        families = self.setup.families
        return families[0] if families is not None and len(families) == 1 else None

    def structural_tag_dict(
        self, tools: Any, tool_choice: Any = "auto", parallel: bool = True
    ) -> dict[str, Any] | None:
        """``td.export.structural_tag`` for the one configured family (None with several
        families, or where the family cannot be exported as a structural tag)."""
        family = self._family()
        if family is None:
            return None
        mode: Any = tool_choice if tool_choice in ("auto", "required") else None
        if mode is None:
            function = getattr(tool_choice, "function", None)
            name = getattr(function, "name", None) or (
                tool_choice.get("name") if isinstance(tool_choice, dict) else None
            )
            mode = {"name": name} if name else "auto"
        try:
            from .. import export

            return export.structural_tag(family, lenient_toolset(tools), mode=mode, parallel=parallel)
        except ToolDialectError:
            return None

    def supports_structural_tag(self) -> bool:
        return self._family() is not None

    def get_structural_tag(
        self,
        tools: Any = None,
        tool_choice: Any = "auto",
        thinking_mode: bool = False,
        parallel_tool_calls: bool = True,
    ) -> Any:
        tag = self.structural_tag_dict(tools, tool_choice, parallel_tool_calls)
        if tag is None:
            return None
        try:
            from xgrammar import StructuralTag
        except ImportError:
            return None
        return StructuralTag.model_validate(tag)

    def structure_info(self) -> Any:
        """Begin, end and trigger of one tool's call, for SGLang's older structural tags:
        only for a single family whose calls hold JSON arguments between fixed texts."""
        detector = self

        def info(name: str) -> Any:
            tool = {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
            tag = detector.structural_tag_dict([tool])
            fmt = (tag or {}).get("format", {})
            tags = fmt.get("tags") or [{}]
            first = tags[0]
            if fmt.get("type") != "triggered_tags" or first.get("content", {}).get("type") != "json_schema":
                raise NotImplementedError("the tooldialect detector has begin/end texts only for one JSON family")
            return StructureInfo(begin=first["begin"], end=first["end"], trigger=fmt["triggers"][0])

        return info


def _texts(delta: dict[str, Any]) -> list[str]:
    """A delta's visible text and reasoning, in order: SGLang's reasoning parser runs before
    the detector, so reasoning the detector still reads goes out as content."""
    return [delta[k] for k in ("reasoning_content", "content") if delta.get(k)]


def register() -> None:
    """Add ``tooldialect`` to SGLang's detector table (idempotent)."""
    FunctionCallParser.ToolCallParserEnum[NAME] = ToolDialectDetector


register()
