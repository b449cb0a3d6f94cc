"""`LocalBackend.update` pinned by value on tiny-test: PPO ratio clipping on both sides (off-policy
samples with known behaviour logprobs), token-level normalisation, gradient clipping and the
weight-decay groups. Numbers are derived in the comments; none is read back from the code."""

from __future__ import annotations

import dataclasses
import math
import pickle
import re

import pytest

torch = pytest.importorskip("torch")

from spade.backends.base import Sample  # noqa: E402

PROMPT_LEN = 3


def _sample(n_reply: int, advantage: float, offset: int = 0) -> Sample:
    """A sequence of PROMPT_LEN untrained tokens then n_reply trained ones (behaviour logprobs
    filled in later)."""
    ids = tuple(10 + offset + i for i in range(PROMPT_LEN + n_reply))
    mask = (0,) * PROMPT_LEN + (1,) * n_reply
    return Sample(ids, mask, (0.0,) * len(ids), advantage, "agent")


def _with_ratios(backend, sample: Sample, ratios: list[float]) -> Sample:
    """The sample with behaviour logprobs set so that exp(logp_now - logp_old) = ratios[t] for
    the trained tokens, at the backend's current weights."""
    now = backend.score([sample])[0]
    it = iter(ratios)
    old = tuple(lp - math.log(next(it)) if m else 0.0 for lp, m in zip(now, sample.loss_mask))
    return Sample(sample.token_ids, sample.loss_mask, old, sample.advantage, "agent")


def test_ratio_is_clipped_above_at_1_plus_clip_high_and_below_at_1_minus_clip_low(make_local):
    backend = make_local(clip_low=0.2, clip_high=0.28, learning_rate=1e-3)
    # A = +1, ratios 1.5 (above 1.28) and 1.1 (inside): pg = -min(r, clip(r)) = -1.28, -1.1
    # A = -1, ratios 0.5 (below 0.8) and 0.9 (inside): pg = -min(-r, -clip(r)) = max(r, clip(r))
    #   = 0.8, 0.9
    pos = _with_ratios(backend, _sample(2, 1.0), [1.5, 1.1])
    neg = _with_ratios(backend, _sample(2, -1.0, offset=50), [0.5, 0.9])
    metrics = backend.update([pos, neg])
    # token-level mean over the 4 trained tokens
    assert metrics["pg_loss"] == pytest.approx((-1.28 - 1.1 + 0.8 + 0.9) / 4, abs=1e-5)
    assert metrics["clip_frac"] == pytest.approx(2 / 4)  # 1.5 with A > 0 and 0.5 with A < 0
    assert metrics["ratio"] == pytest.approx((1.5 + 1.1 + 0.5 + 0.9) / 4, abs=1e-5)


def test_a_clipped_token_gives_no_gradient(make_local):
    # every token outside the trust region on its advantage's side: the loss is constant in the
    # weights, so the gradient is exactly 0 and the weights do not move (Adam with zero grads and
    # zero weight decay)
    backend = make_local(clip_low=0.2, clip_high=0.28, weight_decay=0.0)
    before = [p.detach().clone() for p in backend.model.parameters()]
    pos = _with_ratios(backend, _sample(3, 1.0), [1.5, 2.0, 1.3])
    neg = _with_ratios(backend, _sample(3, -1.0, offset=50), [0.5, 0.1, 0.79])
    metrics = backend.update([pos, neg])
    assert metrics["grad_norm"] == 0.0
    assert metrics["clip_frac"] == 1.0
    for p, q in zip(before, backend.model.parameters()):
        assert torch.equal(p, q)


def _grad_norm_of(backend, samples: list[Sample], weights: list[float]) -> float:
    """Norm of the gradient of -sum_b weights[b] * A_b * sum_t logp_bt (ratio 1 at the start)."""
    backend.model.zero_grad(set_to_none=True)
    for s, w in zip(samples, weights):
        batch = backend._collate([s])
        logp, _ = backend._logprobs(backend.model, batch, batch["attn"][:, 1:].bool())
        loss = -(w * s.advantage) * (logp * batch["mask"]).sum()
        loss.backward()
    norm = torch.sqrt(sum((p.grad.double() ** 2).sum() for p in backend.model.parameters()))
    backend.model.zero_grad(set_to_none=True)
    return float(norm)


def test_the_loss_is_normalised_per_token_over_the_minibatch(make_local):
    # a 2-token reply with A = +1 and a 6-token reply with A = -1, on-policy (ratio 1):
    #   pg per token = -A, pg_loss = (2 * -1 + 6 * +1) / 8 = 0.5
    #   token-level: every token weighs 1/8; per sequence it would be 1/(2*2) and 1/(2*6)
    backend = make_local(max_grad_norm=0.0)
    short = _with_ratios(backend, _sample(2, 1.0), [1.0] * 2)
    long = _with_ratios(backend, _sample(6, -1.0, offset=50), [1.0] * 6)
    token_level = _grad_norm_of(backend, [short, long], [1 / 8, 1 / 8])
    per_sequence = _grad_norm_of(backend, [short, long], [1 / 4, 1 / 12])
    assert abs(token_level - per_sequence) > 1e-3 * token_level  # the test can tell them apart
    metrics = backend.update([short, long])
    assert metrics["pg_loss"] == pytest.approx(0.5, abs=1e-5)
    assert metrics["trained_tokens"] == 8.0
    assert metrics["grad_norm"] == pytest.approx(token_level, rel=1e-4)


