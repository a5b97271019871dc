"""Building the models the engine makes per call and per delta in fewer steps than
pydantic's ``model_construct`` (in the compiled build, compiled code)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar, cast

from pydantic import BaseModel

__all__ = ["constructor"]

_M = TypeVar("_M", bound=BaseModel)
_new: Final = object.__new__
# The three slots every model instance has, set through their own descriptors: a call to
# ``object.__setattr__`` finds the descriptor by name first (and packs its arguments)
_set_fields: Final = cast(Any, BaseModel.__dict__["__pydantic_fields_set__"]).__set__
_set_extra: Final = cast(Any, BaseModel.__dict__["__pydantic_extra__"]).__set__
_set_private: Final = cast(Any, BaseModel.__dict__["__pydantic_private__"]).__set__


def constructor(cls: type[_M], *names: str) -> Callable[..., _M]:
    """``cls.model_construct(**dict(zip(names, values)))`` as a positional function, for the
    models the engine builds per call and per delta: the same instance (``__dict__`` in
    field order, every field in the fields set, no extra, no private) without
    ``model_construct``'s generic walk over aliases and defaults, which is most of its
    cost.  ``names`` are all the model's fields in declaration order; a model this would
    not build exactly (an alias, private attributes, a post-init hook, extra="allow") is
    found here, once, and gets ``model_construct`` itself."""
    plain = (
        names == tuple(cls.model_fields)
        and all(f.alias is None and f.validation_alias is None for f in cls.model_fields.values())
        and not cls.__private_attributes__
        and not cls.__pydantic_post_init__
        and not cls.__pydantic_root_model__
        and cls.model_config.get("extra") != "allow"
    )
    if not plain:  # a model that grew an alias or a hook
        return lambda *values: cls.model_construct(**dict(zip(names, values)))
    return _spelled_out(cls, names)


def _spelled_out(cls: type[_M], names: tuple[str, ...]) -> Callable[..., _M]:
    """``constructor``'s function for a plain model: one, two and three fields (the
    per-delta and per-call events), four (the parse result) and six (a tool call) spelled
    out, the instance's own (empty) ``__dict__`` filled in field order, the fields set a
    copy."""
    fields = set(names)
    if len(names) == 1:
        (a,) = names

        def build1(x: Any) -> _M:
            m = _new(cls)
            m.__dict__[a] = x
            _set_fields(m, set(fields))
            _set_extra(m, None)
            _set_private(m, None)
            return m

        return build1
    if len(names) == 2:  # ArgumentsDelta, one per delta of a streamed call
        b, c = names

        def build2(x: Any, y: Any) -> _M:
            m = _new(cls)
            d = m.__dict__
            d[b] = x
            d[c] = y
            _set_fields(m, set(fields))
            _set_extra(m, None)
            _set_private(m, None)
            return m

        return build2
    if len(names) == 3:  # CallStart
        e, f, g = names

        def build3(x: Any, y: Any, z: Any) -> _M:
            m = _new(cls)
            d = m.__dict__
            d[e] = x
            d[f] = y
            d[g] = z
            _set_fields(m, set(fields))
            _set_extra(m, None)
            _set_private(m, None)
            return m

        return build3
    if len(names) in (4, 6):
        return _spelled_out_wide(cls, names, fields)

    def build(*values: Any) -> _M:
        m = _new(cls)
        m.__dict__.update(zip(names, values))
        _set_fields(m, set(fields))
        _set_extra(m, None)
        _set_private(m, None)
        return m

    return build


def _spelled_out_wide(cls: type[_M], names: tuple[str, ...], fields: set[str]) -> Callable[..., _M]:
    """``_spelled_out`` for four fields (the parse result) and six (a tool call)."""
    if len(names) == 4:  # ParseResult, one per parse
        h, i, j, k = names

        def build4(w: Any, x: Any, y: Any, z: Any) -> _M:
            m = _new(cls)
            d = m.__dict__
            d[h] = w
            d[i] = x
            d[j] = y
            d[k] = z
            _set_fields(m, set(fields))
            _set_extra(m, None)
            _set_private(m, None)
            return m

        return build4
    # ToolCall, one per call
    n1, n2, n3, n4, n5, n6 = names

    def build6(u: Any, v: Any, w: Any, x: Any, y: Any, z: Any) -> _M:
        m = _new(cls)
        d = m.__dict__
        d[n1] = u
        d[n2] = v
        d[n3] = w
        d[n4] = x
        d[n5] = y
        d[n6] = z
        _set_fields(m, set(fields))
        _set_extra(m, None)
        _set_private(m, None)
        return m

    return build6
