"""What the server adapters read with, without any server installed: families and policy
from the environment or the model id, the request's tools, special-token markers and end
token ids (tooldialect.integrations imports neither vLLM nor SGLang)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import tooldialect as td
from tooldialect import integrations


class Tokenizer:
    def __init__(self, specials=(), eos=7, name="Qwen/QwQ-32B"):
        self.all_special_tokens = list(specials)
        self.eos_token_id = eos
        self.name_or_path = name


def test_the_package_imports_no_server():
    code = "import sys, tooldialect, tooldialect.integrations; print(sorted({'vllm', 'sglang'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_families_from_the_environment_win_and_are_checked():
    got = integrations.setup("Qwen/QwQ-32B", {"TOOLDIALECT_FAMILIES": " hermes,kimi_k2 ,hermes"})
    assert got.families == ("hermes", "kimi_k2") and got.source == "environment"
    assert got.policy.start_in_reasoning is True  # the model's policy still applies
    with pytest.raises(td.UnknownFamilyError):
        integrations.setup(None, {"TOOLDIALECT_FAMILIES": "hermes,no_such_family"})


def test_families_from_the_model_id():
    got = integrations.setup("Qwen/QwQ-32B", {})
    assert got.source == "model" and "hermes" in got.families and got.policy.start_in_reasoning
    named = integrations.setup("/models/local-dir", {"TOOLDIALECT_MODEL": "moonshotai/Kimi-K2-Instruct"})
    assert named.model == "moonshotai/Kimi-K2-Instruct" and "kimi_k2" in named.families
    unknown = integrations.setup("/models/local-dir", {})
    assert unknown.families is None and unknown.source == "every family" and unknown.policy == td.Policy()
    assert integrations.setup(None, {}).families is None


def test_a_fixed_setup_checks_its_families():
    assert integrations.fixed(["hermes"]).families == ("hermes",)
    with pytest.raises(td.UnknownFamilyError):
        integrations.fixed(["no_such_family"])


def test_special_markers_and_end_ids():
    kimi = integrations.marker_strings(["kimi_k2"])
    special = next(m for m in kimi if m.startswith("<|"))
    assert integrations.special_markers(Tokenizer([special, "<|fim_prefix|>"]), ["kimi_k2"]) == {special}
    assert integrations.special_markers(Tokenizer(["<|fim_prefix|>"]), ["kimi_k2"]) == frozenset()
    assert integrations.special_markers(object(), ["kimi_k2"]) is None  # cannot tell
    assert integrations.end_token_ids(Tokenizer(eos=7)) == {7}
    assert integrations.end_token_ids(Tokenizer(eos=[7, 9])) == {7, 9}
    assert integrations.end_token_ids(object()) == frozenset()
    assert integrations.model_id_of(Tokenizer()) == "Qwen/QwQ-32B"


def test_request_tools_become_a_cached_toolset():
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    first = integrations.toolset_of(tools)
    assert first is integrations.toolset_of([dict(t) for t in tools]) and "get_weather" in first
    assert integrations.toolset_of(None) is None and integrations.toolset_of([]) is None


def test_tools_the_toolset_refuses_are_read_leniently_with_one_warning(caplog):
    """What a reply already being served reads with (docs/servers.md, "The request's tools")."""
    import logging

    def tool(name, properties=None):
        return {
            "type": "function",
            "function": {"name": name, "parameters": {"type": "object", "properties": properties or {}}},
        }

    bad = [tool("get_weather", {"city": {"type": "strng"}}), tool("get_time"), tool("get_time", {"tz": {}}), {"x": 1}]
    with pytest.raises(td.ToolsetError, match="not a tool object"):
        integrations.toolset_of(bad)
    with caplog.at_level(logging.WARNING, logger="tooldialect.integrations"):
        got = integrations.lenient_toolset(bad)
        assert integrations.lenient_toolset(bad) is got  # built, and warned about, once
    assert got.names == ("get_weather", "get_time")
    assert got.get("get_weather").parameters == {"type": "object"}  # its schema off
    assert got.get("get_time").parameters == tool("get_time")["function"]["parameters"]  # the first kept
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 3
    assert "get_weather" in messages[0] and "strng" in messages[0]
    assert "#2" in messages[1] and "get_time" in messages[1]
    assert "#3" in messages[2]
    good = [tool("get_weather")]
    assert integrations.lenient_toolset(good) is integrations.toolset_of(good)
    assert integrations.lenient_toolset(None) is None
