"""Nothing lost, nothing invented: each shape a differential and truncation fuzzer found
losing text, inventing values or splitting a stream from its batch, as a regression.

Every case is checked whole, one character at a time, three at a time and at seeded random
cuts (the DESIGN §4 invariants, arguments fragments included), and for what the batch
result says."""

from __future__ import annotations

import pytest
from support import check_invariants, cuts_for, run_stream, tool

import tooldialect as td

KEEP = td.Policy(truncated="keep")


def _every_cut(text: str, **opts) -> list[list[td.Event]]:
    """The stream's events at every way of cutting ``text`` the tests use; each checked."""
    batch = td.parse(text, **opts)
    runs = []
    for cuts in (
        cuts_for(text, "whole"),
        cuts_for(text, "chars"),
        list(range(3, len(text), 3)),
        cuts_for(text, "random", 7),
    ):
        events = run_stream(text, cuts, **opts)
        check_invariants(text, events, batch)
        runs.append(events)
    return runs


def _check(text: str, **opts) -> td.ParseResult:
    _every_cut(text, **opts)
    return td.parse(text, **opts)


def _calls(result: td.ParseResult) -> list[tuple[str, dict]]:
    return [(c.name, c.arguments) for c in result.calls]


def _kinds(result: td.ParseResult) -> list[str]:
    return [d.kind for d in result.diagnostics]


TOOLS = td.Toolset(
    [
        tool("shell", {"command": {"type": "string"}}),
        tool("search", {"query": {"type": "string"}}),
        tool("write_file", {"content": {"type": "string"}}),
        tool("get_time", {}),
    ]
)


# -- 1: a one-word reply is prose ----------------------------------------------------------------


@pytest.mark.parametrize("text", ["Paris\n", "Paris", "Paris\n\n", "<think>x</think>Paris\n"])
@pytest.mark.parametrize("tools", [None, TOOLS])
def test_a_one_word_reply_is_text_not_a_truncated_call(text, tools):
    result = _check(text, tools=tools)
    assert result.reasoning + result.text == text.replace("<think>", "").replace("</think>", "")
    assert result.calls == [] and result.diagnostics == []


def test_a_reply_initial_name_with_its_payload_begun_is_still_truncated():
    result = _check('get_weather\n{"city": "Par')
    assert _kinds(result) == ["truncated"] and result.text == ""
    # the diagnostic covers what was removed: the whole reply, name line included
    assert result.diagnostics[0].span == (0, len('get_weather\n{"city": "Par'))


def test_a_truncated_diagnostic_covers_the_removed_block():
    text = 'Hi <tool_call>{"name":"f","arguments":{"a":"x'
    result = _check(text)
    assert result.text == "Hi "
    assert result.diagnostics[0].kind == "truncated" and result.diagnostics[0].span == (3, len(text))


# -- 2, 3: kept cut-off calls stream exactly what they keep ------------------------------------


@pytest.mark.parametrize(
    "text, arguments",
    [
        ('<tool_call>{"name":"f","arguments":{"a":1,"b":[1,2', {"a": 1}),
        ('<tool_call>{"name":"f","arguments":{"command":"ls","timeout":"', {"command": "ls"}),
        ('<tool_call>{"name":"f","arguments":{"a":null,"b":nullc', {"a": None}),
        ('[TOOL_CALLS]f[ARGS]{"a":1,"b":[1,2', {"a": 1}),
        ('<|channel|>commentary to=functions.f <|constrain|>json<|message|>{"a":1,"b":"x', {"a": 1}),
        (
            '<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{"a":1,"b":tru',
            {"a": 1},
        ),
    ],
)
def test_kept_cut_off_arguments_stream_as_what_is_kept(text, arguments):
    result = _check(text, policy=KEEP)
    assert _calls(result) == [("f", arguments)]
    assert _kinds(result) == ["truncated"]


def test_a_scalar_running_into_junk_never_ended():
    from tooldialect.argstream import StrictPrefix

    sp = StrictPrefix()
    sp.feed('{"a":null,"b":nullc')
    assert sp.broken and sp.safe == len('{"a":null')


