"""Model backends: the `Policy` / `Trainer` protocols and their implementations.

Importing this package is cheap: it loads only the protocol types. torch and transformers are
imported when a local backend is constructed (`spade --help` must start in well under a second).

    from spade.backends import LocalBackend, LocalConfig, SamplingParams  # LocalBackend: lazy
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from spade.backends.base import (
    Completion,
    FinishReason,
    Message,
    Policy,
    PPOConfig,
    Prompt,
    Role,
    Sample,
    SamplingParams,
    Trainer,
    episode_sample,
)

if TYPE_CHECKING:
    from spade.backends.local import LocalBackend, LocalConfig
    from spade.backends.openai_compat import OpenAICompatConfig, OpenAICompatPolicy
    from spade.backends.torch_setup import LoraSettings

_LAZY = {
    "LocalBackend": "spade.backends.local",
    "LocalConfig": "spade.backends.local",
    "LoraSettings": "spade.backends.local",
    "OpenAICompatConfig": "spade.backends.openai_compat",
    "OpenAICompatPolicy": "spade.backends.openai_compat",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'spade.backends' has no attribute {name!r}")


__all__ = [
    "Completion",
    "FinishReason",
    "LocalBackend",
    "LocalConfig",
    "LoraSettings",
    "Message",
    "OpenAICompatConfig",
    "OpenAICompatPolicy",
    "PPOConfig",
    "Policy",
    "Prompt",
    "Role",
    "Sample",
    "SamplingParams",
    "Trainer",
    "episode_sample",
]
