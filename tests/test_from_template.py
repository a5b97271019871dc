"""td.families.from_template: a model's chat template says how it calls tools.

Every template in tests/templates/ is one tooldialect wrote in a model family's style; the
profile must pick that family (and its policy), and the families it picks must read every
probe the template rendered exactly, in batch and in 1- and 4-character streams.  Templates
that render no call, raise, or write calls no family reads give a profile that says so and
never raise; a runaway template stops at the renderer's operation budget, not its clock.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import ROOT

import tooldialect as td
from tooldialect import jinja
from tooldialect.families._probes import PROBE_TOOLS, PROBES, rendered_calls
from tooldialect.stream import collect

TEMPLATES = ROOT / "tests" / "templates"

#: template file -> (families, start_in_reasoning, variants, sandbox)
EXPECTED: dict[str, tuple[list[str], bool, dict[str, str], str]] = {
    "hermes_qwen2_5": (["hermes"], False, {"hermes": "hermes"}, "immutable"),
    "qwen3_thinking": (["hermes"], True, {"hermes": "hermes"}, "immutable"),
    "qwen3_coder": (["qwen3_coder"], False, {}, "immutable"),
    "seed_oss": (["qwen3_coder"], False, {}, "mutable"),
    "claude_invoke": (["invoke_xml"], False, {}, "immutable"),
    "dsml_v3_2": (["invoke_xml"], False, {}, "immutable"),
    "minimax_m2": (["invoke_xml"], True, {}, "immutable"),
    "deepseek_r1": (["deepseek"], True, {"deepseek": "v3"}, "immutable"),
    "deepseek_v3_1": (["deepseek"], False, {"deepseek": "v3.1"}, "immutable"),
    "kimi_k2": (["kimi_k2"], False, {}, "immutable"),
    "glm4_5": (["glm"], False, {}, "immutable"),
    "glm4_7": (["glm"], True, {}, "immutable"),
    "gpt_oss": (["harmony"], False, {}, "immutable"),
    "mistral_v3": (["mistral"], False, {"mistral": "v3"}, "immutable"),
    "mistral_v11": (["mistral"], False, {"mistral": "v11"}, "immutable"),
    "mistral_v13": (["mistral"], False, {"mistral": "v13"}, "immutable"),
    "llama3_1_json": (["llama_json"], False, {}, "immutable"),
    "llama4_pythonic": (["pythonic"], False, {}, "immutable"),
    "granite3": (["json_array"], False, {}, "immutable"),
    "pformat": (["pformat"], False, {}, "immutable"),
}
#: templates that say nothing usable about calls, and the verdict each gets
UNUSABLE = {"no_tool_calls": "no_calls", "raises": "error", "unread": "unread", "runaway": "error"}
TOOLS = td.Toolset.coerce(PROBE_TOOLS)
PROBE = {p.name: p for p in PROBES}


def test_every_template_file_is_checked():
    stems = {p.stem for p in TEMPLATES.glob("*.jinja")}
    assert stems == set(EXPECTED) | set(UNUSABLE)


def profile_of(name: str, **kw) -> td.families.ModelProfile:
    return td.families.from_template_file(TEMPLATES / f"{name}.jinja", **kw)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_template_picks_its_family_and_policy(name):
    families, thinking, variants, sandbox = EXPECTED[name]
    profile = profile_of(name)
    report = profile.template
    assert report is not None and report.verdict == "read", report
    assert profile.matched and profile.families == families
    assert profile.policy.start_in_reasoning is thinking
    assert not thinking or "think" in report.reasoning
    assert profile.variants == variants
    assert report.sandbox == sandbox and not report.failed
    assert all(p.read for p in report.probes if p.rendered)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_families_read_every_probe_in_batch_and_streams(name):
    profile = profile_of(name)
    rendered = [p for p in profile.template.probes if p.rendered]
    assert len(rendered) >= len(PROBES) - 1  # Llama 3.1 writes one call per turn
    opts = {"families": profile.families, "policy": profile.policy}
    for probe in rendered:
        batch = td.parse(probe.turn, TOOLS, **opts)
        want = [(n, a) for n, a in rendered_calls(PROBE[probe.name], probe.turn)]
        assert [(c.name, c.arguments) for c in batch.calls] == want, probe.turn
        assert not batch.diagnostics
        for size in (1, 4):
            stream = td.ToolStream(TOOLS, **opts)
            events = []
            for i in range(0, len(probe.turn), size):
                events += stream.feed(probe.turn[i : i + size])
            events += stream.close()
            assert collect(events) == batch, (name, probe.name, size)


@pytest.mark.parametrize("model", ["acme/support-bot-v3", "/models/local-dir"])
def test_a_fine_tune_id_matches_nothing_but_its_template_does(model):
    assert not td.families.for_model(model).matched
    profile = profile_of("qwen3_coder", model_id=model)
    assert profile.matched and profile.families == ["qwen3_coder"] and profile.model == model


def test_the_template_wins_over_the_model_id_and_keeps_its_policy_fields():
    # an Apertus id suggests calls_in_reasoning=accept, which no template shows
    profile = profile_of("hermes_qwen2_5", model_id="swiss-ai/Apertus-8B-Instruct-2509")
    assert profile.families == ["hermes"]
    assert profile.policy.calls_in_reasoning == "accept" and not profile.policy.start_in_reasoning


@pytest.mark.parametrize("name", sorted(UNUSABLE))
def test_a_template_that_says_nothing_usable_says_so(name):
    profile = profile_of(name)
    report = profile.template
    assert report.verdict == UNUSABLE[name] and not profile.matched
    assert profile.families == td.families.names() and report.fallback == "every family"
    with_id = profile_of(name, model_id="Qwen/Qwen3-8B")
    assert with_id.families == td.families.for_model("Qwen/Qwen3-8B").families
    assert with_id.template.fallback == "model id" and with_id.model == "Qwen/Qwen3-8B"


def test_what_each_unusable_template_reports():
    assert "drops the calls" in profile_of("no_tool_calls").template.detail
    raised = profile_of("raises").template
    assert "does not support tool calls" in raised.detail
    assert all(not p.rendered and "raised" in p.problem for p in raised.probes)
    unread = profile_of("unread").template
    assert unread.failed == [p.name for p in PROBES]
    assert all(p.rendered and not p.read and "@@" in p.turn for p in unread.probes)
    assert unread.detail.startswith("no family reads the template's calls; one_call:")


def test_a_runaway_template_stops_at_its_operation_budget_not_the_clock(monkeypatch):
    # an hour of deadline: only the operation budget can stop it
    monkeypatch.setattr(jinja, "LIMITS", jinja.Limits(seconds=3600))
    report = profile_of("runaway").template
    assert report.verdict == "error" and "budget of 50000 operations" in report.detail
    renderer = jinja.Renderer((TEMPLATES / "runaway.jinja").read_text(encoding="utf-8"))
    with pytest.raises(jinja.RenderError) as err:
        renderer.render(messages=[], add_generation_prompt=True)
    assert err.value.bound and renderer.operations == jinja.LIMITS.operations + 1


@pytest.mark.parametrize(
    ("source", "why"),
    [
        ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "operations"),
        ("{% for i in range(3000) %}{% for c in s if false %}{% endfor %}{% endfor %}", "operations"),
        ("{% set ns = namespace(x='ab') %}{% for i in range(64) %}{% set ns.x = ns.x ~ ns.x %}{% endfor %}", "65536"),
        ("{% set l = [] %}{% for i in range(99999) %}{% set _ = l.append(s) %}{% endfor %}", "result of up to"),
        ("{{ 'x' * 10 ** 9 }}", "65536"),
        ("{{ (2 ** 4000) ** 4000 }}", "bits"),
        ("{{ '%0999999d' % 1 }}", "five digits"),
        ("{{ '{:>999999}'.format(1) }}", "five digits"),
        ("{{ 'a'.center(10 ** 6) }}", "integer"),
        ("{{ s.replace('', s) }}", "result of up to"),
        ("{{ s | indent(4000) }}", "result of up to"),
        ("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "recursed"),
        ("{{ lipsum(1000) }}", "undefined"),
    ],
)
def test_the_sandbox_bounds_what_a_template_can_make(source, why):
    with pytest.raises(jinja.RenderError, match=why):
        jinja.Renderer(source).render(s="x" * 3000)


def test_the_sandbox_keeps_python_out_of_reach():
    escape = "{{ ().__class__.__base__.__subclasses__() }}"
    with pytest.raises(jinja.RenderError):
        jinja.Renderer(escape).render()
    assert jinja.Renderer("{{ x.__class__ }}|{{ x.mro }}").render(x="") == "|"
    renderer = jinja.Renderer("{% set l = [1] %}{% set _ = l.append(2) %}{{ l }}")
    assert renderer.render() == "[1, 2]" and renderer.mutable  # needed the mutable sandbox
    plain = jinja.Renderer("{{ [1] + [2] }}")
    assert plain.render() == "[1, 2]" and not plain.mutable


def test_the_renderer_offers_what_transformers_offers():
    source = (
        "{{ x | tojson }}|{{ x | tojson(indent=2) }}|{{ strftime_now('%Y') | length }}|"
        "{% for i in [1, 2, 3] %}{% if i == 2 %}{% break %}{% endif %}{{ i }}{% endfor %}|"
        "{% generation %}{{ bos_token }}{% endgeneration %}"
    )
    out = jinja.Renderer(source).render(x={"a": "é"}, bos_token="<s>")
    assert out == '{"a": "é"}|{\n  "a": "é"\n}|4|1|<s>'
    with pytest.raises(jinja.RenderError, match="no tools here"):
        jinja.Renderer("{{ raise_exception('no tools here') }}").render()
    with pytest.raises(jinja.RenderError, match="does not compile"):
        jinja.Renderer("{% if %}").render()


def hermes_tool_use() -> str:
    return (TEMPLATES / "hermes_qwen2_5.jinja").read_text(encoding="utf-8")


def test_a_tokenizer_config_with_named_templates(tmp_path):
    plain = "{% for m in messages %}{{ m.content }}{% endfor %}"
    config = {
        "chat_template": [{"name": "default", "template": plain}, {"name": "tool_use", "template": hermes_tool_use()}],
        "eos_token": {"content": "<|im_end|>", "special": True},
        "bos_token": None,
    }
    path = tmp_path / "tokenizer_config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    for where in (path, tmp_path):
        profile = td.families.from_template_file(where)
        assert profile.families == ["hermes"] and profile.template.verdict == "read"
    only_default = {"chat_template": {"default": hermes_tool_use()}}
    path.write_text(json.dumps(only_default), encoding="utf-8")
    assert td.families.from_template_file(path).families == ["hermes"]


def test_a_model_directory_prefers_its_jinja_file(tmp_path):
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": "{{ 'x' }}"}), encoding="utf-8")
    (tmp_path / "chat_template.jinja").write_text(hermes_tool_use(), encoding="utf-8")
    assert td.families.from_template_file(tmp_path).families == ["hermes"]


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({}, "holds no chat template"),
        ({"tokenizer_config.json": "{}"}, "has no chat_template"),
        ({"tokenizer_config.json": "{"}, "is not JSON"),
        ({"tokenizer_config.json": json.dumps({"chat_template": [{"name": "rag", "template": ""}]})}, "rag"),
    ],
)
def test_a_path_without_a_template_is_a_caller_error(tmp_path, files, message):
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(td.PolicyError, match=message):
        td.families.from_template_file(tmp_path)
    with pytest.raises(td.PolicyError, match="cannot read"):
        td.families.from_template_file(tmp_path / "missing.jinja")


def test_the_caller_s_tools_are_offered_beside_the_probes():
    picky = (
        "{% if 'lookup' not in tools | map(attribute='function.name') %}{{ raise_exception('no lookup') }}{% endif %}"
        "{% for m in messages %}{% for c in m.tool_calls or [] %}"
        '<tool_call>{"name": "{{ c.function.name }}", "arguments": {{ c.function.arguments | tojson }}}</tool_call>'
        "{% endfor %}{% endfor %}"
    )
    assert td.families.from_template(picky).template.verdict == "error"
    mine = [{"name": "lookup", "description": "Look up.", "parameters": {"type": "object"}}]
    profile = td.families.from_template(picky, tools=mine)
    assert profile.families == ["hermes"] and profile.template.verdict == "read"


def test_probes_cover_the_shapes_templates_treat_differently():
    shapes = {p.name for p in PROBES}
    assert {"one_call", "two_calls", "quoted_string", "nested", "numbers", "no_arguments", "with_text"} <= shapes
    assert any('"' in json.dumps(a) and "\\n" in json.dumps(a) for p in PROBES for _, a in p.calls)


def test_the_templates_are_our_own_files():
    for path in Path(TEMPLATES).glob("*.jinja"):
        assert "tooldialect's own test template" in path.read_text(encoding="utf-8"), path.name


def test_importing_the_package_loads_no_jinja():
    import subprocess
    import sys

    code = "import sys, tooldialect, tooldialect.cli, tooldialect.integrations; print('jinja2' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