def test_the_gradient_is_clipped_to_max_grad_norm(make_local):
    # grad_norm reports the norm before clipping; Adam's first moment after one step is
    # (1 - beta1) * g_clipped, so its norm is 0.1 * min(grad_norm, max_grad_norm)
    samples = lambda b: [  # noqa: E731
        _with_ratios(b, _sample(4, 1.0), [1.0] * 4),
        _with_ratios(b, _sample(4, -1.0, offset=50), [1.0] * 4),
    ]

    def first_moment_norm(backend) -> float:
        m = [s["exp_avg"].double() for s in backend.optimizer.state.values()]
        return float(torch.sqrt(sum((x**2).sum() for x in m)))

    free = make_local(max_grad_norm=0.0)
    norm = free.update(samples(free))["grad_norm"]
    assert first_moment_norm(free) == pytest.approx(0.1 * norm, rel=1e-4)
    cap = min(norm, 1.0) / 10  # below 1 as well: any positive max_grad_norm clips
    clipped = make_local(max_grad_norm=cap)
    assert clipped.update(samples(clipped))["grad_norm"] == pytest.approx(norm, rel=1e-4)
    assert first_moment_norm(clipped) == pytest.approx(0.1 * cap, rel=1e-3)


def test_weight_decay_applies_to_matrices_only(make_local):
    backend = make_local(weight_decay=0.1, learning_rate=1e-2, betas=(0.8, 0.95))
    named = dict(backend.model.named_parameters())
    decay, no_decay = backend.optimizer.param_groups
    assert decay["weight_decay"] == 0.1 and no_decay["weight_decay"] == 0.0
    assert decay["betas"] == no_decay["betas"] == (0.8, 0.95)
    ids = lambda group: {id(p) for p in group["params"]}  # noqa: E731
    assert ids(decay) == {id(p) for p in named.values() if p.dim() >= 2}
    assert ids(no_decay) == {id(p) for p in named.values() if p.dim() < 2}
    assert ids(no_decay)  # the model has biases / norm weights
    # behaviour: a zero-advantage sample gives zero gradients, so the only change is decoupled
    # weight decay, p <- p * (1 - lr * wd) = p * 0.999 on matrices; vectors stay put
    before = {n: p.detach().clone() for n, p in named.items()}
    backend.update([_with_ratios(backend, _sample(3, 0.0), [1.0] * 3)])
    for n, p in named.items():
        expected = before[n] * (1 - 1e-2 * 0.1) if p.dim() >= 2 else before[n]
        assert torch.allclose(p, expected, rtol=0, atol=1e-7), n


def _state(backend) -> tuple:
    """Everything a checkpoint must bring back: weights, optimizer state, RNGs, step."""
    weights = [p.detach().clone() for p in backend.model.parameters()]
    opt = backend.optimizer.state_dict()
    moments = [
        (int(s["step"]), s["exp_avg"].clone(), s["exp_avg_sq"].clone())
        for s in opt["state"].values()
    ]
    return weights, moments, backend._sampler_rng.get_state(), torch.get_rng_state(), backend.step


def _same(a: tuple, b: tuple) -> bool:
    wa, ma, ra, ta, sa = a
    wb, mb, rb, tb, sb = b
    return (
        len(wa) == len(wb)
        and all(torch.equal(x, y) for x, y in zip(wa, wb))
        and len(ma) == len(mb)
        and all(
            i == j and torch.equal(x, y) and torch.equal(u, v)
            for (i, x, u), (j, y, v) in zip(ma, mb)
        )
        and torch.equal(ra, rb)
        and torch.equal(ta, tb)
        and sa == sb
    )


def _batch(backend, advantage: float = 1.0) -> list[Sample]:
    return [
        _with_ratios(backend, _sample(4, advantage), [1.0] * 4),
        _with_ratios(backend, _sample(3, -advantage, offset=40), [1.0] * 3),
    ]


def test_save_and_load_restore_weights_optimizer_rngs_and_step(make_local, tmp_path):
    from spade.backends import SamplingParams

    a = make_local(seed=1, learning_rate=1e-2)
    a.update(_batch(a))
    a.sample([[{"role": "user", "content": "hi"}]], SamplingParams(max_tokens=3))  # moves its RNG
    a.save(tmp_path / "ckpt")
    saved = _state(a)
    b = make_local(seed=2, learning_rate=1e-2)  # other weights, other RNG streams
    torch.manual_seed(123)
    assert not _same(_state(b), saved)
    b.load(tmp_path / "ckpt")
    assert _same(_state(b), saved)
    assert b.step == 1
    # and both continue identically: the same update, the same unseeded sample
    batch = _batch(a)
    a.update(batch)
    b.update(batch)
    assert _same(_state(a), _state(b))
    prompt = [[{"role": "user", "content": "go"}]]
    assert a.sample(prompt, SamplingParams(max_tokens=6)) == b.sample(
        prompt, SamplingParams(max_tokens=6)
    )


