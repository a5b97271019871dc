"""Import shims for the peers' parser modules: vLLM and SGLang are installed with
``--no-deps`` (no torch, no CUDA), so what their packages import at load time and the
parsers never call is replaced by stub modules here, before anything imports them.
The benchmarks and tests/integrations both use them, with :class:`FakeTokenizer`."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from typing import Any


class _Stub(type):
    """A stub type: any attribute, call, subscript or base-class use works and yields stubs."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _stub_type(f"{cls.__name__}.{name}")

    def __getitem__(cls, item: Any) -> Any:
        return cls

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]  # used as a decorator
        return super().__call__()

    def __or__(cls, other: Any) -> Any:
        return cls

    __ror__ = __or__

    def __iter__(cls):
        return iter(())

    def __bool__(cls) -> bool:
        return False

    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.any_schema()


def _stub_type(name: str) -> type:
    def method(self: Any, *a: Any, **k: Any) -> Any:
        return _stub_type(name + "()")

    return _Stub(name.rsplit(".", 1)[-1], (), {"__getattr__": method, "__call__": method})


class _StubModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        value = _stub_type(f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value


class _HalfModule(types.ModuleType):
    """A real package whose ``__init__`` did not run: its submodules import as usual, and
    any other name its ``__init__`` would have defined is a stub."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        if importlib.machinery.PathFinder.find_spec(f"{self.__name__}.{name}", self.__path__) is not None:
            return importlib.import_module(f"{self.__name__}.{name}")
        value = _stub_type(f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves every module under the given prefixes as a stub module."""

    def __init__(self, prefixes: tuple[str, ...]) -> None:
        self.prefixes = prefixes

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if any(fullname == p or fullname.startswith(p + ".") for p in self.prefixes):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: Any) -> Any:
        mod = _StubModule(spec.name)
        mod.__path__ = []
        return mod

    def exec_module(self, module: Any) -> None:
        if module.__name__ == "torch":
            module.__version__ = "2.10.0"


def stub_modules(prefixes: tuple[str, ...]) -> None:
    sys.meta_path.insert(0, _StubFinder(prefixes))


def skip_init(package: str) -> None:
    """Register ``package`` with its real directory but without running its ``__init__``."""
    if package in sys.modules:
        return
    parent, _, leaf = package.rpartition(".")
    if parent:
        skip_init(parent)
        base = sys.modules[parent].__path__
    else:
        base = None
    spec = importlib.machinery.PathFinder.find_spec(package, base)
    if spec is None or spec.submodule_search_locations is None:
        raise ImportError(f"package {package} is not installed in this venv (run benchmarks/setup.sh)")
    mod = _HalfModule(package)
    mod.__path__ = list(spec.submodule_search_locations)
    mod.__spec__ = importlib.machinery.ModuleSpec(package, None, is_package=True)
    mod.__spec__.submodule_search_locations = mod.__path__
    mod.__file__ = spec.origin
    sys.modules[package] = mod
    if parent:
        setattr(sys.modules[parent], leaf, mod)


HEAVY = (
    "torch",
    "triton",
    "zmq",
    "transformers",
    "huggingface_hub",
    "cpuinfo",
    "prometheus_client",
    "IPython",
    "xgrammar",
    "outlines",
    "outlines_core",
    "llguidance",
    "sentencepiece",
    "tokenizers",
    "safetensors",
    "setproctitle",
    "uvloop",
    "pybase64",
)


def install_sglang() -> None:
    stub_modules(HEAVY)
    skip_init("sglang")
    skip_init("sglang.srt")


def install_vllm() -> None:
    stub_modules(
        (
            *HEAVY,
            "vllm.distributed",
            "vllm.model_executor",
            "vllm.compilation",
            "vllm.forward_context",
            "vllm.v1.attention",
            "vllm._C",
            "vllm._custom_ops",
            "vllm.utils.torch_utils",  # dtype tables checked against torch at import (0.34)
        )
    )
    for pkg in ("vllm", "vllm.config", "vllm.renderers", "vllm.multimodal"):
        skip_init(pkg)


class FakeTokenizer:
    """Enough of a Hugging Face tokenizer for vLLM's parsers: each special token is one id,
    every other character is ``1000 + code point``."""

    def __init__(self, specials: tuple[str, ...]) -> None:
        self.specials = [*list(dict.fromkeys(specials)), "<eos>"]
        self.special_ids = {s: i + 1 for i, s in enumerate(self.specials)}
        self.by_id = {i: s for s, i in self.special_ids.items()}
        self.eos_token_id = self.special_ids["<eos>"]
        self.all_special_tokens = list(self.specials)
        self.all_special_ids = list(self.by_id)
        self.tokenizer = self  # hermes looks for tokenizer.tokenizer on mistral tokenizers only
        self.name_or_path = "fake"

    def get_vocab(self) -> dict[str, int]:
        return dict(self.special_ids)

    @property
    def vocab(self) -> dict[str, int]:
        return self.get_vocab()

    def __len__(self) -> int:
        return 0x110000 + 1000

    def encode(self, text: str, add_special_tokens: bool = False, **kw: Any) -> list[int]:
        out: list[int] = []
        i = 0
        firsts = {s[0] for s in self.specials}
        while i < len(text):
            if text[i] in firsts:
                tok = next((s for s in self.specials if text.startswith(s, i)), None)
                if tok is not None:
                    out.append(self.special_ids[tok])
                    i += len(tok)
                    continue
            out.append(1000 + ord(text[i]))
            i += 1
        return out

    def decode(self, ids: Any, skip_special_tokens: bool = False, **kw: Any) -> str:
        return "".join(self.by_id.get(i, "") if i < 1000 else chr(i - 1000) for i in ids)

    def convert_ids_to_tokens(self, ids: Any, skip_special_tokens: bool = False) -> Any:
        if isinstance(ids, int):
            return self.decode([ids])
        return [self.decode([i]) for i in ids]

    def convert_tokens_to_ids(self, tokens: Any) -> Any:
        if isinstance(tokens, str):
            return self.special_ids.get(tokens, 1000 + ord(tokens[0]) if len(tokens) == 1 else None)
        return [self.convert_tokens_to_ids(t) for t in tokens]

    def __call__(self, text: str, **kw: Any) -> dict[str, list[int]]:
        return {"input_ids": self.encode(text)}
