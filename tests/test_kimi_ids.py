"""Kimi K2's call ids (``functions.NAME:IDX``) are read with string methods: the name each
holds is what the id's regular expression reads."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support import budget

from tooldialect.families.kimi_k2 import _ID, _name_in

#: what ids are made of, and what would make one not an id (white space, a second colon,
#: digits of another script, a prefix written twice or cut short)
PIECES = ["functions.", "functions", ".", ":", "get_weather", "x", "0", "12", "٣", " ", "\u00a0", "\t", "ß", "+", "-"]


def regex_name(call_id: str) -> str | None:
    m = _ID.fullmatch(call_id)
    return m.group(1) if m else None


@pytest.mark.parametrize(
    ("call_id", "name"),
    [
        ("functions.get_weather:0", "get_weather"),
        ("get_weather:12", "get_weather"),
        ("functions.:1", "functions."),  # (the prefix alone is the name)
        ("functions.functions.x:3", "functions.x"),
        ("functions.x:٣", "x"),  # (a digit of another script is a digit)
        ("functions.x:1:2", None),
        ("functions.get weather:0", None),
        ("functions.x:", None),
        (":1", None),
        ("0", None),
    ],
)
def test_an_id_names_its_tool(call_id: str, name: str | None) -> None:
    assert _name_in(call_id) == regex_name(call_id) == name


@budget(300)
@given(st.lists(st.sampled_from(PIECES), max_size=8).map("".join))
def test_the_name_read_is_the_regex_s(call_id: str) -> None:
    assert _name_in(call_id) == regex_name(call_id)


def test_the_ids_kept_stay_bounded() -> None:
    """Ids read are kept (the same ids come back reply after reply), never more than
    ``_MAX_NAMES`` of them, and a kept id gives the name it gave when read."""
    from tooldialect.families import kimi_k2

    for i in range(kimi_k2._MAX_NAMES + 10):
        assert _name_in(f"functions.tool_{i}:{i % 7}") == f"tool_{i}"
        assert len(kimi_k2._NAMES) <= kimi_k2._MAX_NAMES
    assert "functions.tool_3:3" not in kimi_k2._NAMES  # (forgotten all at once when full)
    assert _name_in("functions.tool_3:3") == "tool_3"
    assert kimi_k2._NAMES["functions.tool_3:3"] == "tool_3"
    # a text that is no id is kept too, and read again as no id
    assert _name_in("functions.get weather:0") is None
    assert kimi_k2._NAMES["functions.get weather:0"] == ""
    assert _name_in("functions.get weather:0") is None