def test_kimi_keep_mode_keeps_arguments_read_whole_before_a_cut_closer():
    text = (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
        '<|tool_call_argument_begin|>{"city": "Paris"}<|tool_ca'
    )
    kept = _check(text, families=["kimi_k2"], policy=KEEP)
    assert _calls(kept) == [("get_weather", {"city": "Paris"})]
    dropped = _check(text, families=["kimi_k2"])
    assert dropped.calls == [] and _kinds(dropped) == ["truncated"]


# -- 4, 5: nothing cut off is completed -----------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=unit>",
        "<tool_call><function=get_weather><parameter=city>Paris</parameter><parameter=unit>",
        '<invoke name="get_weather"><parameter name="city">Paris</parameter><parameter name="unit">',
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n<arg_key>unit</arg_key><arg_value>",
    ],
)
def test_a_value_cut_off_before_its_first_character_is_not_written_empty(text):
    result = _check(text)
    assert result.calls == [] and _kinds(result) == ["truncated"]
    assert result.diagnostics[0].detail["name"] == "get_weather"
    kept = _check(text, policy=KEEP)
    assert _calls(kept) == [("get_weather", {"city": "Paris"})]


@pytest.mark.parametrize(
    "text",
    [
        "<tool_call>get_wea",
        '<invoke name="get_wea',
        "<function=get_wea",
        "<start_function_call>call:get_wea",
        "<|start|>assistant to=functions.get_wea",
        "<｜tool▁call▁begin｜>get_wea",
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_wea",
    ],
)
@pytest.mark.parametrize("policy", [td.Policy(), KEEP])
def test_a_name_cut_off_is_no_name(text, policy):
    result = _check(text, policy=policy)
    assert result.calls == [] and _kinds(result) == ["truncated"]
    assert "name" not in result.diagnostics[0].detail
    assert result.text == ""


def test_a_name_followed_by_anything_is_complete():
    result = _check("<tool_call>get_weather\n", policy=KEEP)
    assert result.diagnostics[0].detail["name"] == "get_weather"


# -- 6: GLM lines and a line break ----------------------------------------------------------------


@pytest.mark.parametrize("after", ["\nDone.", "\n", "", " Done."])
def test_a_one_line_value_ends_at_the_blocks_closer(after):
    result = _check("<tool_call>shell/command>ls</tool_call>" + after, tools=TOOLS)
    assert _calls(result) == [("shell", {"command": "ls"})]
    assert result.text == after and result.diagnostics == []


def test_a_multi_line_glm_lines_body_still_reads_every_line():
    result = _check("<tool_call>shell/command>ls\nsearch/query>cats</tool_call>", tools=TOOLS)
    assert _calls(result) == [("shell", {"command": "ls"}), ("search", {"query": "cats"})]


def test_a_qwen3_coder_value_that_mentions_the_closer_keeps_it():
    text = "<tool_call>\n<function=write_file>\n<parameter=content>\na</tool_call>\nb\n</parameter>\n</function>\n</tool_call>"
    result = _check(text, tools=TOOLS)
    assert _calls(result) == [("write_file", {"content": "a</tool_call>\nb"})]


# -- 7, 8, 9: limits decide the same at every chunking -----------------------------------------

DEEP = "[" * 64 + "1" + "]" * 64

OPENERS = {
    "hermes": ('<tool_call>{"name":"f","arguments":{"a":', "}}"),
    "llama_json": ('<|python_tag|>{"name":"f","parameters":{"a":', "}}"),
    "gigachat": ('<|function_call|>{"name":"f","arguments":{"a":', "}}"),
    "deepseek": ('<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{"a":', "}"),
    "kimi_k2": (
        '<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{"a":',
        "}",
    ),
    "harmony": ('<|channel|>commentary to=functions.f <|constrain|>json<|message|>{"a":', "}"),
    "mistral": ('[TOOL_CALLS][{"name":"f","arguments":{"a":', "}}]"),
    "mistral_v11": ('[TOOL_CALLS]f[ARGS]{"a":', "}"),
    "json_array": ('<|tool_call|>[{"name":"f","arguments":{"a":', "}}]"),
    "apertus": ('<|tools_prefix|>[{"f": {"a":', "}}]"),
}


