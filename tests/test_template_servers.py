"""The vLLM and SGLang plugins read the tokenizer's chat template when no family is
configured: a fine-tune whose id matches nothing reads its Qwen3-Coder calls with
``families == ["qwen3_coder"]`` in the parser's ``.profile``; a configured family list still
wins.  The servers are stood in for by the few classes the plugins import from them, so this
runs without either installed (tests/integrations drives the real ones)."""

from __future__ import annotations

import importlib
import json
import logging
import sys
import types
from typing import Any, ClassVar

import pytest
from support import ROOT

import tooldialect as td
from tooldialect.integrations import _setup

TEMPLATE = (ROOT / "tests" / "templates" / "qwen3_coder.jinja").read_text(encoding="utf-8")
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "lines": {"type": "integer"}}},
        },
    }
]
REPLY = (
    "I'll read it.\n\n<tool_call>\n<function=read_file>\n<parameter=path>\nsrc/app.py\n</parameter>\n"
    "<parameter=lines>\n40\n</parameter>\n</function>\n</tool_call>"
)
WANT = [("read_file", {"path": "src/app.py", "lines": 40})]


class Tokenizer:
    """What the plugins read of a Hugging Face tokenizer, with a chat template."""

    def __init__(self, template: Any = TEMPLATE, name: str = "/models/acme-support-bot-v3") -> None:
        self.chat_template = template
        self.name_or_path = name
        self.eos_token = "<|im_end|>"
        self.bos_token = None
        self.eos_token_id = 7
        self.all_special_tokens = ["<|im_end|>"]


class _Fields:
    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)


class _Manager:
    modules: ClassVar[dict[str, Any]] = {}

    @classmethod
    def register_module(cls, name: str, force: bool = True, module: Any = None) -> None:
        cls.modules[name] = module


class _ToolParser:
    def __init__(self, tokenizer: Any, tools: Any = None) -> None:
        self.model_tokenizer = tokenizer
        self.tools = tools
        self.prev_tool_call_arr: list[Any] = []
        self.streamed_args_for_tool: list[str] = []
        self.current_tool_id = -1
        self.current_tool_name_sent = False

    def adjust_request(self, request: Any) -> Any:
        return request


class _ReasoningParser:
    def __init__(self, tokenizer: Any, *args: Any, **kwargs: Any) -> None:
        self.model_tokenizer = tokenizer


class _Detector:
    def __init__(self) -> None:
        self.prev_tool_call_arr: list[Any] = []
        self.streamed_args_for_tool: list[str] = []
        self.current_tool_id = -1
        self.current_tool_name_sent = False


def _module(name: str, **attrs: Any) -> types.ModuleType:
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)
    return mod


def _records(*names: str) -> dict[str, type]:
    return {n: type(n, (_Fields,), {}) for n in names}


@pytest.fixture
def plugins(monkeypatch):
    """``(vllm plugin, sglang plugin)`` imported against stand-ins for the servers."""
    protocol = _records(
        "DeltaFunctionCall", "DeltaMessage", "DeltaToolCall", "ExtractedToolCallInformation", "FunctionCall", "ToolCall"
    )
    tool_manager = type("ToolParserManager", (_Manager,), {"modules": {}})
    reasoning_manager = type("ReasoningParserManager", (_Manager,), {"modules": {}})
    fakes = {
        "vllm": {},
        "vllm.entrypoints": {},
        "vllm.entrypoints.generate": {},
        "vllm.entrypoints.generate.base": {},
        "vllm.entrypoints.generate.base.protocol": protocol,
        "vllm.tool_parsers": {"ToolParser": _ToolParser, "ToolParserManager": tool_manager},
        "vllm.reasoning": {"ReasoningParser": _ReasoningParser, "ReasoningParserManager": reasoning_manager},
        "sglang": {},
        "sglang.srt": {},
        "sglang.srt.function_call": {},
        "sglang.srt.function_call.base_format_detector": {"BaseFormatDetector": _Detector},
        "sglang.srt.function_call.core_types": _records("StreamingParseResult", "StructureInfo", "ToolCallItem"),
        "sglang.srt.function_call.function_call_parser": {
            "FunctionCallParser": type("FunctionCallParser", (), {"ToolCallParserEnum": {}})
        },
    }
    for name, attrs in fakes.items():
        monkeypatch.setitem(sys.modules, name, _module(name, **attrs))
    monkeypatch.setattr(_setup, "_read", {})  # each test reads its template afresh
    for env in (_setup.FAMILIES_VARIABLE, _setup.MODEL_VARIABLE):
        monkeypatch.delenv(env, raising=False)
    loaded = []
    for plugin in ("tooldialect.integrations.vllm", "tooldialect.integrations.sglang"):
        sys.modules.pop(plugin, None)
        loaded.append(importlib.import_module(plugin))
    yield tuple(loaded)
    for plugin in ("tooldialect.integrations.vllm", "tooldialect.integrations.sglang"):
        sys.modules.pop(plugin, None)
        if hasattr(sys.modules["tooldialect.integrations"], plugin.rsplit(".", 1)[1]):
            delattr(sys.modules["tooldialect.integrations"], plugin.rsplit(".", 1)[1])


