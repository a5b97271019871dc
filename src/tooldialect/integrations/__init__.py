"""tooldialect inside inference servers: vLLM's tool-call parser and SGLang's detector.

    vllm serve MODEL --enable-auto-tool-choice \\
        --tool-parser-plugin tooldialect.integrations.vllm --tool-call-parser tooldialect
    python -m sglang.launch_server --model-path MODEL --tool-call-parser tooldialect
        (after ``import tooldialect.integrations.sglang`` in the launching process)

Importing this package imports neither server; ``tooldialect.integrations.vllm`` and
``tooldialect.integrations.sglang`` import theirs and register themselves.  What both
share lives here: which families and policy a server reads with (:func:`setup_for`, from
``TOOLDIALECT_FAMILIES``, else the tokenizer's chat template, else ``TOOLDIALECT_MODEL`` or
the model id), the request's tools as
a :class:`~tooldialect.Toolset`, and which marker strings a tokenizer holds as special
tokens.  docs/servers.md has the whole contract.
"""

from __future__ import annotations

from ._setup import (
    FAMILIES_VARIABLE,
    MODEL_VARIABLE,
    Setup,
    describe,
    end_token_ids,
    fixed,
    lenient_toolset,
    marker_strings,
    model_id_of,
    setup,
    setup_for,
    special_markers,
    template_of,
    toolset_of,
)

__all__ = [
    "FAMILIES_VARIABLE",
    "MODEL_VARIABLE",
    "Setup",
    "describe",
    "end_token_ids",
    "fixed",
    "lenient_toolset",
    "marker_strings",
    "model_id_of",
    "setup",
    "setup_for",
    "special_markers",
    "template_of",
    "toolset_of",
]