@pytest.mark.parametrize("family", sorted(OPENERS))
def test_prose_after_a_payload_deeper_than_max_depth_stays_text(family):
    opener, close = OPENERS[family]
    result = _check(opener + DEEP + close + " Done, see above.")
    assert result.text == " Done, see above."
    assert result.calls == [] and _kinds(result) == ["limit_exceeded"]


@pytest.mark.parametrize("family", sorted(OPENERS))
def test_a_block_too_deep_and_over_max_block_chars_is_released_as_text(family):
    opener, _ = OPENERS[family]
    text = opener + "[" * 70 + "1," * 200 + " trailing prose words"
    result = _check(text, policy=td.Policy(max_block_chars=256))
    assert result.text.endswith(" trailing prose words") and "1,1,1" in result.text
    # released as text; a section whose inner call opener is met again reports that block too
    assert _kinds(result) and set(_kinds(result)) == {"limit_exceeded"}


def test_detect_mode_agrees_with_its_stream_past_max_depth():
    from tooldialect.detect import DetectStream, scan

    text = OPENERS["llama_json"][0] + DEEP + "}} Done, see above."
    whole = scan(text)
    stream = DetectStream()
    for i in range(0, len(text), 4):
        stream.feed(text[i : i + 4])
    stream.close()
    streamed = stream.result()
    assert whole.visible == " Done, see above."
    assert (streamed.visible, streamed.diagnostics) == (whole.visible, whole.diagnostics)


def test_a_diagnostics_family_does_not_depend_on_the_chunking():
    text = "<tool_call>write_file/content>hello" + " word" * 60 + "</tool_call>"
    opts = {"tools": TOOLS, "families": ["qwen3_coder", "glm_lines"], "policy": td.Policy(max_block_chars=256)}
    batch = td.parse(text, **opts)
    for events in _every_cut(text, **opts):
        families = [e.diagnostic.family for e in events if isinstance(e, td.DiagnosticEvent)]
        assert families == [d.family for d in batch.diagnostics]


# -- 12: a cut-off block keeps its complete calls -------------------------------------------------


@pytest.mark.parametrize("policy", [td.Policy(), KEEP])
@pytest.mark.parametrize(
    "text, tools, first",
    [
        ("<tool_call>search/query>cats\nsearch", TOOLS, ("search", {"query": "cats"})),
        ('<|tool_call|>[{"name":"a","arguments":{}}, {"name":"b","argu', None, ("a", {})),
        ('[TOOL_CALLS][{"name":"a","arguments":{"x":1}}, {"name":"b","arguments":{"y":', None, ("a", {"x": 1})),
        ('<tool_call>[{"name":"a","arguments":{}}, {"name":"b","argu', None, ("a", {})),
        ('<|tools_prefix|>[{"a": {}}, {"b": {"x":', None, ("a", {})),
        ('<|tool_call|>[{"name":"a","arguments":{}}, ', None, ("a", {})),
    ],
)
def test_a_cut_off_block_keeps_its_complete_calls(text, tools, first, policy):
    result = _check(text, tools=tools, policy=policy)
    assert _calls(result)[0] == first
    assert _kinds(result)[-1] == "truncated"


# -- 14: prose that quotes the format ---------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Wrap each call in <tool_call> and </tool_call> tags.",
        "Use <tool_call>NAME</tool_call> for calls.",
        'Write <invoke name="tool"></invoke> when needed.',
        'The format is <invoke name="x"> ... </invoke> as shown.',
        "Use <function=NAME></function> for calls.",
    ],
)
@pytest.mark.parametrize("tools", [None, TOOLS])
def test_a_zero_argument_call_quoted_inside_a_line_of_prose_is_prose(text, tools):
    result = _check(text, tools=tools)
    assert result.text == text
    assert result.calls == [] and result.diagnostics == []


