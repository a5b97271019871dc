"""The OpenAI adapter against the openai Python client itself: its stream accumulator
(``ChatCompletionStreamState``) and ``client.chat.completions.stream()`` over a mock HTTP
transport rebuild every corpus response — aborted calls included — equal to
``td.openai.message``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from support import all_cases, options

import tooldialect as td
from tooldialect.openai import ChatStream, Ids

openai = pytest.importorskip("openai", reason="the openai client is in the dev extra")
try:  # the client's HTTP package: httpx2 in newer releases, httpx before
    import httpx2 as httpx
except ImportError:
    httpx = pytest.importorskip("httpx")
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk

CASES = all_cases()
ENVELOPE = {"id": "chatcmpl-1", "model": "m", "created": 1}


def chunks(text: str, size: int | None, **opts: Any) -> tuple[list[dict[str, Any]], str]:
    """The chunk objects a server sends for ``text`` fed ``size`` characters at a time
    (all at once for None), the finishing chunk included."""
    shape = {k: opts.pop(k) for k in ("model_ids", "reasoning_field", "blank_content") if k in opts}
    chat = ChatStream(ids=Ids(seed=7), **opts, **shape)
    deltas: list[dict[str, Any]] = []
    step = size or max(len(text), 1)
    for i in range(0, len(text), step):
        deltas += chat.feed(text[i : i + step])
    deltas += chat.close()
    out = [td.openai.chunk(d, **ENVELOPE) for d in deltas]
    out.append(td.openai.chunk({}, **ENVELOPE, finish_reason=chat.finish_reason))
    assert chat.finish_reason is not None
    return out, chat.finish_reason


def final(completion: Any) -> dict[str, Any]:
    """The client's rebuilt message as the adapter's dict: aborted calls left out
    (docs/openai.md), the reasoning under whichever field it came."""
    msg = completion.choices[0].message
    out: dict[str, Any] = {"role": msg.role, "content": msg.content}
    extra = msg.model_extra or {}
    for key in ("reasoning_content", "reasoning"):
        if extra.get(key):
            out[key] = extra[key]
    calls = [
        {"id": tc.id, "type": tc.type, "function": {"name": tc.function.name, "arguments": tc.function.arguments}}
        for tc in msg.tool_calls or []
        if not (tc.model_extra or {}).get("aborted")
    ]
    if calls:
        out["tool_calls"] = calls
    return out


def aborted(completion: Any) -> list[str]:
    return [(tc.model_extra or {}).get("aborted") for tc in completion.choices[0].message.tool_calls or []]


def accumulate(sent: list[dict[str, Any]], reason: str) -> Any:
    """The client's accumulator over the chunks; a ``length`` response raises
    ``LengthFinishReasonError`` there, carrying the rebuilt completion."""
    state = ChatCompletionStreamState()
    for ch in sent:
        state.handle_chunk(ChatCompletionChunk.model_validate(ch))
    if reason == "length":
        with pytest.raises(openai.LengthFinishReasonError) as err:
            state.get_final_completion()
        return err.value.completion
    return state.get_final_completion()


def comparable(msg: dict[str, Any], model_ids: set[str], renumber: bool) -> dict[str, Any]:
    """Minted ids replaced by their order when an abort used one up (later ones differ)."""
    if not renumber:
        return msg
    out = json.loads(json.dumps(msg))
    for n, tc in enumerate(out.get("tool_calls", [])):
        if tc["id"] not in model_ids:
            tc["id"] = f"minted-{n}"
    return out


@pytest.mark.exhaustive(every=4)
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_clients_accumulator_rebuilds_the_message(case):
    opts = options(case)
    batch = td.parse(case.text, **opts)
    want = td.openai.message(batch, ids=Ids(seed=7))
    model_ids = {c.id for c in batch.calls if c.id}
    for size in (None, 4):
        sent, reason = chunks(case.text, size, **opts)
        assert reason == td.openai.finish_reason(batch)
        got = accumulate(sent, reason)
        marks = aborted(got)
        assert all(m is None or isinstance(m, str) for m in marks)
        assert comparable(final(got), model_ids, any(marks)) == comparable(want, model_ids, any(marks)), size


ABORTS = [
    # a call cut off by the end of the text (finish_reason "length")
    ('Let me check. <tool_call>{"name": "get_weather", "arguments": {"city": "Par', ["hermes"], "length"),
    # a call that went out and then broke (finish_reason "tool_calls": the next call completed)
    (
        "<tool_call>\n<function=bad_func_no_gt\n</function>\n</tool_call>\n"
        "<tool_call>\n<function=get_weather>\n<parameter=city>Dallas</parameter>\n</function>\n</tool_call>",
        ["qwen3_coder"],
        "tool_calls",
    ),
]


@pytest.mark.parametrize(("text", "families", "reason"), ABORTS)
def test_an_aborted_call_does_not_break_the_client(text, families, reason):
    sent, got_reason = chunks(text, 1, families=families)
    assert got_reason == reason
    completion = accumulate(sent, reason)
    marks = aborted(completion)
    assert marks[0] in ("truncated", "malformed_block")
    want = td.openai.message(td.parse(text, families=families), ids=Ids(seed=7))
    assert [c["function"] for c in final(completion).get("tool_calls", [])] == [
        c["function"] for c in want.get("tool_calls", [])
    ]


# -- the client's own streaming call, over HTTP ------------------------------------------------------


def client_for(sent: list[dict[str, Any]]) -> Any:
    """An openai client whose server answers every request with these chunks as SSE."""
    body = "".join(f"data: {json.dumps(ch)}\n\n" for ch in sent) + "data: [DONE]\n\n"

    def handler(request: Any) -> Any:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body.encode())

    return openai.OpenAI(
        api_key="test",
        base_url="http://server.test/v1",
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),
    )


def stream_call(sent: list[dict[str, Any]], reason: str) -> tuple[Any, list[str]]:
    client = client_for(sent)
    kinds: list[str] = []
    with client.chat.completions.stream(model="m", messages=[{"role": "user", "content": "hi"}]) as stream:
        for event in stream:
            kinds.append(event.type)
        if reason == "length":
            with pytest.raises(openai.LengthFinishReasonError) as err:
                stream.get_final_completion()
            return err.value.completion, kinds
        return stream.get_final_completion(), kinds


def one_case_per_family() -> list[Any]:
    seen: dict[str, Any] = {}
    for case in CASES:
        if case.family not in seen and td.parse(case.text, **options(case)).calls:
            seen[case.family] = case
    return list(seen.values())


@pytest.mark.parametrize("case", one_case_per_family(), ids=lambda c: c.id)
def test_client_stream_over_http_rebuilds_the_message(case):
    opts = options(case)
    batch = td.parse(case.text, **opts)
    sent, reason = chunks(case.text, 4, **opts)
    completion, kinds = stream_call(sent, reason)
    assert final(completion) == td.openai.message(batch, ids=Ids(seed=7))
    assert "tool_calls.function.arguments.done" in kinds


@pytest.mark.parametrize(("text", "families", "reason"), ABORTS)
def test_client_stream_over_http_survives_an_abort(text, families, reason):
    sent, _ = chunks(text, 3, families=families)
    completion, _ = stream_call(sent, reason)
    assert aborted(completion)[0] in ("truncated", "malformed_block")


# -- the shapes servers need ---------------------------------------------------------------------------

HERMES = '\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
THINK = "<think>Paris?</think>" + HERMES


@pytest.mark.parametrize("size", [None, 1, 4])
def test_blank_content_next_to_calls_is_null_when_asked(size):
    batch = td.parse(HERMES, families=["hermes"])
    assert batch.text.strip() == "" and batch.text
    assert td.openai.message(batch)["content"] == batch.text  # kept by default
    msg = td.openai.message(batch, blank_content="null")
    assert msg["content"] is None and msg["tool_calls"]
    sent, reason = chunks(HERMES, size, families=["hermes"], blank_content="null")
    got = final(accumulate(sent, reason))
    assert got["content"] is None and got == td.openai.message(batch, ids=Ids(seed=7), blank_content="null")
    # white space with no call, and white space before real text, are content as written
    for text in ("\n\n", "\n\nHello.\n"):
        plain = td.parse(text, families=["hermes"])
        assert td.openai.message(plain, blank_content="null")["content"] == text
        sent, reason = chunks(text, size, families=["hermes"], blank_content="null")
        assert final(accumulate(sent, reason))["content"] == text


@pytest.mark.parametrize("field", ["reasoning", "reasoning_content"])
def test_the_reasoning_field_is_named_as_asked(field):
    batch = td.parse(THINK, families=["hermes"])
    msg = td.openai.message(batch, reasoning_field=field)
    assert msg[field] == "Paris?" and {"reasoning", "reasoning_content"} - {field} - set(msg) == {
        "reasoning",
        "reasoning_content",
    } - {field}
    sent, reason = chunks(THINK, 2, families=["hermes"], reasoning_field=field)
    assert all(set(ch["choices"][0]["delta"]) & {"reasoning", "reasoning_content"} <= {field} for ch in sent)
    assert final(accumulate(sent, reason)) == td.openai.message(batch, ids=Ids(seed=7), reasoning_field=field)
    with pytest.raises(td.PolicyError, match="reasoning_field"):
        td.openai.message(batch, reasoning_field="thoughts")
    with pytest.raises(td.PolicyError, match="blank_content"):
        ChatStream(blank_content="drop")


MISTRAL_V11 = '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris", "days": 3}'


def test_model_ids_false_streams_arguments_as_they_arrive():
    # by default a Mistral call waits for its end: the model may still write its id
    chat = ChatStream(families=["mistral"], ids=Ids(seed=1))
    early = [d for i in range(len(MISTRAL_V11)) for d in chat.feed(MISTRAL_V11[i])]
    assert not any("tool_calls" in d for d in early)
    chat = ChatStream(families=["mistral"], ids=Ids(seed=1), model_ids=False)
    early = [d for i in range(len(MISTRAL_V11)) for d in chat.feed(MISTRAL_V11[i])]
    args = "".join(tc["function"].get("arguments", "") for d in early for tc in d.get("tool_calls", []))
    assert args and '{"city": "Paris"'.startswith(args[:16])
    # and a model id is then never used, streaming or not
    with_id = '[TOOL_CALLS]get_weather[CALL_ID]abc123XYZ[ARGS]{"city": "Paris"}'
    batch = td.parse(with_id, families=["mistral"])
    assert batch.calls[0].id == "abc123XYZ"
    msg = td.openai.message(batch, ids=Ids(seed=1), model_ids=False)
    assert msg["tool_calls"][0]["id"] != "abc123XYZ"
    sent, reason = chunks(with_id, 3, families=["mistral"], model_ids=False)
    assert final(accumulate(sent, reason)) == td.openai.message(batch, ids=Ids(seed=7), model_ids=False)


def test_several_choices():
    results = [td.parse(HERMES, families=["hermes"]), td.parse("No tool needed.", families=["hermes"])]
    comp = td.openai.completion(results, **ENVELOPE, ids=Ids(seed=3))
    assert [c["index"] for c in comp["choices"]] == [0, 1]
    assert [c["finish_reason"] for c in comp["choices"]] == ["tool_calls", "stop"]
    parsed = openai.types.chat.ChatCompletion.model_validate(comp)
    assert parsed.choices[1].message.content == "No tool needed."
    # streamed: one ChatStream per choice, chunks numbered by choice, interleaved
    state = ChatCompletionStreamState()
    streams = [ChatStream(families=["hermes"], ids=Ids(seed=3)) for _ in results]
    texts = [HERMES, "No tool needed."]
    for i in range(0, max(map(len, texts)), 5):
        for n, (chat, text) in enumerate(zip(streams, texts)):
            for d in chat.feed(text[i : i + 5]):
                state.handle_chunk(ChatCompletionChunk.model_validate(td.openai.chunk(d, **ENVELOPE, index=n)))
    for n, chat in enumerate(streams):
        for d in chat.close():
            state.handle_chunk(ChatCompletionChunk.model_validate(td.openai.chunk(d, **ENVELOPE, index=n)))
        state.handle_chunk(
            ChatCompletionChunk.model_validate(
                td.openai.chunk({}, **ENVELOPE, index=n, finish_reason=chat.finish_reason)
            )
        )
    got = state.get_final_completion()
    assert [c.index for c in got.choices] == [0, 1]
    assert got.choices[0].message.tool_calls[0].function.name == "get_weather"
    assert got.choices[1].message.content == "No tool needed."
    with pytest.raises(td.PolicyError, match="completion"):
        td.openai.completion([], **ENVELOPE)
