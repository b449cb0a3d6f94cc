"""Run model-written environment programs in isolated worker processes (see supervisor.py), on
this host (`Sandbox`) or on the nodes of a Ray cluster (`spade.sandbox.cluster.RaySandbox`,
the `ray` extra); `make_sandbox` picks one by name."""

from spade.sandbox.api import SandboxAPI, SessionAPI, make_sandbox
from spade.sandbox.supervisor import (
    LoadInfo,
    Sandbox,
    SandboxConfig,
    SandboxError,
    Session,
    StepResult,
)

__all__ = [
    "LoadInfo",
    "Sandbox",
    "SandboxAPI",
    "SandboxConfig",
    "SandboxError",
    "Session",
    "SessionAPI",
    "StepResult",
    "make_sandbox",
]