def request() -> Any:
    return _Fields(tools=TOOLS, tool_choice="auto")


def test_the_vllm_parser_reads_the_template_s_calls(plugins):
    vllm, _ = plugins
    assert not td.families.for_model("/models/acme-support-bot-v3").matched
    parser = vllm.ToolDialectToolParser(Tokenizer())
    assert parser.profile is not None and parser.profile.families == ["qwen3_coder"]
    assert parser.setup.families == ("qwen3_coder",) and parser.setup.source == "template"
    info = parser.extract_tool_calls(REPLY, request())
    assert [(c.function.name, json.loads(c.function.arguments)) for c in info.tool_calls] == WANT
    assert info.content.strip() == "I'll read it."
    streamed = vllm.ToolDialectToolParser(Tokenizer())
    names: list[str] = []
    args = ""
    for i in range(0, len(REPLY), 4):
        delta = streamed.extract_tool_calls_streaming("", "", REPLY[i : i + 4], [], [], [], request())
        for entry in getattr(delta, "tool_calls", None) or ():
            names += [entry.function.name] if getattr(entry.function, "name", None) else []
            args += entry.function.arguments or ""
    final = streamed.finish_streaming()
    for entry in getattr(final, "tool_calls", None) or ():
        args += entry.function.arguments or ""
    assert [(n, json.loads(args)) for n in names] == WANT
    assert vllm.ToolDialectReasoningParser(Tokenizer()).profile.families == ["qwen3_coder"]


def test_the_sglang_detector_reads_the_template_s_calls(plugins):
    _, sglang = plugins
    detector = sglang.ToolDialectDetector(Tokenizer())
    assert detector.profile is not None and detector.profile.families == ["qwen3_coder"]
    tools = [_Fields(function=_Fields(name="read_file"), model_dump=lambda **kw: TOOLS[0])]
    result = detector.detect_and_parse(REPLY, tools)
    assert [(c.name, json.loads(c.parameters)) for c in result.calls] == WANT
    assert result.normal_text.strip() == "I'll read it."


def test_a_configured_family_list_wins_over_the_template(plugins, monkeypatch):
    vllm, sglang = plugins
    fixed = vllm.ToolDialectToolParser.configured(["hermes"])(Tokenizer())
    assert fixed.profile is None and fixed.setup.families == ("hermes",)
    assert sglang.ToolDialectDetector.configured(["glm"])(Tokenizer()).setup.families == ("glm",)
    monkeypatch.setenv(_setup.FAMILIES_VARIABLE, "kimi_k2")
    listed = vllm.ToolDialectToolParser(Tokenizer())
    assert listed.profile is None and listed.setup.families == ("kimi_k2",)


def test_the_profile_is_read_and_logged_once(plugins, caplog):
    vllm, sglang = plugins
    with caplog.at_level(logging.INFO, logger="tooldialect"):
        first = vllm.ToolDialectToolParser(Tokenizer())
        second = vllm.ToolDialectToolParser(Tokenizer())
        third = sglang.ToolDialectDetector(Tokenizer())
    assert first.setup is second.setup is third.setup
    lines = [r.getMessage() for r in caplog.records if r.name == "tooldialect"]
    assert len(lines) == 1 and "qwen3_coder (from template)" in lines[0] and "read" in lines[0]


def test_a_template_that_says_nothing_falls_back_to_the_model_id(plugins):
    vllm, _ = plugins
    plain = "{% for m in messages %}{{ m.content }}{% endfor %}"
    parser = vllm.ToolDialectToolParser(Tokenizer(plain, name="Qwen/Qwen3-Coder-30B-A3B-Instruct"))
    assert parser.profile.template.verdict == "no_calls"
    assert parser.setup.source == "model" and "qwen3_coder" in parser.setup.families
    unknown = vllm.ToolDialectToolParser(Tokenizer(plain))
    assert unknown.setup.families is None and unknown.setup.source == "every family"
    named = vllm.ToolDialectToolParser(Tokenizer({"default": plain, "tool_use": TEMPLATE}))
    assert named.profile.families == ["qwen3_coder"]
    without = vllm.ToolDialectToolParser(Tokenizer(None, name="Qwen/QwQ-32B"))
    assert without.profile is None and without.setup.source == "model"
