"""PPO-clip loss numbers and token-budget packing, pinned on hand-made tensors."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from spade.backends.ppo import pack_micro_batches, ppo_loss, token_logprobs  # noqa: E402


def loss_of(ratio: float, adv: float, **kw):
    logp = torch.tensor([[0.0, math.log(ratio)]], requires_grad=True)
    old = torch.zeros(1, 2)
    mask = torch.tensor([[0.0, 1.0]])
    parts = ppo_loss(logp, old, torch.tensor([adv]), mask, 1.0, 0.2, 0.28, **kw)
    parts.loss.backward()
    return parts, logp.grad[0, 1].item()


def test_unclipped_ratio_gives_minus_ratio_times_advantage():
    parts, grad = loss_of(1.0, 2.0)
    assert parts.loss.item() == pytest.approx(-2.0)
    assert grad == pytest.approx(-2.0)  # d(-r*A)/dlogp = -r*A
    assert parts.sums["clip_frac"] == 0.0


def test_clip_is_asymmetric_and_stops_the_gradient():
    # A > 0: ratio capped at 1 + 0.28
    parts, grad = loss_of(1.5, 1.0)
    assert parts.loss.item() == pytest.approx(-1.28)
    assert grad == 0.0 and parts.sums["clip_frac"] == 1.0
    # 1.25 is inside the high clip (it would be clipped by a symmetric 0.2)
    parts, grad = loss_of(1.25, 1.0)
    assert parts.loss.item() == pytest.approx(-1.25) and grad != 0.0
    # A < 0: ratio floored at 1 - 0.2: -min(0.5 * -1, 0.8 * -1) = 0.8
    parts, grad = loss_of(0.5, -1.0)
    assert parts.loss.item() == pytest.approx(0.8)
    assert grad == 0.0 and parts.sums["clip_frac"] == 1.0


def test_kl_term_is_zero_at_the_reference_and_positive_away_from_it():
    parts, _ = loss_of(1.0, 0.0, ref_logp_BT=torch.zeros(1, 2), kl_coef=0.1)
    assert parts.sums["kl_ref"] == pytest.approx(0.0)
    parts, _ = loss_of(2.0, 0.0, ref_logp_BT=torch.zeros(1, 2), kl_coef=0.1)
    d = -math.log(2.0)
    assert parts.sums["kl_ref"] == pytest.approx(math.exp(d) - d - 1)
    assert parts.loss.item() == pytest.approx(0.1 * (math.exp(d) - d - 1))


def test_masked_tokens_do_not_count():
    logp = torch.tensor([[5.0, 0.0, 3.0]], requires_grad=True)
    parts = ppo_loss(
        logp,
        torch.zeros(1, 3),
        torch.tensor([1.0]),
        torch.tensor([[0.0, 1.0, 0.0]]),
        1.0,
        0.2,
        0.28,
    )
    parts.loss.backward()
    assert parts.loss.item() == pytest.approx(-1.0)
    assert logp.grad[0, 0] == 0 and logp.grad[0, 2] == 0


def test_token_logprobs_apply_temperature():
    logits = torch.tensor([[[1.0, 2.0, 3.0]]])
    lp, ent = token_logprobs(logits, torch.tensor([[2]]), torch.tensor([[0.5]]))
    assert lp.item() == pytest.approx(torch.log_softmax(logits / 0.5, -1)[0, 0, 2].item())
    assert ent.item() > 0


def test_pack_micro_batches_respects_budget_and_covers_all():
    lengths = [10, 50, 20, 20, 5, 200, 30]
    batches = pack_micro_batches(lengths, token_budget=60)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for b in batches:
        assert len(b) * max(lengths[i] for i in b) <= 60 or len(b) == 1
    assert [5] in batches  # longer than the budget: alone
    assert pack_micro_batches(lengths, 60) == batches  # deterministic
    # longest first (200, 50, 30, 20, 20, 10, 5; ties in input order), a batch closed when one
    # more sequence would pass the budget: [200] [50] [30, 20]=60 [20, 10, 5]=60
    assert batches == [[5], [1], [6, 2], [3, 0, 4]]


def test_the_clip_diagnostic_counts_only_tokens_whose_side_is_clipped():
    # ratios 0.5 and 1.5 at advantages 0 (no side), +0.5 (floor does not apply) and -0.5 (cap
    # does not apply): no token is clipped on its advantage's side
    logp = torch.log(torch.tensor([[1.0, 0.5, 1.5, 0.5, 1.5, 0.5, 1.5]]))
    for adv, cols in ((0.0, (1, 2)), (0.5, (3,)), (-0.5, (4,))):
        mask = torch.zeros(1, 7)
        for c in cols:
            mask[0, c] = 1.0
        adv_per_row = torch.tensor([adv])
        parts = ppo_loss(logp, torch.zeros(1, 7), adv_per_row, mask, 1.0, 0.2, 0.28)
        assert parts.sums["clip_frac"] == 0.0, adv


def test_approx_kl_is_the_k3_estimate():
    # ratio r = 2: KL(behaviour || current) ~ 1/r + log r - 1
    parts, _ = loss_of(2.0, 1.0)
    assert parts.sums["approx_kl"] == pytest.approx(0.5 + math.log(2.0) - 1.0)
    assert parts.sums["ratio"] == pytest.approx(2.0)


def test_the_kl_term_needs_both_a_reference_and_a_coefficient():
    plain, _ = loss_of(2.0, 1.0)
    with_ref, _ = loss_of(2.0, 1.0, ref_logp_BT=torch.zeros(1, 2))  # kl_coef defaults to 0
    assert with_ref.loss.item() == pytest.approx(plain.loss.item())
    assert "kl_ref" not in with_ref.sums
    zero, _ = loss_of(2.0, 1.0, ref_logp_BT=torch.zeros(1, 2), kl_coef=0.0)
    assert "kl_ref" not in zero.sums
    no_ref, _ = loss_of(2.0, 1.0, kl_coef=0.5)  # no reference: no KL, no error
    assert no_ref.loss.item() == pytest.approx(plain.loss.item())


def test_token_logprobs_take_any_leading_shape_and_report_the_entropy():
    torch.manual_seed(0)
    logits = torch.randn(2, 3, 5)
    targets = torch.tensor([[0, 4, 2], [1, 1, 3]])
    temperature = torch.tensor([[1.0, 0.5, 2.0], [1.0, 1.0, 0.7]])
    lp, ent = token_logprobs(logits, targets, temperature)
    flat_lp, flat_ent = token_logprobs(
        logits.reshape(6, 5), targets.reshape(6), temperature.reshape(6)
    )
    assert lp.shape == (2, 3) and torch.allclose(lp.reshape(6), flat_lp)
    assert torch.allclose(ent.reshape(6), flat_ent)
    for b in range(2):
        for t in range(3):
            want = torch.log_softmax(logits[b, t] / temperature[b, t], -1)
            assert lp[b, t].item() == pytest.approx(want[targets[b, t]].item(), abs=1e-6)
    _, entropy = token_logprobs(torch.zeros(4, 8), torch.zeros(4, dtype=torch.long), torch.ones(4))
    assert torch.allclose(entropy, torch.full((4,), math.log(8.0)))  # uniform: log V