def test_load_refuses_a_checkpoint_of_other_weights(make_local, tmp_path):
    a = make_local()
    a.save(tmp_path / "ckpt")
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(tmp_path / "ckpt" / "weights.safetensors"))
    name = sorted(tensors)[0]
    tensors["not.a.weight"] = tensors.pop(name)
    save_file(tensors, str(tmp_path / "ckpt" / "weights.safetensors"))
    with pytest.raises(ValueError, match=r"does not match the model: missing \['" + name):
        make_local().load(tmp_path / "ckpt")


def test_sft_step_takes_the_mean_nll_of_the_trained_tokens(make_local):
    # nll = -(sum of the trained tokens' logprobs) / (number of trained tokens), at temperature 1
    backend = make_local(learning_rate=1e-2, max_grad_norm=1.0)
    samples = [_sample(4, 0.0), _sample(2, 0.0, offset=30)]
    scores = backend.score(samples)
    trained = [lp for s, sc in zip(samples, scores) for lp, m in zip(sc, s.loss_mask) if m]
    assert len(trained) == 6
    out = backend.sft_step(samples)
    assert out["nll"] == pytest.approx(-sum(trained) / 6, rel=1e-5)
    assert out["trained_tokens"] == 6.0 and backend.step == 1
    assert out["grad_norm"] > 0
    m = [s["exp_avg"].double() for s in backend.optimizer.state.values()]
    clipped = min(out["grad_norm"], 1.0)  # first moment = 0.1 * the clipped gradient
    assert float(torch.sqrt(sum((x**2).sum() for x in m))) == pytest.approx(0.1 * clipped, rel=1e-3)
    after = backend.score(samples)
    new = [lp for s, sc in zip(samples, after) for lp, m in zip(sc, s.loss_mask) if m]
    assert sum(new) > sum(trained)  # the step raised the likelihood of the targets
    with pytest.raises(ValueError, match="trained tokens"):
        backend.sft_step([Sample((1, 2), (0, 0), (0.0, 0.0), 0.0, "agent")])


def test_sft_step_without_prompt_gradient_has_the_same_loss_and_skips_the_prompts_gradient(
    make_local,
):
    """The prompt runs forward without gradient: the same NLL, a different (smaller) gradient
    (nothing flows through the prompt's encoding), and the targets still become likelier."""
    samples = [_sample(4, 0.0), _sample(2, 0.0, offset=30)]
    full, stopped = make_local(learning_rate=1e-2), make_local(learning_rate=1e-2)
    before = full.score(samples)
    a = full.sft_step(samples)
    b = stopped.sft_step(samples, prompt_gradient=False)
    assert b["nll"] == pytest.approx(a["nll"], rel=1e-5)
    assert b["trained_tokens"] == a["trained_tokens"] == 6.0
    assert 0 < b["grad_norm"] != pytest.approx(a["grad_norm"], rel=1e-3)
    after = stopped.score(samples)
    trained = [
        (lp0, lp1)
        for s, x, y in zip(samples, before, after)
        for lp0, lp1, m in zip(x, y, s.loss_mask)
        if m
    ]
    assert sum(y for _, y in trained) > sum(x for x, _ in trained)


def test_logprobs_at_selected_positions_match_the_full_projection(make_local):
    # PPO projects only the trained positions onto the vocabulary; the values there must be
    # those of the whole-sequence forward, the rest 0, and the gradient must reach the model
    backend = make_local()
    sample = _sample(5, 1.0)
    batch = backend._collate([sample])
    with torch.no_grad():
        logits = backend.model(input_ids=batch["ids"], attention_mask=batch["attn"]).logits
    full = torch.log_softmax(logits[:, :-1].float(), -1).gather(-1, batch["ids"][:, 1:, None])
    select = batch["mask"].bool()
    assert 0 < int(select.sum()) < select.numel()
    logp, entropy = backend._logprobs(backend.model, batch, select, with_entropy=True)
    assert torch.allclose(logp[select], full[..., 0][select], atol=1e-5)
    assert bool((logp[~select] == 0).all()) and bool((entropy[~select] == 0).all())
    assert bool((entropy[select] > 0).all())
    logp.sum().backward()
    assert any(
        p.grad is not None and bool(p.grad.abs().sum() > 0) for p in backend.model.parameters()
    )


