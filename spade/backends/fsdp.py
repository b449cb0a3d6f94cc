"""Training past one process: the local backend's model sharded with FSDP2 under torchrun.

    torchrun --nproc-per-node 2 my_script.py      # each rank:
        init_distributed()                          # gloo on CPU, nccl on GPU
        backend = FSDPBackend(LocalConfig(model=..., device=...))
        if rank() == 0:
            trainer = FSDPTrainer(backend, policy=LocalBackend(...))  # drives every rank
            ... trainer.update(samples); trainer.save(dir) ...
            trainer.close()
        else:
            serve(backend)                          # follows rank 0 until close()

`FSDPBackend` is `LocalBackend` with `fully_shard` applied to every decoder layer and the root
(and to the frozen reference model when the KL term is on), so the PPO update is the same code
(`spade.backends.ppo`): each minibatch's micro-batches, packed by token budget as locally, are
dealt round-robin over the ranks; a rank without one left runs an empty pass so that every rank
makes the same collective calls; each loss is scaled by the world size because FSDP averages
gradients over ranks, and the metrics are summed over ranks. The normalisers (the minibatch's
trained tokens, or each role's: `PPOConfig.role_normalisation`) are counted over the whole
minibatch, which every rank holds, so a rank weighs its share as one process would. Its
`update`, `save` and `load` are collectives: every rank calls them with the same arguments.
`FSDPTrainer` (rank 0) broadcasts each call to the ranks in `serve`, then copies the new full
weights into the Policy that samples for the loop (a `LocalBackend` on rank 0; with
`--vllm-urls` that copy exports the weights the servers reload, `spade.backends.weight_sync`).

Checkpoints are `torch.distributed.checkpoint` directories (model and AdamW state, sharded on
write, resharded on read), so a run saved on N ranks resumes on M; each rank's RNG state is kept
too and restored when the world size is the same. A sharded model does not sample (its forward is
a collective): sampling stays with the Policy.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from spade.backends.base import Completion, Prompt, Sample, SamplingParams
from spade.backends.local import LocalBackend, LocalConfig


def init_distributed() -> None:
    """Join the process group torchrun describes (gloo on CPU, nccl when CUDA is there)."""
    if dist.is_initialized():
        return
    if "RANK" not in os.environ:
        raise RuntimeError("no torchrun environment (RANK, WORLD_SIZE): launch with torchrun")
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group(backend)


def rank() -> int:
    return dist.get_rank() if dist.is_initialized() else 0


class FSDPBackend(LocalBackend):
    """A LocalBackend whose trainable model is sharded over the default process group."""

    def __init__(self, config: LocalConfig | None = None) -> None:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard

        if not dist.is_initialized():
            raise RuntimeError("FSDPBackend needs a process group: call init_distributed()")
        config = config or LocalConfig()
        if config.lora is not None:
            raise ValueError("FSDPBackend trains full weights; LoRA runs on the local backend")
        if config.device == "auto" and torch.cuda.is_available():
            config = dataclasses.replace(config, device=f"cuda:{torch.cuda.current_device()}")
        super().__init__(config)
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        mesh = init_device_mesh(self.device.type, (self.world,))
        for model in (self.model, self.ref_model):
            if model is not None:
                for layer in _decoder_layers(model):
                    fully_shard(layer, mesh=mesh)
                fully_shard(model, mesh=mesh)
        self.optimizer = self._optimizer()  # over the sharded parameters
        self._loss_scale = float(self.world)
        self._whole_forward = True

    def _optimizer(self) -> torch.optim.AdamW:
        optimizer = super()._optimizer()
        for group in optimizer.param_groups:  # no fused CPU kernel for sharded tensors
            group["fused"] = None if self.device.type == "cpu" else group.get("fused")
        return optimizer

    # ------------------------------------------------------------------ the update's hooks
    def _micro_batches(self, lengths: Sequence[int]) -> list[list[int] | None]:
        every = super()._micro_batches(lengths)
        rounds = -(-len(every) // self.world)
        mine: list[list[int] | None] = list(every[self.rank :: self.world])
        return mine + [None] * (rounds - len(mine))

    def _idle_pass(self) -> None:
        """A forward and backward that trains nothing: the all-gathers and reduce-scatters of
        the ranks that do have a micro-batch need this rank too."""
        ids = torch.full((1, 2), self.pad_id, dtype=torch.long, device=self.device)
        with self._autocast() or contextlib.nullcontext():
            if self.ref_model is not None:  # the KL term's forward is a collective too
                with torch.no_grad():
                    self.ref_model(input_ids=ids, use_cache=False)
            logits = self.model(input_ids=ids, use_cache=False).logits
        (logits.float().sum() * 0.0).backward()

    def _sum_over_ranks(self, sums: dict[str, float]) -> dict[str, float]:
        objects: list[Any] = [None] * self.world
        dist.all_gather_object(objects, sums)
        names = sorted({k for o in objects for k in o})
        return {k: float(sum(o.get(k, 0.0) for o in objects)) for k in names}

    # ------------------------------------------------------------------ sampling: refused
    def sample(self, prompts: Sequence[Prompt | Sequence[Any]], params: SamplingParams) -> Any:
        raise RuntimeError(
            "a sharded model does not sample: sample with the Policy FSDPTrainer keeps in sync"
        )

    def extend(self, prompt: Prompt, completion: Completion, messages: Sequence[Any]) -> Prompt:
        raise RuntimeError("a sharded model does not sample (see FSDPBackend.sample)")

    # ------------------------------------------------------------------ weights and checkpoints
    def full_state_dict(self) -> dict[str, torch.Tensor]:
        """Every weight, unsharded, on the CPU of rank 0 (empty elsewhere). A collective."""
        from torch.distributed.checkpoint.state_dict import (
            StateDictOptions,
            get_model_state_dict,
        )

        options = StateDictOptions(full_state_dict=True, cpu_offload=True)
        weights: Any = get_model_state_dict(self.model, options=options)
        return weights

    def save(self, directory: str | Path) -> None:
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import get_state_dict

        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        model_state, optim_state = get_state_dict(self.model, self.optimizer)
        dcp.save({"model": model_state, "optim": optim_state}, checkpoint_id=str(d / "dcp"))
        rng = {"torch": torch.get_rng_state(), "sampler": self._sampler_rng.get_state()}
        torch.save(rng, d / f"rng-{self.rank}.pt")
        if self.rank == 0:
            state = {
                "step": self.step,
                "world_size": self.world,
                "config": dataclasses.asdict(self.config),
                "model_path": self.model_path,
                "tokenizer_sha256": self.tokenizer_fingerprint(),
            }
            (d / "state.json").write_text(json.dumps(state, indent=2, default=str))
        dist.barrier()

    def load(self, directory: str | Path) -> None:
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

        d = Path(directory)
        state = json.loads((d / "state.json").read_text())
        if state.get("tokenizer_sha256") not in (None, self.tokenizer_fingerprint()):
            raise ValueError(
                f"checkpoint {d} was trained with another tokenizer (model "
                f"{state.get('model_path')}); this backend uses {self.model_path}"
            )
        model_state, optim_state = get_state_dict(self.model, self.optimizer)
        loaded: dict[str, Any] = {"model": model_state, "optim": optim_state}
        dcp.load(loaded, checkpoint_id=str(d / "dcp"))
        set_state_dict(
            self.model,
            self.optimizer,
            model_state_dict=loaded["model"],
            optim_state_dict=loaded["optim"],
        )
        if state.get("world_size") == self.world:  # the same ranks: each gets its RNG back
            rng = torch.load(d / f"rng-{self.rank}.pt", weights_only=True)
            torch.set_rng_state(rng["torch"])
            self._sampler_rng.set_state(rng["sampler"])
        self.step = int(state["step"])
        self.weights_changed()


class FSDPTrainer:
    """Rank 0's Trainer: each call goes to every rank (those in `serve`) and runs here too; after
    an update or a load, `policy` (a LocalBackend on rank 0) gets the new full weights."""

    def __init__(self, backend: FSDPBackend, policy: LocalBackend | None = None) -> None:
        if backend.rank != 0:
            raise ValueError("FSDPTrainer drives the ranks from rank 0; other ranks run serve()")
        self.backend, self.policy = backend, policy

    def update(self, samples: Sequence[Sample]) -> dict[str, float]:
        _broadcast(("update", list(samples)))
        return _run(self.backend, "update", list(samples), self.policy)

    def save(self, directory: str | Path) -> None:
        _broadcast(("save", str(directory)))
        _run(self.backend, "save", str(directory), self.policy)

    def load(self, directory: str | Path) -> None:
        _broadcast(("load", str(directory)))
        _run(self.backend, "load", str(directory), self.policy)

    def export(self, directory: str | Path) -> Path:
        """The full weights as a Hugging Face folder, from rank 0's synced sampling copy (for
        `spade.backends.weight_sync`)."""
        if self.policy is None:
            raise ValueError("FSDPTrainer exports through its rank-0 policy copy; it has none")
        return self.policy.export(directory)

    def close(self) -> None:
        """Release the ranks in `serve` (they return)."""
        _broadcast(("stop", None))


def serve(backend: FSDPBackend) -> None:
    """Ranks other than 0: do what rank 0's FSDPTrainer asks until it closes."""
    while True:
        message: list[Any] = [None]
        dist.broadcast_object_list(message, src=0)
        command, argument = message[0]
        if command == "stop":
            return
        _run(backend, command, argument, None)


def _broadcast(message: tuple[str, Any]) -> None:
    dist.broadcast_object_list([message], src=0)


def _run(backend: FSDPBackend, command: str, argument: Any, policy: LocalBackend | None) -> Any:
    result: Any = None
    if command == "update":
        result = backend.update(argument)
    elif command == "save":
        backend.save(argument)
    elif command == "load":
        backend.load(argument)
    else:
        raise ValueError(f"unknown FSDP command {command!r}")
    if command in ("update", "load"):
        weights = backend.full_state_dict()  # a collective: every rank takes part
        if policy is not None:
            with torch.no_grad():
                policy.model.load_state_dict(weights, strict=False)
            policy.weights_changed()
    return result


def _decoder_layers(model: torch.nn.Module) -> list[torch.nn.Module]:
    get_decoder: Any = getattr(model, "get_decoder", None)
    decoder = get_decoder() if callable(get_decoder) else None
    return list(getattr(decoder, "layers", None) or [])
