"""Run model-written environment programs in isolated worker processes (see supervisor.py)."""

from spade.sandbox.supervisor import (
    LoadInfo,
    Sandbox,
    SandboxConfig,
    SandboxError,
    Session,
    StepResult,
)

__all__ = ["LoadInfo", "Sandbox", "SandboxConfig", "SandboxError", "Session", "StepResult"]
