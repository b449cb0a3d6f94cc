"""Run model-written environment programs in isolated worker processes (see supervisor.py), on
this host (`Sandbox`) or on the nodes of a Ray cluster (`spade.sandbox.cluster.RaySandbox`,
the `ray` extra); `make_sandbox` picks one by name. This is the public entry point: the
modules behind it are supervisor.py (the `Sandbox`), session.py (`Session`), contract.py (the
config, records and error) and api.py (the protocols both sandboxes provide)."""

from spade.sandbox.api import SandboxAPI, SessionAPI, make_sandbox
from spade.sandbox.contract import (
    EnvKind,
    ErrorKind,
    LoadInfo,
    SandboxConfig,
    SandboxError,
    StepResult,
)
from spade.sandbox.session import Session
from spade.sandbox.supervisor import Sandbox

__all__ = [
    "EnvKind",
    "ErrorKind",
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
