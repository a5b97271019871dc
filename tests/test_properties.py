"""Hypothesis properties: chunk invariance, never raising, arguments always objects, clean text."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st
from support import all_cases, budget, check_invariants, options, run_stream

import tooldialect as td

CASES = all_cases()


def cuts(n: int):
    return st.lists(st.integers(1, max(1, n - 1)), max_size=12).map(lambda xs: sorted(set(xs)) if n > 1 else [])


@given(data=st.data())
def test_corpus_inputs_at_any_cuts(data):
    case = data.draw(st.sampled_from(CASES))
    opts = options(case)
    chosen = data.draw(cuts(len(case.text)))
    batch = td.parse(case.text, **opts)
    check_invariants(case.text, run_stream(case.text, chosen, **opts), batch)


PIECES = [
    "<tool_call>",
    "</tool_call>",
    "<|tool_call|>",
    "<tool_call|>",
    "<toolcall>",
    "<tool_call id='1'>",
    '{"name": "f", "arguments": {"a": 1}}',
    '{"name": "g"}',
    '[{"name": "h", "arguments": {}}]',
    '{"name": "x", "arguments": {"s": "</tool_call> }{"}}',
    "{",
    "}",
    "[",
    "]",
    '"',
    "'",
    ":",
    ",",
    ";",
    "<think>",
    "</think>",
    "[THINK]",
    "[/THINK]",
    "```",
    "```json\n",
    "```python\n",
    "```tool_call\n",
    "`",
    "~~~",
    "<tool_calls>",
    "</tool_calls>",
    "<|START_ACTION|>",
    "<|END_ACTION|>",
    "<|START_RESPONSE|>",
    "functools",
    "<|python_tag|>",
    "<function=f>",
    "</function>",
    "<json>",
    "</json>",
    "<function_call>",
    "call:",
    "\n",
    "\n\n",
    " ",
    "text",
    "é漢🙂",
    "<",
    ">",
    "|",
    "\\",
    "<longcat_tool_call>",
    "<|action_start|><|plugin|>",
    "<function=get_weather>",
    "<parameter=city>",
    "</parameter>",
    "\nParis\n",
    "<seed:tool_call>",
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
    "get_weather",
    "<function_calls>",
    "</function_calls>",
    '<invoke name="f">',
    "</invoke>",
    '<parameter name="k">',
    '<｜DSML｜invoke name="f">',
    '<｜DSML｜parameter name="k" string="false">',
    "</｜DSML｜parameter>",
    "<｜tool▁calls▁begin｜>",
    "<｜tool▁call▁begin｜>",
    "<｜tool▁sep｜>",
    "<｜tool▁call▁end｜>",
    "<｜tool▁calls▁end｜>",
    "function",
    "```json\n",
    "<|tool_calls_section_begin|>",
    "<|tool_call_begin|>",
    "functions.f:0",
    "<|tool_call_argument_begin|>",
    "<|tool_call_end|>",
    "<|tool_calls_section_end|>",
    "[TOOL_CALLS]",
    "[ARGS]",
    "[CALL_ID]",
    "a1B2c3D4e",
    '[{"name": "f", "arguments": {}, "id": "a1B2c3D4e"}]',
    "<|start|>assistant",
    "<|channel|>",
    "analysis",
    "commentary",
    " to=functions.f",
    " <|constrain|>json",
    "<|message|>",
    "<|call|>",
    "<|end|>",
    "<|return|>",
    "final",
    "[f(a=1)]",
    "f(a='x', b=[1, None])",
    "<|python_start|>",
    "<|python_end|>",
    ".call(",
    "(",
    ")",
    "=",
    ">>>",
    "all\n",
    "f\n",
    "<start_function_call>",
    "call:f{",
    "<escape>",
    "<end_function_call>",
    "<|tools_prefix|>",
    "<|tools_suffix|>",
    '[{"f": {"a": 1}}]',
    "<|function_call|>",
    "function call<|role_sep|>",
    "</s>",
    "<|tool_call_start|>",
    "<|inner_prefix|>",
    "<|inner_suffix|>",
    "f(k=1)",
    "f({k: `x`})",
    "get_weather(city='Paris');",
    "f[0|v|1|w]",
    "\\|",
    "f/k>v\n",
    "# c\n",
    "/* c */",
]
fragments = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=6)), max_size=30).map("".join)


@given(text=fragments, data=st.data())
def test_random_markup_at_any_cuts(text, data):
    batch = td.parse(text)
    chosen = data.draw(cuts(len(text)))
    check_invariants(text, run_stream(text, chosen), batch)


@given(text=fragments)
@budget(100)
def test_random_markup_one_character_at_a_time(text):
    check_invariants(text, run_stream(text, range(1, len(text))), td.parse(text))


@given(text=fragments, data=st.data(), repeats=st.integers(1, 3))
@budget(150)
def test_random_markup_with_tight_loop_and_truncation_limits(text, data, repeats):
    policy = td.Policy(max_repeats=repeats, truncated=data.draw(st.sampled_from(["drop", "keep"])))
    batch = td.parse(text, policy=policy)
    check_invariants(text, run_stream(text, range(1, len(text)), policy=policy), batch)
    check_invariants(text, run_stream(text, data.draw(cuts(len(text))), policy=policy), batch)


@given(text=st.text())
def test_parse_never_raises_on_arbitrary_unicode(text):
    result = td.parse(text)
    assert isinstance(result.text, str)


@given(text=fragments)
def test_arguments_are_always_objects(text):
    policies = [td.Policy(), td.Policy(truncated="keep", calls_in_reasoning="accept", start_in_reasoning=True)]
    for policy in policies:
        for call in td.parse(text, policy=policy).calls:
            assert isinstance(call.arguments, dict)
            assert json.loads(call.arguments_json) == call.arguments


PROSE = st.text(alphabet=st.characters(blacklist_characters="<>{}[]`~|\\;"), max_size=40)
NAMES = st.from_regex(r"[a-z][a-z_]{0,11}", fullmatch=True)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
ARGS = st.dictionaries(st.text(min_size=1, max_size=8), VALUES, max_size=4)
SPELLINGS = [
    lambda p: "<tool_call>\n" + p + "\n</tool_call>",
    lambda p: "<tool_call>" + p + "</tool_call>",
    lambda p: "<|tool_call|>" + p + "<|tool_call|>",
    lambda p: "<longcat_tool_call>" + p + "</longcat_tool_call>",
    lambda p: "<tool_calls>[" + p + "]</tool_calls>",
    lambda p: "<|START_ACTION|>[" + p + "]<|END_ACTION|>",
]


@given(
    parts=st.lists(st.tuples(PROSE, NAMES, ARGS, st.sampled_from(range(len(SPELLINGS)))), min_size=1, max_size=4),
    tail=PROSE,
    data=st.data(),
)
def test_text_never_contains_the_markup_of_a_returned_call(parts, tail, data):
    text = ""
    prose = ""
    expected = []
    previous = None
    for words, name, args, spelling in parts:
        payload = json.dumps({"name": name, "arguments": args}, ensure_ascii=False)
        text += words + SPELLINGS[spelling](payload)
        # `<|tool_call|>` closing a call is also an opener: a Hermes block goes on through
        # white space to the next <tool_call> opener (doubled openers), which takes it in
        joined = previous == 2 and spelling in (0, 1, 2) and not words.strip()
        prose += "" if joined else words
        expected.append((name, args))
        previous = spelling
    text += tail
    prose += tail
    result = td.parse(text)
    assert [(c.name, c.arguments) for c in result.calls] == expected
    assert result.text == prose
    assert result.diagnostics == []
    chosen = data.draw(cuts(len(text)))
    check_invariants(text, run_stream(text, chosen), result)
