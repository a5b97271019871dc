"""The parsers measured side by side, behind one small interface.

Each adapter has ``lib`` and ``fmt`` names, ``full(text)`` (the non-streaming call) and
``stream(deltas)`` (one call per delta, as the peer's server drives it), and both return
how many calls were found, so that a fast wrong answer shows in the table. Inputs are
prepared outside the timed region (``prepare``): token ids for vLLM, o200k token ids for
openai-harmony.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if "tooldialect" not in sys.modules:  # run.py --src imports the tree it measures first
    sys.path.insert(0, str(HERE.parent / "src"))  # this checkout's tooldialect, whatever is installed

from stubs import FakeTokenizer
from workloads import FORMATS, TOOLS

import tooldialect as td


class Adapter:
    lib = ""
    fmt = ""

    def prepare(self, deltas: list[str]) -> Any:
        return deltas

    def full(self, text: str) -> int:
        raise NotImplementedError

    def stream(self, prepared: Any) -> int:
        raise NotImplementedError


# -- tooldialect -----------------------------------------------------------------------------------


class Tooldialect(Adapter):
    def __init__(self, fmt: str, every_family: bool = False) -> None:
        self.fmt = fmt
        self.families = None if every_family else [FORMATS[fmt].name]
        self.lib = "tooldialect (every family)" if every_family else "tooldialect"
        self.tools = td.Toolset.from_openai(TOOLS)

    def full(self, text: str) -> int:
        return len(td.parse(text, tools=self.tools, families=self.families).calls)

    def stream(self, deltas: list[str]) -> int:
        s = td.ToolStream(self.tools, families=self.families)
        n = 0
        for d in deltas:
            for ev in s.feed(d):
                n += type(ev) is td.CallEnd
        for ev in s.close():
            n += type(ev) is td.CallEnd
        return n


# -- SGLang ----------------------------------------------------------------------------------------

SGLANG = {
    "hermes": [("hermes_detector", "HermesDetector"), ("qwen25_detector", "Qwen25Detector")],
    "qwen3_coder": [("qwen3_coder_detector", "Qwen3CoderDetector")],
    "dsml": [("deepseekv4_detector", "DeepSeekV4Detector")],
    "kimi_k2": [("kimik2_detector", "KimiK2Detector")],
    "glm47": [("glm47_moe_detector", "Glm47MoeDetector")],
    "mistral": [("mistral_detector", "MistralDetector")],
    "harmony": [("gpt_oss_detector", "GptOssDetector")],
    "pythonic": [("pythonic_detector", "PythonicDetector")],
}


class SGLang(Adapter):
    def __init__(self, fmt: str, module: str, cls: str) -> None:
        import importlib

        from sglang.srt.entrypoints.openai.protocol import Tool

        self.fmt = fmt
        self.lib = f"sglang {cls}"
        self.cls = getattr(importlib.import_module(f"sglang.srt.function_call.{module}"), cls)
        self.tools = [Tool(**t) for t in TOOLS]

    def full(self, text: str) -> int:
        return len(self.cls().detect_and_parse(text, self.tools).calls)

    def stream(self, deltas: list[str]) -> int:
        d = self.cls()
        names = 0
        for delta in deltas:
            res = d.parse_streaming_increment(delta, self.tools)
            names += sum(1 for c in res.calls if c.name)
        return names


# -- vLLM ------------------------------------------------------------------------------------------

VLLM = {
    "hermes": "hermes",
    "qwen3_coder": "qwen3_coder",
    "dsml": "deepseek_v4",
    "kimi_k2": "kimi_k2",
    "glm47": "glm47",
    "mistral": "mistral",
    "pythonic": "pythonic",
}


class VLLM_(Adapter):
    def __init__(self, fmt: str, name: str) -> None:
        from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
        from vllm.tool_parsers import ToolParserManager

        self.fmt = fmt
        self.lib = f"vllm {name}"
        self.tok = FakeTokenizer(FORMATS[fmt].specials)
        self.request = ChatCompletionRequest(messages=[{"role": "user", "content": "hi"}], model="x", tools=TOOLS)
        self.cls = ToolParserManager.get_tool_parser(name)
        self.engine = bool(getattr(self.cls, "engine_based_streaming", False))

    def _parser(self) -> Any:
        return self.cls(self.tok, self.request.tools)

    def prepare(self, deltas: list[str]) -> Any:
        return [(d, self.tok.encode(d)) for d in deltas]

    def full(self, text: str) -> int:
        info = self._parser().extract_tool_calls(text, self.request)
        return len(info.tool_calls) if info.tools_called else 0

    def stream(self, prepared: Any) -> int:
        """vLLM's serving convention: an engine parser gets only the delta; a legacy
        parser gets the accumulated text and token ids rebuilt on every delta."""
        p = self._parser()
        names = 0
        prev_text, prev_ids = "", []
        for text, ids in prepared:
            if self.engine:
                msg = p.extract_tool_calls_streaming("", text, text, [], ids, ids, self.request)
            else:
                cur_text, cur_ids = prev_text + text, prev_ids + ids
                msg = p.extract_tool_calls_streaming(prev_text, cur_text, text, prev_ids, cur_ids, ids, self.request)
                prev_text, prev_ids = cur_text, cur_ids
            if msg is not None and msg.tool_calls:
                names += sum(1 for c in msg.tool_calls if c.function and c.function.name)
        finish = getattr(p, "finish_streaming", None)
        if self.engine and finish is not None:
            msg = finish()
            if msg is not None and msg.tool_calls:
                names += sum(1 for c in msg.tool_calls if c.function and c.function.name)
        return names


# -- openai-harmony (token ids) ------------------------------------------------------------------------


class Harmony(Adapter):
    """openai-harmony reads o200k token ids, not text: the text is encoded outside the
    timed region, and the ratio to it is reported, not gated."""

    fmt = "harmony"

    def __init__(self, venv: Path) -> None:
        os.environ.setdefault("TIKTOKEN_ENCODINGS_BASE", str(venv / "tiktoken_base"))
        from openai_harmony import HarmonyEncodingName, Role, StreamableParser, load_harmony_encoding

        self.enc = load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)
        self.Role = Role
        self.StreamableParser = StreamableParser
        self.lib = "openai-harmony (token ids)"
        self.prefix = self.enc.encode("<|start|>assistant", allowed_special="all")

    def _ids(self, text: str) -> list[int]:
        return self.enc.encode(text, allowed_special="all")

    def prepare(self, deltas: list[str]) -> Any:
        return self._ids("".join(deltas))

    def prepare_full(self, text: str) -> Any:
        return self.prefix + self._ids(text)

    def full(self, ids: Any) -> int:  # type: ignore[override]
        msgs = self.enc.parse_messages_from_completion_tokens(ids, role=None)
        return sum(1 for m in msgs if m.recipient)

    def stream(self, ids: Any) -> int:
        p = self.StreamableParser(self.enc, role=self.Role.ASSISTANT)
        for t in ids:
            p.process(t)
        p.process_eos()
        return sum(1 for m in p.messages if m.recipient)


def adapters(fmt: str, venv: Path, peers: bool = True) -> list[Adapter]:
    """Every parser of a format: tooldialect (its family, and every family), then the peers
    that import here (a peer that fails to import is reported and skipped)."""
    out: list[Adapter] = [Tooldialect(fmt), Tooldialect(fmt, every_family=True)]
    if not peers:
        return out
    for module, cls in SGLANG.get(fmt, []):
        out.append(_try(lambda module=module, cls=cls: SGLang(fmt, module, cls), f"sglang {cls}"))
    if fmt in VLLM:
        out.append(_try(lambda: VLLM_(fmt, VLLM[fmt]), f"vllm {VLLM[fmt]}"))
    if fmt == "harmony":
        out.append(_try(lambda: Harmony(venv), "openai-harmony"))
    return [a for a in out if a is not None]


def _try(make: Any, name: str) -> Adapter | None:
    try:
        return make()
    except Exception as exc:  # a peer that does not import is a finding, not a crash
        print(f"# skipped {name}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return None
