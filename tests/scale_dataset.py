"""A generated dataset for the table functions: every family's corpus replies, prose-only
rows, replies cut short and broken, rows with no text or a broken tools cell, and several
tools columns — the same rows every time (no randomness)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa

from tooldialect.corpus import read_corpus

CORPUS = Path(__file__).resolve().parent / "corpus"
MODELS = [
    None,
    "Qwen/Qwen3-8B",
    "meta-llama/Llama-3.1-8B-Instruct",
    "mistralai/Mistral-7B-Instruct-v0.3",
    "unknown/model",
]
MAX_TEXT = 300


def replies() -> list[tuple[str, str, str | None]]:
    """(family, text, tools JSON text or None) of every short corpus case."""
    toolsets = json.loads((CORPUS / "_tools.json").read_text(encoding="utf-8"))
    out = []
    for path in sorted(CORPUS.glob("*.txt")):
        for case in read_corpus(path):
            if len(case.text) > MAX_TEXT:
                continue
            name = case.attrs.get("tools")
            tools = json.dumps(toolsets[name], sort_keys=True) if name in toolsets else None
            out.append((path.stem, case.text, tools))
    return out


def build(rows: int = 50_000) -> Any:
    """``rows`` rows: ``id``, ``completion``, ``model``, ``tools`` (JSON text)."""
    cases = replies()
    ids, texts, models, tools = [], [], [], []
    for i in range(rows):
        family, text, cell = cases[i % len(cases)]
        kind = (i // len(cases)) % 8
        if kind == 1:
            text = f"Plain answer {i}: nothing to call here, only prose about {family}."
            cell = None
        elif kind == 2:
            text = text[: max(1, len(text) // 2)]  # cut off mid-reply
        elif kind == 3:
            text = text.replace("}", "", 1).replace(">", "", 1)  # a broken call
        elif kind == 4 and i % 3 == 0:
            cell = None  # the same reply without its toolset
        if i % 997 == 0:
            text = None
        if i % 1009 == 0:
            cell = "[not a tool list"
        ids.append(i)
        texts.append(text)
        models.append(MODELS[i % len(MODELS)])
        tools.append(cell)
    return pa.table(
        {"id": pa.array(ids, pa.int64()), "completion": texts, "model": pa.array(models, pa.string()), "tools": tools}
    )
