"""The incremental engine behind ``ToolStream`` and ``parse()``: text in, events out, no
I/O, linear time.  docs/engine.md shows its rooms and how a delta flows through them."""

from .core import Engine

__all__ = ["Engine"]
