"""What the loop, the validator and the rollouts need of a sandbox: the local `Sandbox` and the
Ray-backed `RaySandbox` (`spade.sandbox.cluster`) both provide it."""

from __future__ import annotations

from typing import Any, Protocol

from spade.sandbox.contract import LoadInfo, SandboxConfig, StepResult


class SessionAPI(Protocol):
    """One live environment instance (`Session` locally, `RemoteSession` on Ray)."""

    info: LoadInfo | None
    layers: dict[str, str | None]

    @property
    def alive(self) -> bool: ...

    @property
    def output(self) -> str: ...

    async def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]: ...

    async def step(self, action: str) -> StepResult: ...

    async def call_tool(self, name: str, args: dict[str, Any]) -> tuple[str, int]: ...

    async def solution(self) -> Any: ...

    async def close(self) -> None: ...

    async def __aenter__(self) -> Any: ...

    async def __aexit__(self, *exc: object) -> None: ...


class SandboxAPI(Protocol):
    """Opens sessions: `Sandbox` (this host) or `RaySandbox` (hosts of a Ray cluster)."""

    config: SandboxConfig
    layers: dict[str, str | None]

    async def start(self) -> Any: ...

    async def open(
        self,
        code: str,
        *,
        max_turns: int = 25,
        kwargs: dict[str, Any] | None = None,
        strict: bool = False,
        hash_seed: int = 0,
        filename: str = "<env>",
    ) -> SessionAPI: ...

    async def aclose(self) -> None: ...


def make_sandbox(kind: str = "local", config: SandboxConfig | None = None) -> SandboxAPI:
    """`local`: a `Sandbox` on this host; `ray`: a `RaySandbox` over the Ray cluster at
    `RAY_ADDRESS` (a local Ray is started without it). Ray is imported only here."""
    if kind == "local":
        from spade.sandbox.supervisor import Sandbox

        return Sandbox(config)
    if kind == "ray":
        from spade.sandbox.cluster import RaySandbox

        return RaySandbox(config)
    raise ValueError(f"unknown sandbox {kind!r}: expected 'local' or 'ray'")
