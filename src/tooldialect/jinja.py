"""Chat templates rendered as Hugging Face transformers renders them, inside jinja2's sandbox
and within fixed bounds.

A model's chat template is code its publisher wrote, so it is never run as plain Jinja:

* **Sandboxed.** jinja2's sandbox refuses private attributes, internals and unsafe
  callables; by default lists, dicts and sets cannot be changed either (the immutable
  sandbox).  A template that needs ``list.append`` is rendered again with ``mutable=True``
  (jinja2's ordinary sandbox), and the caller says so.
* **Bounded.** Every loop iteration, call, filter, attribute or item lookup and arithmetic
  operator spends one operation of a budget (:data:`LIMITS`); a wall-clock deadline is
  checked at each.  No value a call, filter, operator or ``~`` makes may be longer than a
  bound (characters of a string, items and characters of a container), and a call's
  arguments may not ask for more (an integer argument over 4096, a format width of five
  digits, a product of sizes and factors past the bound are refused before the call runs);
  the output is capped too.  A runaway loop, a string doubled in a loop, ``'x' * 10**9``
  or ``9 ** 9 ** 9`` each stops with :class:`RenderError` in a bounded number of steps,
  long before the deadline.
* **What transformers offers.** ``raise_exception``, ``strftime_now`` (one fixed moment per
  renderer), ``tojson`` with ``ensure_ascii``, ``indent``, ``separators`` and ``sort_keys``
  (``ensure_ascii`` off by default), ``break``/``continue``, the ``{% generation %}`` block,
  ``trim_blocks`` and ``lstrip_blocks``.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import wraps
from typing import Any

from jinja2 import TemplateError, nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import SandboxedEnvironment, modifies_known_mutable, safe_range
from jinja2.visitor import NodeTransformer

__all__ = ["LIMITS", "Limits", "RenderError", "Renderer"]


@dataclass(frozen=True)
class Limits:
    """The bounds of one :class:`Renderer` (docs/families.md, "Reading a chat template")."""

    operations: int = 50_000  # per render: loop iterations, calls, filters, lookups, operators
    seconds: float = 1.0  # for every render of one renderer together
    value: int = 65_536  # characters (and items) of any value the template makes
    output: int = 262_144  # characters of one render's output
    source: int = 262_144  # characters of the template itself
    integer: int = 4096  # the largest integer argument of a call or filter
    growth: int = 4 << 20  # sizes times factors a call may be asked for


LIMITS = Limits()


class RenderError(Exception):
    """A template that does not compile, raises, or goes past a bound; the message says which.
    ``bound`` is True for a bound (every later render of the template would go past it too)."""

    def __init__(self, message: str, *, bound: bool = False) -> None:
        super().__init__(message)
        self.bound = bound


class _Exhausted(Exception):
    """A bound was reached inside a render (turned into :class:`RenderError`)."""


_FORMAT_WIDTH = re.compile(r"\d{5}|%[^a-zA-Z%]{0,8}\*")
_TICK = "td_tick"  # the global the guard calls in every loop iteration
_SIZED = "td_sized"  # the filter the guard puts around every ``~``


def _size(value: Any, limit: int) -> int:
    """Characters of a string; items and characters of containers, walked until past ``limit``."""
    if isinstance(value, str):
        return len(value)
    if not isinstance(value, (list, tuple, dict, set, frozenset)):
        return 1
    total = 0
    stack: list[Any] = [value]
    while stack and total <= limit:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, (list, tuple, set, frozenset)):
            total += len(item)
            stack.extend(item)
        elif isinstance(item, dict):
            total += len(item)
            stack.extend(item.keys())
            stack.extend(item.values())
    return total


class _Guard(NodeTransformer):
    """Rewrites a parsed template so that loops and ``~`` pass through the budget: each loop
    iteration (and each test of a loop's ``if``) calls :data:`_TICK`, each ``~`` goes through
    the :data:`_SIZED` filter."""

    def _tick(self, lineno: int) -> nodes.Call:
        return nodes.Call(nodes.Name(_TICK, "load"), [], [], None, None, lineno=lineno)

    def visit_For(self, node: nodes.For) -> nodes.Node:
        self.generic_visit(node)
        node.body.insert(0, nodes.ExprStmt(self._tick(node.lineno), lineno=node.lineno))
        if node.test is not None:
            node.test = nodes.And(self._tick(node.lineno), node.test, lineno=node.lineno)
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        return nodes.Filter(node, _SIZED, [], [], None, None, lineno=node.lineno)


class _Generation(Extension):
    """transformers' ``{% generation %}…{% endgeneration %}`` (it marks the assistant's
    tokens for training masks): the body, rendered as it stands."""

    tags = {"generation"}  # noqa: RUF012 - jinja2 declares it on the instance

    def parse(self, parser: Any) -> list[nodes.Node]:
        next(parser.stream)
        body: list[nodes.Node] = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return body


class _Environment(SandboxedEnvironment):
    """jinja2's sandbox with the budget of :class:`Limits` on every hook it offers."""

    intercepted_binops = frozenset({"+", "*", "**", "%"})

    def __init__(self, limits: Limits, mutable: bool, now: datetime) -> None:
        super().__init__(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols, _Generation])
        self.limits = limits
        self.mutable = mutable
        self.left = limits.operations
        self.deadline = time.monotonic() + limits.seconds
        self.globals.pop("lipsum", None)  # lorem ipsum of any length: no template needs it
        self.globals.update(raise_exception=_raise, strftime_now=now.strftime, **{_TICK: _true})
        self.filters = {name: self._bounded(name, f) for name, f in self.filters.items()}
        self.filters["tojson"] = self._bounded("tojson", _tojson)
        self.filters[_SIZED] = self._bounded(_SIZED, str)

    # the budget ----------------------------------------------------------------------------

    def spend(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise _Exhausted(f"the template ran past its budget of {self.limits.operations} operations")
        if time.monotonic() > self.deadline:
            raise _Exhausted(f"the template ran past its deadline of {self.limits.seconds:g} s")

    def _check(self, value: Any, what: str) -> Any:
        if _size(value, self.limits.value) > self.limits.value:
            raise _Exhausted(f"{what} made a value over {self.limits.value} characters or items")
        return value

    def _before(self, what: str, receiver: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
        """Refuse a call whose arguments ask for a huge result before it runs: an integer past
        the bound, or a product of its two largest arguments (sizes of strings and containers,
        integers as they are) past ``growth`` (``s.replace('', s)``, ``sep.join(items)``,
        ``s.center(n)`` and the like are at most that)."""
        limits = self.limits
        sizes = [1, 1]
        for value in (receiver, *args, *kwargs.values()):
            if isinstance(value, int) and not isinstance(value, bool):
                if abs(value) > limits.integer:
                    raise _Exhausted(f"{what} was given the integer {value} (at most {limits.integer})")
                sizes.append(abs(value))
            elif value is not None:
                sizes.append(_size(value, limits.value))
        sizes.sort(reverse=True)
        if sizes[0] * sizes[1] > limits.growth:
            raise _Exhausted(f"{what} was asked for a result of up to {sizes[0] * sizes[1]} characters")
        if what in ("format", "format_map") and isinstance(receiver, str) and _FORMAT_WIDTH.search(receiver):
            raise _Exhausted(f"{what} was given a format with a width of five digits or more")

    def _bounded(self, name: str, func: Callable[..., Any]) -> Callable[..., Any]:
        env = self

        @wraps(func)
        def filter_(*args: Any, **kwargs: Any) -> Any:
            env.spend()
            what = f"the {name} filter"
            if name == "format" and args and isinstance(args[0], str):  # printf-style: its widths
                env._before("format", args[0], args[1:], kwargs)
            else:
                env._before(what, None, args, kwargs)
            return env._check(func(*args, **kwargs), what)

        return filter_

    # the sandbox's hooks ---------------------------------------------------------------------

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        if not super().is_safe_attribute(obj, attr, value):
            return False
        return self.mutable or not modifies_known_mutable(obj, attr)

    def getattr(self, obj: Any, attribute: str) -> Any:
        self.spend()
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        self.spend()
        return super().getitem(obj, argument)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        __self.spend()
        inner = getattr(__obj, "__wrapped__", __obj)  # str.format as the sandbox wraps it
        name = getattr(inner, "__name__", "a call")
        if inner is not safe_range:  # its length is bounded by the sandbox, its loop by the budget
            __self._before(name, getattr(inner, "__self__", None), args, kwargs)
        return __self._check(super().call(__context, __obj, *args, **kwargs), name)

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        self.spend()
        limits = self.limits
        if operator == "**" and isinstance(left, int) and isinstance(right, int):
            if right > 0 and max(abs(left), 2).bit_length() * right > limits.integer:
                raise _Exhausted(f"{left} ** {right} is past {limits.integer} bits")
        elif operator == "*":
            for a, b in ((left, right), (right, left)):
                if isinstance(b, int) and not isinstance(b, bool):
                    if isinstance(a, int) and not isinstance(a, bool):
                        if abs(a).bit_length() + abs(b).bit_length() > limits.integer:
                            raise _Exhausted(f"{a} * {b} is past {limits.integer} bits")
                    elif _size(a, limits.value) * max(b, 0) > limits.value:
                        raise _Exhausted(f"a value repeated {b} times is over {limits.value} characters or items")
        elif operator == "%" and isinstance(left, str):
            self._before("format", left, right if isinstance(right, tuple) else (right,), {})
        return self._check(super().call_binop(context, operator, left, right), f"the {operator} operator")

    def _generate(
        self, source: nodes.Template, name: str | None, filename: str | None, defer_init: bool = False
    ) -> str:
        guarded: nodes.Template = _Guard().visit(source)
        return super()._generate(guarded, name, filename, defer_init)


def _raise(message: Any) -> None:
    raise TemplateError(str(message))


def _true() -> bool:
    return True


def _tojson(
    value: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None, sort_keys: bool = False
) -> str:
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


class Renderer:
    """One chat template, compiled once per sandbox and rendered under :class:`Limits`.

    ``mutable`` is False until a render needed it: the immutable sandbox refused a change
    to a list, dict or set, and the render was done again in the mutable one.  The deadline
    counts the time of every render of this renderer together (``seconds``); the operation
    budget is per render (``operations`` counts them all)."""

    def __init__(self, source: str, limits: Limits | None = None) -> None:
        limits = limits if limits is not None else LIMITS
        if not isinstance(source, str):
            raise RenderError(f"a chat template is text, got {type(source).__name__}")
        if len(source) > limits.source:
            raise RenderError(f"the template is {len(source)} characters long (at most {limits.source})", bound=True)
        self.source = source
        self.limits = limits
        self.mutable = False
        self.seconds = 0.0  # spent rendering so far: the deadline bounds this, not reading
        self.operations = 0  # spent by the renders so far
        self._now = datetime.now()
        self._compiled: dict[bool, Any] = {}

    def _template(self, mutable: bool) -> Any:
        got = self._compiled.get(mutable)
        if got is None:
            env = _Environment(self.limits, mutable, self._now)
            try:
                got = env.from_string(self.source)
            except Exception as exc:  # any failure to compile is the template's
                raise RenderError(f"the template does not compile: {_why(exc)}") from exc
            self._compiled[mutable] = got
        return got

    def render(self, **variables: Any) -> str:
        """The template's output for these variables; :class:`RenderError` when it raises or
        goes past a bound (a refused change to a list in the immutable sandbox is tried
        again, once, in the mutable one)."""
        try:
            return self._render(self.mutable, variables)
        except _Mutation:
            out = self._render(True, variables)
            self.mutable = True  # only once the mutable sandbox rendered it
            return out

    def _render(self, mutable: bool, variables: dict[str, Any]) -> str:
        template = self._template(mutable)
        env: _Environment = template.environment
        env.left = self.limits.operations
        started = time.monotonic()
        env.deadline = started + self.limits.seconds - self.seconds
        out: list[str] = []
        length = 0
        try:
            for chunk in template.generate(**variables):
                length += len(chunk)
                if length > self.limits.output:
                    raise _Exhausted(f"the output ran past {self.limits.output} characters")
                out.append(chunk)
        except _Exhausted as exc:
            raise RenderError(str(exc), bound=True) from None
        except RecursionError:
            raise RenderError("the template recursed too deeply", bound=True) from None
        except Exception as exc:  # whatever the template raised: its own message
            if not mutable and _mutates(exc):
                raise _Mutation from exc
            raise RenderError(_why(exc)) from exc
        finally:
            self.seconds += time.monotonic() - started
            self.operations += self.limits.operations - env.left
        return "".join(out)


class _Mutation(Exception):
    """The immutable sandbox refused a change to a list, dict or set."""


def _mutates(exc: BaseException) -> bool:
    from jinja2.exceptions import SecurityError

    return isinstance(exc, SecurityError) and "unsafe" in str(exc)


def _why(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text if len(text) <= 300 else text[:300] + "…"
