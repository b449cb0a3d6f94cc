"""The local backend's Trainer half: the PPO update, the supervised step and scoring, over an
in-process torch model.

`LocalTraining` is mixed into `LocalBackend` (spade.backends.local), which loads the model and
samples with it; `FSDPBackend` (spade.backends.fsdp) overrides `_optimizer` and the hooks
marked below to run the same update sharded over ranks.

- Update: token-level PPO-clip (the loss in spade.backends.ppo), each minibatch's gradient
  accumulated over micro-batches packed by token budget, each role's loss normalised by its own
  trained tokens (`PPOConfig.role_normalisation`), the optional k3 KL to a frozen reference and
  truncated importance weights against the sampler (`PPOConfig.tis_cap`), then gradient
  clipping and one AdamW step per minibatch (no weight decay on biases and norm weights).
- The output layer runs only at the positions a loss reads (`_logits_at`): projecting every
  prompt token onto the vocabulary costs memory for positions nothing trains.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Protocol, get_args

import torch

from spade.backends.base import PPOConfig, Role, Sample
from spade.backends.kv_cache import cache_kwarg, new_cache
from spade.backends.ppo import LossParts, pack_micro_batches, ppo_loss, token_logprobs
from spade.backends.torch_setup import fused_adamw

ROLES: tuple[Role, ...] = get_args(Role)
"""The roles a sample can have; the update reports its per-role diagnostics under each."""


class _Configured(Protocol):
    @property
    def ppo(self) -> PPOConfig: ...


class LocalTraining:
    """The Trainer methods of `LocalBackend` (`update`, `sft_step`, `score`), as a mixin.

    The class it is mixed into provides the attributes declared here (`config` with its `ppo`,
    the model, the frozen reference or None, the device, the pad id, the step counter and the
    optimizer `_optimizer` builds), `_autocast()` and `weights_changed()`."""

    config: _Configured
    model: Any  # a transformers PreTrainedModel (or a peft wrapper of one)
    ref_model: Any
    device: torch.device
    pad_id: int
    step: int
    optimizer: torch.optim.AdamW

    def _autocast(self) -> AbstractContextManager[Any] | None:
        """The precision's autocast context, or None (the backend class provides it)."""
        raise NotImplementedError

    def weights_changed(self) -> None:
        """Forget what the old weights computed (the backend class provides it)."""
        raise NotImplementedError

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
        """One PPO update: for each of `ppo.num_minibatches` minibatches, the gradient of its
        loss accumulated over its micro-batches (`_minibatch_gradient`), then one clipped AdamW
        step (`_optimizer_step`); returns the per-token metrics (`_update_metrics`)."""
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
            self._minibatch_gradient(minibatch, behaviour[lo:hi], n_tok, sums)
            grad_norms.append(self._optimizer_step(params))
        sums = self._sum_over_ranks(sums)
        self.step += 1
        self.weights_changed()
        return self._update_metrics(sums, samples, total_tokens, grad_norms)

    def _minibatch_gradient(
        self,
        minibatch: Sequence[Sample],
        behaviour: Sequence[Sample],
        n_tok: int,
        sums: dict[str, float],
    ) -> None:
        """Accumulate the gradient of one minibatch's loss (`n_tok` trained tokens) over its
        micro-batches, adding each one's metric sums to `sums`. `behaviour` holds the samples
        as sampled (their logprobs the sampler's), for truncated importance sampling."""
        # counted over the whole minibatch (not a micro-batch or an FSDP rank's share), so
        # every micro-batch and every rank weighs a sequence the same
        role_tok = _tokens_per_role(minibatch)
        for idx in self._micro_batches([len(s.token_ids) for s in minibatch]):
            if idx is None:  # this rank has no share of this minibatch left (FSDP)
                self._idle_pass()
                continue
            parts = self._micro_batch_loss(
                [minibatch[i] for i in idx], [behaviour[i] for i in idx], n_tok, role_tok, sums
            )
            (parts.loss * self._loss_scale).backward()
            for k, v in parts.sums.items():
                sums[k] = sums.get(k, 0.0) + v

    def _micro_batch_loss(
        self,
        micro: Sequence[Sample],
        behaviour: Sequence[Sample],
        n_tok: int,
        role_tok: dict[str, int],
        sums: dict[str, float],
    ) -> LossParts:
        """The PPO loss of one micro-batch, normalised by its minibatch's `n_tok` trained tokens
        (or, per role, by `role_tok`), with the KL term and the importance weights the config
        asks for (their diagnostics added to `sums`)."""
        ppo = self.config.ppo
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
            is_weight = self._importance_weight(batch, behaviour, ppo.tis_cap, sums)
        return ppo_loss(
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

    def _importance_weight(
        self,
        batch: dict[str, torch.Tensor],
        behaviour: Sequence[Sample],
        cap: float,
        sums: dict[str, float],
    ) -> torch.Tensor:
        """Per-token truncated importance weights, trainer over sampler probability capped at
        `cap` (see PPOConfig.tis_cap), for the micro-batch `batch` whose samples as sampled are
        `behaviour`; adds the weights, the capped share and the mismatch KL to `sums`."""
        sampler = self._collate(behaviour)["old_logp"]
        gap = batch["old_logp"] - sampler  # trainer minus sampler, per token
        weight = torch.exp(gap)
        is_weight = weight.clamp(max=cap)
        k3 = 1.0 / weight + gap - 1.0  # KL(sampler || trainer), k3 estimate
        for key, value in (
            ("tis_weight", is_weight),
            ("tis_capped", (weight > cap).float()),
            ("mismatch_kl", k3),
        ):
            sums[key] = sums.get(key, 0.0) + float((value * batch["mask"]).sum())
        return is_weight

    def _optimizer_step(self, params: Sequence[torch.nn.Parameter]) -> float:
        """Clip the accumulated gradient to `ppo.max_grad_norm` (0: no clipping), take one
        AdamW step at the warm-up's learning rate and clear the gradient; returns the norm
        before clipping."""
        ppo = self.config.ppo
        max_norm = ppo.max_grad_norm if ppo.max_grad_norm > 0 else float("inf")
        norm = torch.nn.utils.clip_grad_norm_(params, max_norm)
        if hasattr(norm, "full_tensor"):  # a sharded model's norm (spade.backends.fsdp)
            norm = norm.full_tensor()
        grad_norm = float(norm)
        self._warm_up(ppo)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return grad_norm

    def _update_metrics(
        self,
        sums: dict[str, float],
        samples: Sequence[Sample],
        total_tokens: int,
        grad_norms: Sequence[float],
    ) -> dict[str, float]:
        """The update's metrics: each sum as a per-token mean over every trained token, or over
        one role's (`pg_loss/agent`...), the loss, the mean gradient norm, counts and the step."""
        ppo = self.config.ppo
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
        metrics["optimizer_steps"] = float(len(grad_norms))
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
