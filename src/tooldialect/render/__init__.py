"""Writing for the model: tool catalogues and calls in the registry-gated body syntaxes.

    td.render.signature(tool, style="python")      # one tool: a stub the model reads
    td.render.catalogue(tools, style="typescript")  # every tool of a toolset
    td.render.call(tool, {"city": "Paris"}, style="pformat")  # a call, as the model writes it

Styles: ``"pformat"``, ``"python"``, ``"typescript"``.  Each is the inverse of the parser
of its body syntax (``pformat``, ``codecall``): render → parse gives back the arguments.
"""

from __future__ import annotations

from .calls import render_call as call
from .signatures import STYLES, catalogue, parameter_order, signature

__all__ = ["STYLES", "call", "catalogue", "parameter_order", "signature"]
