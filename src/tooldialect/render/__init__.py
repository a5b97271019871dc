"""Writing for the model: tool catalogues and calls in the registry-gated body syntaxes.

    td.render.signature(tool, style="python")      # one tool: a stub the model reads
    td.render.catalogue(tools, style="typescript")  # every tool of a toolset
    td.render.call(tool, {"city": "Paris"}, style="pformat")  # a call, as the model writes it

Styles: ``"pformat"``, ``"python"``, ``"typescript"``.  Each is the inverse of the parser
of its body syntax (``pformat``, ``codecall``): render → parse gives back the arguments.

    td.render.instructions(tools, style="xml")      # protocol block, catalogue, tool choice
    td.render.json_catalogue(tools)                 # full JSON schemas, sorted keys
    td.render.envelope(name=…, tool_call_id=…, status="ok", body=…)   # one <tool_result>
    td.render.results(results) / td.render.read_results(turn)          # a results turn, and back
"""

from __future__ import annotations

from . import family  # noqa: F401  (installs the writer behind td.families.get(f).render_call)
from .calls import render_call as call
from .protocol import instructions, json_catalogue
from .signatures import STYLES, catalogue, parameter_order, signature
from .tool_results import envelope, read_results, results

__all__ = [
    "STYLES",
    "call",
    "catalogue",
    "envelope",
    "instructions",
    "json_catalogue",
    "parameter_order",
    "read_results",
    "results",
    "signature",
]
