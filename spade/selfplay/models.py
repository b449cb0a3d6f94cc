"""The models a run trains and samples with, built from its config.

`model_folder` turns a model name into a folder (the embedded default fetched and converted on
first use), `warm_started_model` into the folder a run starts from (the embedded default
warm-started first, trained on first use); `build_models` builds the Policy and Trainer of each
role: the local backend, FSDP2-sharded training under torchrun (`--trainer fsdp`), sampling on
vLLM servers with the weights pushed into them after each update (`--vllm-urls`).
"""

from __future__ import annotations

from typing import Any

from spade.backends.base import Models, Policy, PPOConfig
from spade.config import FSDP, ModelConfig, TrainConfig
from spade.types import COMPACT, Form


def model_folder(model: ModelConfig, progress: bool = True) -> str:
    """The folder `model` names, as it is: the embedded names (`smollm2`, `tiny-test`) become
    their cached folders (fetched / built on first use), a served model's name and anything
    else are passed on as given. Trains nothing (`warm_started_model` may)."""
    if model.openai_base_url:
        return model.model  # the served model's name
    from spade.backends.torch_setup import model_path

    return model_path(model.model, progress=progress)


def warm_started_model(model: ModelConfig, form: Form = COMPACT, progress: bool = True) -> str:
    """The model folder a run starts from: for the embedded default (`smollm2`) with
    `model.warm_start` on, its warm start for the Designer `form` (`spade bootstrap`'s cached
    result, the same for every run seed), trained here first when it is not cached yet
    (minutes); any other model is `model_folder(model)`."""
    if model.openai_base_url or not (model.warm_start and model.model == "smollm2"):
        return model_folder(model, progress)
    import gc

    from spade.backends.torch_setup import release_free_memory
    from spade.warmstart.finetune import bootstrap

    path = str(bootstrap(model.model, form=form, progress=progress))
    # a warm start trained in this process leaves its model, optimizer and activations
    # behind as free heap: hand them back before the run loads its own
    gc.collect()
    release_free_memory()
    return path


def local_config(model: ModelConfig, path: str, seed: int, ppo: PPOConfig | None = None) -> Any:
    from spade.backends.local import LocalConfig
    from spade.backends.torch_setup import LoraSettings

    lora = LoraSettings(r=model.lora_rank) if model.lora_rank else None
    return LocalConfig(
        model=path,
        device=model.device,
        seed=seed,
        ppo=ppo or PPOConfig(),
        lora=lora,
        threads=model.threads,
        trainable_layers=None if lora else model.trainable_layers,
    )


def local_backend(model: ModelConfig, path: str, seed: int, ppo: PPOConfig | None = None) -> Any:
    from spade.backends.local import LocalBackend

    return LocalBackend(local_config(model, path, seed, ppo))


def build_policy(model: ModelConfig, seed: int = 0, progress: bool = True) -> Policy:
    """A sampling-only policy: an OpenAI-compatible server, or a local model (the embedded
    default warm-started first: `warm_started_model`)."""
    if model.openai_base_url:
        from spade.backends.openai_compat import OpenAICompatConfig, OpenAICompatPolicy

        config = OpenAICompatConfig(
            base_url=model.openai_base_url, model=model.model, api_key_env=model.openai_api_key_env
        )
        return OpenAICompatPolicy(config)
    policy: Policy = local_backend(model, warm_started_model(model, progress=progress), seed)
    return policy


def build_models(cfg: TrainConfig, model: str) -> Models:
    if cfg.model.openai_base_url:
        raise ValueError(
            "a policy served over the OpenAI API cannot be trained (no weights to update); "
            "use it with `spade design` or `spade eval`"
        )
    if cfg.model.vllm_urls and cfg.separate_designer:
        raise ValueError("--separate-designer with --vllm-urls is not supported yet")
    if cfg.model.trainer == FSDP:
        from spade.backends.fsdp import FSDPBackend, FSDPTrainer

        if cfg.separate_designer:
            raise ValueError("--separate-designer with --trainer fsdp is not supported yet")
        policy = local_backend(cfg.model, model, cfg.seed, cfg.ppo)  # rank 0 samples with it
        trainer = FSDPTrainer(
            FSDPBackend(local_config(cfg.model, model, cfg.seed, cfg.ppo)), policy
        )
        return _with_vllm(cfg, model, Models(policy, trainer, policy, trainer))
    agent = local_backend(cfg.model, model, cfg.seed, cfg.ppo)
    designer = agent
    if cfg.separate_designer:
        designer = local_backend(cfg.model, model, cfg.seed + 1, cfg.ppo)
    return _with_vllm(cfg, model, Models(agent, agent, designer, designer))


def _with_vllm(cfg: TrainConfig, model: str, models: Models) -> Models:
    """With `--vllm-urls`: sampling moves to the servers and the trainer pushes its weights into
    them after every update (`spade.backends.weight_sync`)."""
    if not cfg.model.vllm_urls:
        return models
    from spade.backends.vllm import VLLMConfig, VLLMPolicy
    from spade.backends.weight_sync import SyncedTrainer, VLLMWeightSync, local_copy

    config = VLLMConfig(
        tuple(cfg.model.vllm_urls),
        model=cfg.model.vllm_model or cfg.model.model,
        tokenizer=model,
        api_key_env=cfg.model.openai_api_key_env,
    )
    trainer: Any = models.agent_trainer
    policy = VLLMPolicy(config, tokenizer=getattr(local_copy(trainer), "tokenizer", None))
    sync = VLLMWeightSync(
        policy,
        cfg.run_dir / "weights",
        transfer=cfg.model.vllm_sync,
        nccl_address=cfg.model.vllm_nccl_address,
        nccl_port=cfg.model.vllm_nccl_port,
    )
    synced = SyncedTrainer(trainer, sync)
    return Models(policy, synced, policy, synced)


def serve_fsdp_rank(cfg: TrainConfig) -> None:
    """A torchrun rank other than 0 under `--trainer fsdp`: hold a shard and follow rank 0's
    updates, saves and loads until its run ends (the model path comes from rank 0, which
    fetches and warm-starts it first)."""
    from spade.backends.fsdp import FSDPBackend, serve

    path = fsdp_model_path(cfg)
    serve(FSDPBackend(local_config(cfg.model, path, cfg.seed, cfg.ppo)))


def fsdp_model_path(cfg: TrainConfig, progress: bool = True) -> str:
    """The model folder every rank loads: resolved (fetched, warm-started) on rank 0 alone, then
    broadcast, so the ranks neither race on the cache nor repeat the warm start."""
    import torch.distributed as dist

    message: list[Any] = [None]
    if dist.get_rank() == 0:
        message[0] = warm_started_model(cfg.model, cfg.design.form, progress)
    dist.broadcast_object_list(message, src=0)
    return str(message[0])
