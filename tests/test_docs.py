"""Docs tables are generated from the code; the docs name every family and link what exists."""

from __future__ import annotations

import re

import pytest
from support import ROOT

import tooldialect as td
from tooldialect._docs import SECTIONS, render, sync


def test_generated_sections_are_current():
    stale = sync(ROOT, write=False)
    assert not stale, f"run `python -m tooldialect._docs --write`: stale {[str(p) for p in stale]}"


def test_every_generated_section_is_used():
    text = "".join(p.read_text(encoding="utf-8") for p in [ROOT / "README.md", *ROOT.glob("docs/*.md")])
    for name in SECTIONS:
        assert f"<!-- {name}:begin -->" in text, name


def test_render_replaces_only_known_sections():
    doc = (
        "a\n<!-- families:begin -->\nSTALE-ROW\n<!-- families:end -->\n<!-- other:begin -->\nkeep\n<!-- other:end -->\n"
    )
    out = render(doc)
    assert "STALE-ROW" not in out and "keep" in out and "`hermes`" in out


def test_every_family_has_a_docs_anchor_and_a_corpus():
    families_md = (ROOT / "docs" / "families.md").read_text(encoding="utf-8")
    for name in td.families.names():
        assert f"\n## {name}\n" in families_md
        assert (ROOT / "tests" / "corpus" / f"{name}.txt").exists()


def test_readme_links_resolve_and_commands_are_documented():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)#]+)\)", readme):
        assert (ROOT / target).exists(), target
    assert "make demo" in readme and "make test" in readme and "make check" in readme
    # the README's two commands are demo and test; the gate CI runs is check
    two = readme[readme.index("## Two commands") :].split("\n## ")[0]
    assert "make test" in two.split("```")[1] and "make check" in two.split("```")[2]
    assert (ROOT / ".ci" / "run").read_text().strip().endswith("make check")


def test_readme_reads_on_an_index_page():
    """A package index shows the README without the repository around it, so a relative link
    there is broken: the README's relative links are all under "Documentation", which says the
    documents ship in the sdist, and each one is in the sdist (docs/decisions.md 192)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    head, _, documentation = readme.partition("\n## Documentation\n")
    assert documentation, "the README has a Documentation section"
    documentation = documentation.split("\n## ")[0]
    relative = [t for t in re.findall(r"\]\(([^)]+)\)", head) if not re.match(r"[a-z]+:|#", t)]
    assert not relative, f"relative links above the Documentation section: {relative}"
    assert "source distribution" in documentation and "sdist" in documentation
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    shipped = set(pyproject["tool"]["hatch"]["build"]["targets"]["sdist"]["include"])
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", documentation)
    assert links
    for target in links:
        assert target.split("/")[0] in shipped, f"{target} is not in the sdist"


def test_diagnostic_kinds_documented():
    text = (ROOT / "docs" / "diagnostics.md").read_text(encoding="utf-8")
    for kind in td.DIAGNOSTIC_KINDS:
        assert f"`{kind}`" in text


def test_gpt_oss_under_vllm_says_what_to_run_and_what_tooldialect_still_reads():
    """vLLM serves gpt-oss only through its own Harmony parsers (tests/integrations/test_vllm.py
    checks the error against vLLM itself); docs/servers.md says so, and the README's family
    table, which lists harmony for gpt-oss, points there."""
    servers = (ROOT / "docs" / "servers.md").read_text(encoding="utf-8")
    section = servers[servers.index("\n## gpt-oss under vLLM\n") :].split("\n## ")[1]
    assert "Harmony requires GptOssToolParser" in section and "Harmony requires GptOssReasoningParser" in section
    assert "--tool-call-parser openai --reasoning-parser openai_gptoss" in section
    for still in ("td.detect.scan", "tooldialect audit", 'families=["harmony"]', "td.openai.ChatStream"):
        assert still in section, still
    assert {"openai/gpt-oss-*", "gpt-oss*"} <= set(td.families.get("harmony").models)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    after_table = readme[readme.index("<!-- families:end -->") :].split("\n## ")[0]
    assert "gpt-oss" in after_table and "docs/servers.md" in after_table and "gpt-oss under vLLM" in after_table
    assert callable(td.detect.scan)