def test_a_model_that_soft_caps_its_logits_is_projected_through_its_own_forward(torch_threads):
    # Gemma 2 soft-caps logits after the output layer (cap * tanh(x / cap)), Cohere and Granite
    # scale them: projecting the hidden states alone would skip that, so such a model takes its
    # whole forward; a plain model's projection at the selected positions equals its forward
    from transformers import (
        CohereConfig,
        CohereForCausalLM,
        Gemma2Config,
        Gemma2ForCausalLM,
        GraniteConfig,
        GraniteForCausalLM,
        LlamaConfig,
        LlamaForCausalLM,
    )

    from spade.backends.training import _logits_at

    torch.manual_seed(0)
    small = {"vocab_size": 64, "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1}
    small |= {"num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 8}
    ids = torch.tensor([[3, 9, 27, 5, 40, 11]])
    select = torch.tensor([[False, True, False, True, True, False]])
    gemma = Gemma2ForCausalLM(Gemma2Config(**small, final_logit_softcapping=0.05)).eval()
    cohere = CohereForCausalLM(CohereConfig(**small, logit_scale=0.25))  # logits x 0.25
    granite = GraniteForCausalLM(GraniteConfig(**small, logits_scaling=4.0))  # logits / 4
    for model in (gemma, cohere.eval(), granite.eval(), LlamaForCausalLM(LlamaConfig(**small))):
        with torch.no_grad():
            expected = model(input_ids=ids).logits[select]
            got = _logits_at(model, select, input_ids=ids)
        assert torch.allclose(got, expected, atol=1e-6), type(model).__name__
    with torch.no_grad():  # the cap matters here: the projection alone is another result
        hidden = gemma.get_decoder()(input_ids=ids).last_hidden_state
        uncapped = gemma.get_output_embeddings()(hidden[select])
        assert not torch.allclose(uncapped, gemma(input_ids=ids).logits[select], atol=1e-3)


def test_truncated_importance_sampling_weights_each_token_by_the_capped_mismatch(make_local):
    # Sampler logprobs log(3) below the trainer's on every token (a sampler that disagrees):
    # with tis_cap=2 the PPO ratio is taken against the trainer's logprobs (ratio 1 at the
    # start: nothing clipped) and every token's term is weighted min(3, 2) = 2. So the update
    # equals a plain update on the trainer's own logprobs with every advantage doubled.
    tis = make_local(tis_cap=2.0, weight_decay=0.0, max_grad_norm=0.0)
    plain = make_local(weight_decay=0.0, max_grad_norm=0.0)
    base = [_sample(3, 1.0), _sample(2, -0.5, offset=50)]
    exact = [_with_ratios(tis, s, [1.0] * 3) for s in base]  # the trainer's logprobs
    drifted = [_with_ratios(tis, s, [3.0] * 3) for s in base]  # sampler: log(3) lower
    doubled = [
        Sample(s.token_ids, s.loss_mask, s.logprobs, 2 * s.advantage, "agent") for s in exact
    ]
    metrics = tis.update(drifted)
    reference = plain.update(doubled)
    for p, q in zip(tis.model.parameters(), plain.model.parameters()):
        assert torch.allclose(p, q, atol=1e-6)
    assert metrics["tis_weight"] == pytest.approx(2.0)
    assert metrics["tis_capped"] == pytest.approx(1.0)
    # KL(sampler || trainer), k3 with gap log(3): 1/3 + log(3) - 1
    assert metrics["mismatch_kl"] == pytest.approx(1 / 3 + math.log(3) - 1, abs=1e-5)
    assert metrics["pg_loss"] == pytest.approx(reference["pg_loss"], abs=1e-6)
    assert metrics["ratio"] == pytest.approx(1.0, abs=1e-6)
    # without TIS the same drifted samples are a ratio of 3, clipped: a different update
    off = make_local(weight_decay=0.0, max_grad_norm=0.0)
    assert off.update(drifted)["clip_frac"] > 0


def _prompted(prompt: int, n_reply: int, first: int) -> Sample:
    """`prompt` untrained tokens then `n_reply` trained ones, ids counting up from `first` (all
    distinct, so each id's embedding row is used at one position only)."""
    ids = tuple(range(first, first + prompt + n_reply))
    return Sample(ids, (0,) * prompt + (1,) * n_reply, (0.0,) * len(ids), 0.0, "agent")


def test_sft_step_counts_steps_clips_only_with_a_norm_and_says_what_is_missing(make_local):
    backend = make_local(learning_rate=1e-2, max_grad_norm=0.0)  # 0: no clipping
    samples = [_sample(4, 0.0)]
    out = backend.sft_step(samples)
    m = [s["exp_avg"].double() for s in backend.optimizer.state.values()]
    # the first moment is 0.1 x the whole (unclipped) gradient
    assert float(torch.sqrt(sum((x**2).sum() for x in m))) == pytest.approx(
        0.1 * out["grad_norm"], rel=1e-3
    )
    backend.sft_step(samples)
    assert backend.step == 2
    with pytest.raises(ValueError, match=r"^sft_step needs samples with trained tokens$"):
        backend.sft_step([Sample((1, 2), (0, 0), (0.0, 0.0), 0.0, "agent")])


def test_sft_step_prompt_gradient_reaches_the_prompt_embeddings_or_not(make_local, tmp_path):
    # the first prompt token's id occurs nowhere else: in a model with its own LM head (untied,
    # so no row gets a gradient through the output layer) its embedding row gets a gradient
    # only if the prompt ran with gradient. Without it, sequences with different prompt
    # lengths (each trained on its own) give the same NLL as with it.
    from spade.backends.tiny import tiny_model_path
    from spade.backends.torch_setup import untie_embeddings

    make_local()
    untied = str(untie_embeddings(tiny_model_path("tiny-test"), tmp_path / "untied"))
    samples = [_prompted(6, 3, first=40), _prompted(2, 4, first=60)]
    full = make_local(model=untied, learning_rate=1e-2)
    stopped = make_local(model=untied, learning_rate=1e-2)
    a = full.sft_step(samples)
    b = stopped.sft_step(samples, prompt_gradient=False)
    assert b["nll"] == pytest.approx(a["nll"], rel=1e-5)

    def first_moment_of(backend, token: int) -> float:
        embedding = backend.model.get_input_embeddings().weight
        return float(backend.optimizer.state[embedding]["exp_avg"][token].abs().sum())

    assert first_moment_of(full, 40) > 0 and first_moment_of(full, 60) > 0
    assert first_moment_of(stopped, 40) == 0 and first_moment_of(stopped, 60) == 0


class _NotATensor:
    pass


def test_checkpoints_go_anywhere_and_foreign_ones_are_refused_with_reasons(make_local, tmp_path):
    import json

    a = make_local()
    ckpt = tmp_path / "runs" / "x" / "ckpt"  # parents created
    a.save(ckpt)
    a.save(ckpt)  # and an existing folder overwritten
    state = json.loads((ckpt / "state.json").read_text())
    assert state["step"] == 0 and state["model_path"] == a.model_path
    assert state["config"]["seed"] == a.config.seed
    # another tokenizer: refused, naming both models
    state.update(tokenizer_sha256="0" * 64, model_path="/models/other")
    (ckpt / "state.json").write_text(json.dumps(state))
    message = (
        f"checkpoint {ckpt} was trained with another tokenizer (model /models/other); this "
        f"backend uses {a.model_path}. Point LocalConfig.model at the checkpoint's model."
    )
    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        a.load(ckpt)
    # weights of another model: the first 5 missing and unexpected names only
    a.save(ckpt)
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(ckpt / "weights.safetensors"))
    names = sorted(tensors)[:7]
    for i, name in enumerate(names):
        tensors[f"other.{i}"] = tensors.pop(name)
    save_file(tensors, str(ckpt / "weights.safetensors"))
    shown = f"missing {names[:5]}, unexpected {[f'other.{i}' for i in range(5)]}"
    with pytest.raises(ValueError, match=re.escape(shown) + "$"):
        a.load(ckpt)
    # a pickle that is not plain tensors (a checkpoint from elsewhere) is not unpickled
    a.save(ckpt)
    torch.save({"torch": _NotATensor()}, ckpt / "rng.pt")
    with pytest.raises(pickle.UnpicklingError, match=r"Weights only load failed"):
        a.load(ckpt)
    a.save(ckpt)
    torch.save({"state": {0: _NotATensor()}, "param_groups": []}, ckpt / "optimizer.pt")
    with pytest.raises(pickle.UnpicklingError, match=r"Weights only load failed"):
        a.load(ckpt)


def test_a_sample_without_trained_tokens_changes_nothing_in_an_update(make_local):
    # micro-batches of one sample each: the untrained one comes first and must be skipped,
    # not end the update; the result equals the update without it
    untrained = Sample((5, 6, 7), (0, 0, 0), (0.0,) * 3, 1.0, "agent")
    a, b = make_local(micro_batch_tokens=8), make_local(micro_batch_tokens=8)
    batch = _batch(a)
    ma = a.update([untrained, *batch])
    mb = b.update(batch)
    assert _same(_state(a), _state(b))
    assert ma["pg_loss"] == pytest.approx(mb["pg_loss"], rel=1e-6)
    with pytest.raises(ValueError, match=r"^update needs at least one sample$"):
        a.update([])


def test_scores_start_with_a_zero(make_local):
    backend = make_local()
    assert all(row[0] == 0.0 for row in backend.score(_batch(backend)))  # no logprob for token 0


@pytest.mark.parametrize("micro_batch_tokens", [8, 4096])  # one micro-batch per sample, or one
def test_tis_metrics_and_token_counts_add_up_over_micro_batches(make_local, micro_batch_tokens):
    # three samples whose sampler was off by log 2, 0 and log 4 (weights 2, 1, 4; cap 10):
    # the mean TIS weight over the 4 + 3 + 2 trained tokens is (2*4 + 1*3 + 4*2) / 9 = 19/9,
    # in one micro-batch or three, and over two minibatches every trained token is counted
    backend = make_local(tis_cap=10.0, micro_batch_tokens=micro_batch_tokens, num_minibatches=2)
    samples = [
        _with_ratios(backend, _sample(4, 1.0), [2.0] * 4),
        _with_ratios(backend, _sample(3, -1.0, offset=40), [1.0] * 3),
        _with_ratios(backend, _sample(2, 1.0, offset=80), [4.0] * 2),
    ]
    metrics = backend.update(samples)
    assert metrics["tis_weight"] == pytest.approx(19 / 9, rel=1e-4)
    assert metrics["tis_capped"] == 0.0
    assert metrics["trained_tokens"] == 9.0


def test_a_minibatch_without_trained_tokens_is_skipped_and_one_token_trains(make_local):
    # two minibatches: the first holds only an untrained sample (no optimizer step), the second
    # a single trained token; the result equals one update on that sample alone
    untrained = Sample((5, 6, 7), (0, 0, 0), (0.0,) * 3, 1.0, "agent")
    a, b = make_local(num_minibatches=2), make_local()
    one = _with_ratios(a, _sample(1, 1.0), [1.0])
    a.update([untrained, one])
    b.update([one])
    assert _same(_state(a), _state(b))
    assert not _same(_state(a), _state(make_local()))  # and it did train


def test_update_metrics_are_per_token_means_with_counts_per_role_and_the_step(make_local):
    # learning rate 0: the weights never move, so two minibatches of the same sample take the
    # same gradient and grad_norm (the mean over optimizer steps) equals one step's norm.
    # On-policy (ratio 1) the policy-gradient loss of a token is -advantage: -0.5 for the one
    # trained token of `one`, a mean over 1 token. Roles are counted apart; step counts updates.
    def backend(**ppo):
        return make_local(learning_rate=0.0, max_grad_norm=0.0, **ppo)

    b = backend(num_minibatches=2)
    one = _with_ratios(b, _sample(1, 0.5), [1.0])
    designer = dataclasses.replace(
        _with_ratios(b, _sample(3, 0.5, offset=40), [1.0] * 3), role="designer"
    )
    single = backend().update([one])
    assert single["pg_loss"] == pytest.approx(-0.5, rel=1e-5)
    assert single["loss"] == single["pg_loss"]  # no KL term
    assert (single["trained_tokens"], single["sequences"], single["step"]) == (1.0, 1.0, 1.0)
    twice = b.update([one, one])
    assert twice["grad_norm"] == pytest.approx(single["grad_norm"], rel=1e-5)
    assert twice["grad_norm"] > 0 and twice["step"] == 1.0
    # optimizer steps: one per non-empty minibatch, at most the number of samples
    assert (single["optimizer_steps"], twice["optimizer_steps"]) == (1.0, 2.0)
    mixed = b.update([one, designer])
    assert (mixed["trained_tokens/agent"], mixed["trained_tokens/designer"]) == (1.0, 3.0)
    assert (mixed["trained_tokens"], mixed["sequences"], mixed["step"]) == (4.0, 2.0, 2.0)


def test_an_update_with_nothing_to_train_reports_zeros(make_local):
    # every sample untrained: no minibatch runs, so every loss term and the norm are 0 (with a
    # KL coefficient too), and the step still counts
    untrained = Sample((5, 6, 7), (0, 0, 0), (0.0,) * 3, 1.0, "agent")
    metrics = make_local(kl_coef=0.1).update([untrained])
    assert (metrics["loss"], metrics["grad_norm"], metrics["trained_tokens"]) == (0.0, 0.0, 0.0)
    assert (metrics["sequences"], metrics["step"], metrics["optimizer_steps"]) == (1.0, 1.0, 0.0)


# ---------------------------------------------------------------- the update's direction


def _trained_logprob_sum(backend, sample: Sample) -> float:
    """The sum of `backend.score`'s logprobs over the sample's trained tokens."""
    return sum(lp for lp, m in zip(backend.score([sample])[0], sample.loss_mask) if m)


def _gradient_of_trained_logprobs(backend, sample: Sample) -> list:
    """d(sum of the trained tokens' logprobs) / d(each parameter), from the model's forward."""
    batch = backend._collate([sample])
    with torch.enable_grad():
        logits = backend.model(input_ids=batch["ids"], attention_mask=batch["attn"]).logits
        logp = torch.log_softmax(logits[:, :-1].float(), -1).gather(-1, batch["ids"][:, 1:, None])
        total = (logp[..., 0] * batch["mask"]).sum()
        return list(torch.autograd.grad(total, list(backend.model.parameters())))


def test_an_update_raises_the_rewarded_reply_and_lowers_the_punished_one_by_value(make_local):
    # A rewarded reply (A = +1) and a punished one (A = -1), 4 trained tokens each, on-policy
    # (ratio 1, nothing clipped). With J_R and J_P the gradients of each reply's summed logprob,
    # the loss is -(1/8)(sum logp_R - sum logp_P), so its gradient is g = -(J_R - J_P) / 8.
    # Adam's first step (no weight decay, no clipping) moves each weight by
    #   d = -lr * m_hat / (sqrt(v_hat) + eps) = -lr * g / (|g| + eps)   (m_hat = g, v_hat = g^2)
    # and to first order in lr the replies' summed logprobs move by J_R . d and J_P . d: the
    # rewarded one up, the punished one down. Measured through `score`, within 5% at lr 1e-4
    # (the rest is the second-order term).
    lr, eps = 1e-4, 1e-8
    backend = make_local(learning_rate=lr, weight_decay=0.0, max_grad_norm=0.0)
    rewarded = _with_ratios(backend, _sample(4, 1.0), [1.0] * 4)
    punished = _with_ratios(backend, _sample(4, -1.0, offset=50), [1.0] * 4)
    before = [_trained_logprob_sum(backend, s) for s in (rewarded, punished)]
    j_r = _gradient_of_trained_logprobs(backend, rewarded)
    j_p = _gradient_of_trained_logprobs(backend, punished)
    step = [-lr * g / (g.abs() + eps) for g in (-(a - b) / 8 for a, b in zip(j_r, j_p))]
    predicted = [float(sum((j * d).sum() for j, d in zip(js, step))) for js in (j_r, j_p)]

    backend.update([rewarded, punished])
    after = [_trained_logprob_sum(backend, s) for s in (rewarded, punished)]
    moved = [a - b for a, b in zip(after, before)]
    assert moved[0] > 0 > moved[1], (before, after)
    assert moved[0] == pytest.approx(predicted[0], rel=0.05)
    assert moved[1] == pytest.approx(predicted[1], rel=0.05)
    # and the change is far above float noise: at least 1e-3 nats over 4 tokens
    assert min(abs(m) for m in moved) > 1e-3, moved


# ---------------------------------------------------------------- per-role normalisation


def _gradient_of_update(make_local, samples: list[Sample], **ppo) -> list:
    """The gradient one update takes on a fresh backend: Adam's first moment after one step is
    (1 - beta1) * g = 0.1 * g (no clipping; learning rate 0, so the weights stay put)."""
    backend = make_local(learning_rate=0.0, weight_decay=0.0, max_grad_norm=0.0, **ppo)
    backend.update(samples)
    return [backend.optimizer.state[p]["exp_avg"] / 0.1 for p in backend.model.parameters()]


def _combination(a: list, b: list, x: float, y: float) -> list:
    return [x * u + y * v for u, v in zip(a, b)]


def _close(a: list, b: list) -> bool:
    scale = max(float(t.abs().max()) for t in a)
    return all(torch.allclose(u, v, rtol=1e-4, atol=1e-5 * scale) for u, v in zip(a, b))


def _agent_and_designer(make_local) -> tuple[Sample, list[Sample]]:
    """A 2-token Agent reply with A = +1 and two 4-token Designer replies with A = -1, on-policy.
    Each is its own micro-batch at a budget of 8 tokens (3 prompt tokens + the reply)."""
    probe = make_local()
    agent = _with_ratios(probe, _sample(2, 1.0), [1.0] * 2)
    designer = [
        dataclasses.replace(
            _with_ratios(probe, _sample(4, -1.0, offset=offset), [1.0] * 4), role="designer"
        )
        for offset in (50, 100)
    ]
    return agent, designer


@pytest.mark.parametrize("micro_batch_tokens", [8, 4096])  # each sample apart, or all together
def test_per_role_gives_a_short_agent_reply_beside_long_designer_ones_its_whole_share(
    make_local, micro_batch_tokens
):
    # With J_a, J_d the gradients of the summed logprobs of the Agent's reply and of the two
    # Designer replies, on-policy (pg = -A per token):
    #   the Agent reply alone:    G_a = -J_a / 2          the Designer replies alone: G_d = J_d / 8
    #   joint (10 tokens):        (-J_a + J_d) / 10 = 0.2 G_a + 0.8 G_d
    #   per_role (2 and 8):       -J_a / 2 + J_d / 8 = G_a + G_d
    # so per_role gives the Agent what it gets alone; joint a fifth of it (its 2 of 10 tokens).
    # Packed one sample per micro-batch, the Designer's normaliser is still its 8 tokens of the
    # minibatch, not the 4 of a micro-batch.
    agent, designer = _agent_and_designer(make_local)
    grad = lambda samples, mode: _gradient_of_update(  # noqa: E731
        make_local,
        samples,
        role_normalisation=mode,
        micro_batch_tokens=micro_batch_tokens,
    )
    g_a, g_d = grad([agent], "per_role"), grad(designer, "per_role")
    per_role, joint = grad([agent, *designer], "per_role"), grad([agent, *designer], "joint")
    assert _close(per_role, _combination(g_a, g_d, 1.0, 1.0))
    assert _close(joint, _combination(g_a, g_d, 0.2, 0.8))
    assert not _close(per_role, joint)  # the test can tell them apart
    # alone, each role's normalisation is the same either way
    assert all(torch.equal(u, v) for u, v in zip(g_a, grad([agent], "joint")))


def test_joint_normalisation_is_the_old_one_whatever_the_roles(make_local):
    # the old normaliser was the minibatch's trained tokens whatever the roles; per_role with a
    # single role divides by the same count (its weight n/n is exactly 1): so joint on a mixed
    # batch equals, bit for bit, per_role on the same batch with every sample one role
    agent, designer = _agent_and_designer(make_local)
    as_agent = [dataclasses.replace(s, role="agent") for s in designer]
    a = make_local(role_normalisation="joint", max_grad_norm=0.0)
    b = make_local(role_normalisation="per_role", max_grad_norm=0.0)
    a.update([agent, *designer])
    b.update([agent, *as_agent])
    assert _same(_state(a), _state(b))


def test_per_role_metrics_are_means_over_each_roles_tokens(make_local):
    # On-policy the pg loss of a token is -A: -1 on the Agent's 2 tokens, +1 on the Designer's 8.
    #   pg_loss = (2 * -1 + 8 * 1) / 10 = 0.6 (over every token, either normalisation)
    #   pg_loss/agent = -1, pg_loss/designer = +1; nothing clipped or moved (clip_frac, kl 0)
    # entropy/agent is the Agent reply's mean entropy, as in an update on it alone; entropy the
    # token-weighted mean of the two roles'. A role with no trained token gets no per-role keys.
    agent, designer = _agent_and_designer(make_local)
    alone = make_local(learning_rate=0.0).update([agent])
    assert "pg_loss/designer" not in alone and "entropy/designer" not in alone
    assert alone["pg_loss/agent"] == pytest.approx(-1.0, abs=1e-5)
    assert alone["entropy/agent"] == pytest.approx(alone["entropy"], rel=1e-6)
    for mode in ("joint", "per_role"):
        m = make_local(learning_rate=0.0, role_normalisation=mode).update([agent, *designer])
        assert m["pg_loss"] == pytest.approx(0.6, abs=1e-5)
        assert m["pg_loss/agent"] == pytest.approx(-1.0, abs=1e-5)
        assert m["pg_loss/designer"] == pytest.approx(1.0, abs=1e-5)
        for role in ("agent", "designer"):
            assert m[f"clip_frac/{role}"] == 0.0
            assert m[f"approx_kl/{role}"] == pytest.approx(0.0, abs=1e-6)
        assert m["entropy/agent"] == pytest.approx(alone["entropy/agent"], rel=1e-5)
        assert m["entropy"] == pytest.approx(
            (2 * m["entropy/agent"] + 8 * m["entropy/designer"]) / 10, rel=1e-5
        )
        assert (m["trained_tokens/agent"], m["trained_tokens/designer"]) == (2.0, 8.0)


def test_per_role_metrics_count_clipping_and_kl_per_role(make_local):
    # off-policy Agent tokens at ratios 1.5 and 1.1 with A = +1 (1.5 clipped above 1.28), Designer
    # tokens at 1.0, 1.0, 1.0, 0.5 with A = -1 (0.5 clipped below 0.8):
    #   clip_frac/agent = 1/2, clip_frac/designer = 1/4, clip_frac = 2/6
    #   approx_kl per token is the k3 1/r + log r - 1: Agent (k(1.5) + k(1.1)) / 2, Designer
    #   k(0.5) / 4
    def k3(r: float) -> float:
        return 1 / r + math.log(r) - 1

    backend = make_local()
    agent = _with_ratios(backend, _sample(2, 1.0), [1.5, 1.1])
    designer = dataclasses.replace(
        _with_ratios(backend, _sample(4, -1.0, offset=50), [1.0, 1.0, 1.0, 0.5]), role="designer"
    )
    m = backend.update([agent, designer])
    assert (m["clip_frac/agent"], m["clip_frac/designer"]) == (0.5, 0.25)
    assert m["clip_frac"] == pytest.approx(2 / 6)
    assert m["approx_kl/agent"] == pytest.approx((k3(1.5) + k3(1.1)) / 2, rel=1e-4)
    assert m["approx_kl/designer"] == pytest.approx(k3(0.5) / 4, rel=1e-4)


def test_role_normalisation_is_checked():
    from spade.backends.base import PPOConfig

    assert PPOConfig().role_normalisation == "per_role"
    with pytest.raises(ValueError, match="role_normalisation must be 'joint' or 'per_role'"):
        PPOConfig(role_normalisation="per_token")  # type: ignore[arg-type]


def test_warm_up_ramps_the_learning_rate_by_optimizer_step_and_survives_a_reload(
    make_local, tmp_path
):
    # warmup_steps 4, lr 1e-3, 2 minibatches per update: the optimizer steps of the first
    # update use 1e-3 * 1/4 and * 2/4, the second update's 3/4 and 4/4, then 1e-3 flat. A reload
    # from a checkpoint continues the ramp from AdamW's own step count.
    backend = make_local(warmup_steps=4, num_minibatches=2, weight_decay=0.0)
    samples = [_sample(2, 1.0), _sample(2, -1.0, offset=50)]
    seen: list[float] = []
    original = backend.optimizer.step

    def record(*args, **kwargs):
        seen.append(backend.optimizer.param_groups[0]["lr"])
        return original(*args, **kwargs)

    backend.optimizer.step = record
    backend.update(samples)
    assert seen == pytest.approx([2.5e-4, 5e-4])
    backend.save(tmp_path / "ckpt")
    reloaded = make_local(warmup_steps=4, num_minibatches=2, weight_decay=0.0)
    reloaded.load(tmp_path / "ckpt")
    again: list[float] = []
    original_2 = reloaded.optimizer.step

    def record_2(*args, **kwargs):
        again.append(reloaded.optimizer.param_groups[0]["lr"])
        return original_2(*args, **kwargs)

    reloaded.optimizer.step = record_2
    reloaded.update(samples)
    reloaded.update(samples)
    assert again == pytest.approx([7.5e-4, 1e-3, 1e-3, 1e-3])


def test_without_warm_up_the_first_adam_step_moves_every_weight_by_about_the_rate(make_local):
    # why the warm-up exists: whatever the gradient's size (well above Adam's eps), Adam's first
    # step is lr * g / |g| per weight (bias-corrected moments), so a small gradient still moves
    # every weight it touches by ~lr
    backend = make_local(learning_rate=1e-3, weight_decay=0.0, max_grad_norm=0.0)
    before = [p.detach().clone() for p in backend.model.parameters()]
    sample = _sample(2, 1e-2)  # a small advantage: a gradient 100x smaller than at A = 1
    backend.update([_with_ratios(backend, sample, [1.0, 1.0])])
    moved = [
        (q.detach() - p).abs()[(q.detach() - p) != 0]
        for p, q in zip(before, backend.model.parameters())
    ]
    moved = torch.cat([m.flatten() for m in moved if m.numel()])
    assert moved.numel() > 0
    assert float(moved.median()) == pytest.approx(1e-3, rel=0.2)
