"""Token-level PPO-clip loss and token-budget micro-batching (pure functions over tensors).

Loss (SPADE.md section 2, step 5), per trained token t of sequence b:

    ratio  = exp(logp - logp_behaviour)
    pg     = -min(ratio * A_b, clip(ratio, 1 - clip_low, 1 + clip_high) * A_b)
    kl     = exp(ref - logp) - (ref - logp) - 1          (k3 estimator, only when kl_coef > 0)
    loss   = sum_t mask * w_b * (pg + kl_coef * kl) / (trained tokens in the whole minibatch)

Token-level normalisation over the minibatch (not per sequence) follows DAPO: a long episode's
tokens weigh as much as a short one's. Across roles that hands the step to the Designer (its
replies are 15-40x longer than the Agent's answers), so by default each role is normalised by its
own tokens (`PPOConfig.role_normalisation="per_role"`): the sequence weight w_b is (trained tokens
in the minibatch) / (trained tokens of b's role in the minibatch), which makes the loss the sum
over roles of each role's per-token mean. `joint` leaves w_b = 1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch


@dataclass
class LossParts:
    loss: torch.Tensor
    """Scalar to back-propagate (already divided by the minibatch normaliser)."""
    sums: dict[str, float]
    """Mask-weighted sums of per-token diagnostics, for averaging across micro-batches; those of
    `GROUPED` also per group of rows, as `name/group`."""


GROUPED = ("pg_loss", "approx_kl", "clip_frac", "entropy")
"""The diagnostics `ppo_loss` also sums per group of rows (per role, in the local backend)."""


def token_logprobs(
    logits_NV: torch.Tensor,
    targets_N: torch.Tensor,
    temperature_N: torch.Tensor,
    with_entropy: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Log-probability of each target under its logits / temperature, in float32, and the
    entropy (a diagnostic: computed without gradient, so it costs no backward memory). Any
    leading shape works; `temperature_N` has the targets' shape."""
    logits = logits_NV.float() / temperature_N.unsqueeze(-1)
    logp_all = torch.log_softmax(logits, dim=-1)
    logp = logp_all.gather(-1, targets_N.unsqueeze(-1)).squeeze(-1)
    entropy = None
    if with_entropy:
        with torch.no_grad():
            entropy = -(logp_all.exp() * logp_all).sum(-1)
    return logp, entropy


def ppo_loss(
    logp_BT: torch.Tensor,
    old_logp_BT: torch.Tensor,
    advantage_B: torch.Tensor,
    mask_BT: torch.Tensor,
    normaliser: float,
    clip_low: float,
    clip_high: float,
    ref_logp_BT: torch.Tensor | None = None,
    kl_coef: float = 0.0,
    is_weight_BT: torch.Tensor | None = None,
    weight_B: torch.Tensor | None = None,
    entropy_BT: torch.Tensor | None = None,
    groups: Mapping[str, torch.Tensor] | None = None,
) -> LossParts:
    """The loss above; `is_weight_BT` (truncated importance weights, no gradient) multiplies
    each token's policy-gradient term, `weight_B` (no gradient; None: 1) each sequence's whole
    term. `entropy_BT` is only summed, as a diagnostic; `groups` (name -> a (B,) bool tensor of
    the rows in the group) asks for the `GROUPED` sums of each group as well."""
    mask = mask_BT.float()
    log_ratio = logp_BT - old_logp_BT
    ratio = torch.exp(log_ratio)
    adv = advantage_B[:, None].expand_as(ratio)
    clipped = torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high)
    pg = -torch.minimum(ratio * adv, clipped * adv)
    if is_weight_BT is not None:
        pg = pg * is_weight_BT.detach()
    per_token = pg
    sums: dict[str, float] = {}
    if ref_logp_BT is not None and kl_coef > 0:
        d = ref_logp_BT - logp_BT
        kl = torch.exp(d) - d - 1.0
        per_token = per_token + kl_coef * kl
        sums["kl_ref"] = float((kl.detach() * mask).sum())
    if weight_B is not None:
        per_token = per_token * weight_B.detach()[:, None]
    loss = (per_token * mask).sum() / normaliser
    with torch.no_grad():
        clip_active = ((ratio < 1.0 - clip_low) & (adv < 0)) | (
            (ratio > 1.0 + clip_high) & (adv > 0)
        )
        diagnostics = {
            "pg_loss": pg,
            "clip_frac": clip_active.float(),
            "ratio": ratio,
            # k3 estimate of KL(behaviour || current): how far the update has already moved.
            "approx_kl": torch.exp(-log_ratio) + log_ratio - 1.0,
        }
        if entropy_BT is not None:
            diagnostics["entropy"] = entropy_BT
        for key, value in diagnostics.items():
            sums[key] = float((value * mask).sum())
        for name, rows_B in (groups or {}).items():
            in_group = mask * rows_B[:, None]
            for key in GROUPED:
                if key in diagnostics:
                    sums[f"{key}/{name}"] = float((diagnostics[key] * in_group).sum())
    return LossParts(loss=loss, sums=sums)


def pack_micro_batches(lengths: Sequence[int], token_budget: int) -> list[list[int]]:
    """Group sequence indices so that (sequences x longest length) stays within the budget.

    Longest first, so padding is small; a sequence longer than the budget goes alone.
    Deterministic: ties keep the input order.
    """
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    batches: list[list[int]] = []
    current: list[int] = []
    longest = 0
    for i in order:
        n = lengths[i]
        if current and (len(current) + 1) * max(longest, n) > token_budget:
            batches.append(current)
            current, longest = [], 0
        current.append(i)
        longest = max(longest, n)
    if current:
        batches.append(current)
    return batches