@pytest.mark.parametrize(
    "text, tools",
    [
        ("<tool_call>get_time</tool_call>", None),
        ("<tool_call>get_time</tool_call>", TOOLS),
        ("Now: <tool_call>get_time</tool_call> done.", TOOLS),  # a tool the toolset offers
        ("Let me check. <tool_call>get_time</tool_call>\nDone.", None),  # the line ends with it
        ("Let me check. <tool_call>get_time</tool_call>", None),
        ('Say <tool_call>{"name": "x"}</tool_call> to call.', None),  # a JSON payload
        ('Checking <tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call> now.', None),  # it has arguments
        (
            "Now <|tool_calls_section_begin|><|tool_call_begin|>functions.x:0<|tool_call_argument_begin|>{}"
            "<|tool_call_end|><|tool_calls_section_end|> then.",
            None,
        ),  # a model's sentinel commits
    ],
)
def test_a_call_that_is_not_quoted_prose_stays_a_call(text, tools):
    result = _check(text, tools=tools)
    assert len(result.calls) == 1


# -- values written as text are read within max_depth too -------------------------------------------


@pytest.mark.parametrize(
    "template",
    [
        "<tool_call>\n<function=f>\n<parameter=a>\n{}\n</parameter>\n</function>\n</tool_call>",
        "<tool_call>f\n<arg_key>a</arg_key>\n<arg_value>{}</arg_value>\n</tool_call>",
        '<invoke name="f"><parameter name="a">{}</parameter></invoke>',
    ],
)
def test_a_text_value_nested_deeper_than_max_depth_stays_text(template):
    deep = "[" * 65 + "]" * 65
    result = _check(template.format(deep))
    assert result.calls[0].arguments == {"a": deep}
    within = _check(template.format("[" * 64 + "]" * 64), policy=td.Policy(max_depth=64))
    assert isinstance(within.calls[0].arguments["a"], list)


