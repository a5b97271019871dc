"""What :func:`tooldialect.families.from_template` found in a chat template, as it reports it
on the profile (``profile.template``): the verdict, each probe's rendered turn and reading,
and how far each family got."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["FamilyProgress", "ProbeReport", "TemplateReport", "Verdict"]

#: ``read``: the families read every probe the template rendered; ``partial``: some of them;
#: ``unread``: the template renders calls no family reads; ``no_calls``: it renders no tool
#: call (it drops them); ``error``: it does not compile, raises, or goes past a bound.
Verdict = Literal["read", "partial", "unread", "no_calls", "error"]


class ProbeReport(BaseModel):
    """One probe: the turn the template rendered for it (cut as a server would see the
    model's reply), and whether the profile's families read it back exactly."""

    model_config = ConfigDict(frozen=True)

    name: str
    rendered: bool  # the template rendered the probe's calls (False: it raised or dropped them)
    read: bool  # the profile's families read the calls, arguments and text back exactly
    turn: str = ""  # the model's turn as the template writes it
    problem: str | None = None  # why it was not rendered or not read


class FamilyProgress(BaseModel):
    """How far one family got on its own: the probes it read exactly, out of those rendered,
    and what went wrong on the first it did not."""

    model_config = ConfigDict(frozen=True)

    family: str
    read: int
    of: int
    first_failure: str | None = None


class TemplateReport(BaseModel):
    """What rendering probe calls through a chat template showed."""

    model_config = ConfigDict(frozen=True)

    verdict: Verdict
    detail: str
    #: "immutable" (jinja2's ImmutableSandboxedEnvironment) or "mutable" (its
    #: SandboxedEnvironment, where the template changes a list or dict); None: never rendered
    sandbox: Literal["immutable", "mutable"] | None = None
    #: how the template took the calls' arguments: "object" (a mapping) or "string" (JSON text)
    arguments: Literal["object", "string"] | None = None
    #: how the probe calls' ids were written: "plain" (9 letters and digits) or
    #: "functions" (functions.NAME:INDEX, for templates that write the id instead of the name)
    ids: Literal["plain", "functions"] | None = None
    generation_prompt: str = ""  # what add_generation_prompt adds after the last user turn
    reasoning: list[str] = []  # the reasoning wrappers in play (lowercase pair names: "think" …)
    probes: list[ProbeReport] = []
    failed: list[str] = []  # the probes rendered but not read
    progress: list[FamilyProgress] = []  # families that read at least one probe, best first
    fallback: Literal["model id", "every family"] | None = None  # where the families came from instead