def test_call_indices_follow_the_text_at_every_chunking():
    """A call of an earlier payload, read before a later one is announced, takes the lower
    index: an OpenAI client that orders calls by index rebuilds them in source order."""
    import random

    text = (
        '<tool_calls>\n{"name": "get_weather", "arguments": {"city": "Seattle"}}\n{invalid json here}\n'
        '{"name": "get_time", "arguments": {"timezone": "America/Los_Angeles"}}\n</tool_calls>'
    )
    for seed in range(64):
        rng = random.Random(seed)
        cuts = sorted(rng.sample(range(1, len(text)), rng.randint(1, len(text) // 2)))
        events = run_stream(text, cuts)
        ended = sorted((e.index, e.call.name) for e in events if isinstance(e, td.CallEnd))
        assert [name for _, name in ended] == ["get_weather", "get_time"], seed


def test_a_block_over_the_cap_is_reported_to_the_cap_at_every_chunking():
    text = (
        '{"name": "get_weather", "parameters": {}}<function_calls>\n<invoke name="get_weather">\n'
        '<parameter name="count">"v000</parameter>\n<parameter name="flag">v000</parameter>\n</invoke>\n'
        '<invoke name="send_message">\n<parameter name="tags">"v000</parameter>\n'
        '<parameter name="opts">v000</parameter>\n</invoke>\n</function_calls>w000w001'
    )
    opts = {"policy": td.Policy(max_block_chars=256)}
    batch = td.parse(text, **opts)
    assert [(d.kind, d.span) for d in batch.diagnostics] == [("limit_exceeded", (41, 41 + 257))]
    for events in _every_cut(text, **opts):
        spans = [e.diagnostic.span for e in events if isinstance(e, td.DiagnosticEvent)]
        assert spans == [d.span for d in batch.diagnostics]


@pytest.mark.parametrize("follow", ["```xml\n", "``` xml\n", "~~~xml\n"])
def test_a_broken_fenced_block_leaves_the_next_fence_its_opener(follow):
    """The closers absorbed after a broken block's own closer stop at a fence line that goes
    on with an info string: that line opens the next fence, whose example stays text."""
    example = f"{follow}<tool_call>get_weather\n</tool_call>\n{follow[:3]}\nok"
    text = "```tool_call\nw005.\n```\n" + example
    got = _check(text)
    assert got.calls == []
    assert [(d.kind, d.span) for d in got.diagnostics] == [("malformed_block", (0, 22))]
    assert got.text == "\n" + example


@pytest.mark.parametrize("after, shown", [("```\nok", "\nok"), ("```  \nok", "  \nok"), ("```", "")])
def test_a_broken_fenced_block_still_takes_a_bare_fence_closer_after_it(after, shown):
    got = _check("```tool_call\nw005.\n```\n" + after)
    assert got.calls == [] and _kinds(got) == ["malformed_block"]
    assert got.text == shown


@pytest.mark.parametrize(
    "block, family",
    [
        ('<|tool_call>call:search{query:<|"|>tea<|"|>}<tool_call|>', "hermes"),
        ('<tool_call>\ncall:search{query:<|"|>tea<|"|>}\n</tool_call>', "hermes"),
        ("<start_function_call>call:search{query:<escape>tea<escape>}<end_function_call>", "functiongemma"),
    ],
)
def test_a_gemma_style_call_s_span_begins_at_its_call_prefix(block, family):
    """``call:NAME{…}`` is the call's own text, whichever body grammar reads it: its span
    holds the ``call:`` the block removes with it."""
    text = "Looking.\n" + block + "\nDone."
    got = _check(text, tools=TOOLS)
    assert [(c.family, c.name, c.arguments) for c in got.calls] == [(family, "search", {"query": "tea"})]
    assert text[got.calls[0].span[0] :].startswith("call:search{")
    assert got.text == "Looking.\n\nDone."


def test_a_broken_block_is_not_closed_by_the_next_fence_s_opener():
    """A block whose reading breaks at a fence line that goes on with an info string
    (```` ```bash ````) does not end there: that line opens an example fence, and the call
    written in the example stays text."""
    example = (
        "```bash\n<tool_call>send_message\n<arg_key>query</arg_key>\n<arg_value>v1</arg_value>\n</tool_call>\n```\n"
    )
    text = '```\n<|tool_call|>[{"name": "send_message", "arguments": {"city": "Oslo"}}]\n```\n' + example
    got = _check(text)
    assert _calls(got) == [("send_message", {"city": "Oslo"})]
    assert got.text.endswith(example)


# -- a broken payload is removed whole -----------------------------------------------------------

BROKEN = [
    # a comma missing before the arguments: the nested {} was read as the next payload and
    # the last } was left visible
    ('Before. <tool_call>{"name": "f" "arguments": {}}</tool_call> After.', [], "Before.  After."),
    # brackets inside strings after the damage are not the broken payload's
    ('<tool_call>{"name": "f" "arguments": {"q": "a}b{"}}</tool_call> ok', [], " ok"),
    # a closer inside a string before the damage is the payload's own text
    ('A <tool_call>{"name": "f", "arguments": {"a": "</tool_call>", b}}</tool_call> B', [], "A  B"),
    # one payload per line: the next line's payload still stands
    (
        '<tool_call>{"name": "f", "arguments": {"a": 1}}\n{"name": "g" "arguments": {"b": 2}}\n'
        '{"name": "h", "arguments": {}}</tool_call>x',
        [("f", {"a": 1}), ("h", {})],
        "x",
    ),
]


@pytest.mark.parametrize(("text", "calls", "shown"), BROKEN)
def test_a_broken_payload_is_removed_whole_with_one_report(text, calls, shown):
    """After a payload the scanner could not read, the block goes on at the next payload:
    where the broken one's brackets balance, or on a line of its own, never at a bracket
    nested inside it.  The broken payload is one malformed_block and no piece of it is
    left visible."""
    got = _check(text)
    assert _calls(got) == calls
    assert got.text == shown
    assert _kinds(got) == ["malformed_block"]


def test_a_broken_fenced_block_ends_at_the_next_call_fence():
    """A fence that holds calls (```` ```tool_call ````) is a marker, not an example fence
    to look past: a broken block before it ends there, so the call in it stands.  Recovery
    looked past every such fence to the end of the text (work that grew with the square of
    their number), and took the call with it."""
    first = '```tool_call\n{"name": "f" "arguments": {}}\n'
    text = first + '```tool_call\n{"name": "get_time", "arguments": {}}\n```'
    got = _check(text)
    assert _calls(got) == [("get_time", {})]
    assert got.text == first and _kinds(got) == ["unterminated_block"]
