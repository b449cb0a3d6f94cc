"""The local sampler's prefix cache (multi-turn KV reuse) and its precision modes, on tiny-test."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from spade.backends import Prompt, SamplingParams, episode_sample  # noqa: E402
from spade.backends.kv_cache import PrefixCache  # noqa: E402

OPENINGS = [
    [{"role": "user", "content": "Guess a number between 1 and 10. Answer \\boxed{n}."}],
    [{"role": "user", "content": "Push the box left, then up, then left again; say \\boxed{L}."}],
    [{"role": "user", "content": "x"}],
]


def play(backend, turns: int, params: SamplingParams, openings=OPENINGS):
    """Every conversation for `turns` turns, each reply followed by an observation."""
    prompts = [Prompt.of(m) for m in openings]
    history: list[list] = [[] for _ in prompts]
    for t in range(turns):
        completions = backend.sample(prompts, params)
        for i, c in enumerate(completions):
            history[i].append(c)
            note = [{"role": "user", "content": f"Turn {t}: that was {'wrong' * (i + 1)}."}]
            prompts[i] = backend.extend(prompts[i], c, note)
    return history


def assert_same_replies(a, b) -> None:
    """The same reply tokens, and logprobs within float rounding, completion by completion."""
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.completion_ids == y.completion_ids
        assert x.logprobs == pytest.approx(y.logprobs, abs=1e-4)


def test_cached_turns_sample_what_recomputing_them_samples(make_local):
    cached, fresh = make_local(), make_local(prefix_cache_mb=0)
    params = SamplingParams(max_tokens=9, temperature=0.8, seed=3)
    a, b = play(cached, 4, params), play(fresh, 4, params)
    assert_same_replies([c for conv in a for c in conv], [c for conv in b for c in conv])
    cache = cached.prefix_cache
    # Turns 2-4 of all three conversations started from their stored prefix.
    assert (cache.hits, cache.misses) == (9, 3)
    assert fresh.prefix_cache is None
    # Whatever was reused, the training sequence is the one the tokens make (token-in/out).
    for conv in a:
        sample = episode_sample(conv, 1.0, "agent")
        rescored = [lp for lp, m in zip(cached.score([sample])[0], sample.loss_mask) if m]
        assert rescored == pytest.approx([lp for c in conv for lp in c.logprobs], abs=1e-4)


def test_a_batch_mixes_cached_and_new_conversations(make_local):
    cached, fresh = make_local(), make_local(prefix_cache_mb=0)
    params = SamplingParams(max_tokens=6, temperature=0, seed=1)
    outs = []
    for backend in (cached, fresh):
        first = backend.sample([Prompt.of(OPENINGS[0])], params)[0]
        second = backend.extend(
            Prompt.of(OPENINGS[0]), first, [{"role": "user", "content": "again"}]
        )
        outs.append(
            backend.sample([second, Prompt.of(OPENINGS[1]), Prompt.of(OPENINGS[2])], params)
        )
    assert [c.completion_ids for c in outs[0]] == [c.completion_ids for c in outs[1]]
    assert cached.prefix_cache.hits == 1


def test_the_cache_is_dropped_when_the_weights_change(make_local):
    backend = make_local(learning_rate=5e-2)
    params = SamplingParams(max_tokens=6, seed=2)
    history = play(backend, 1, params)
    assert len(backend.prefix_cache) == 3
    backend.update([episode_sample(conv, 1.0, "agent") for conv in history])
    assert len(backend.prefix_cache) == 0
    twin = make_local(learning_rate=5e-2, prefix_cache_mb=0)
    twin.update([episode_sample(conv, 1.0, "agent") for conv in play(twin, 1, params)])
    # The next turn is computed with the new weights, exactly as a backend without a cache does.
    after = [
        backend.extend(Prompt.of(m), conv[0], [{"role": "user", "content": "next"}])
        for m, conv in zip(OPENINGS, history)
    ]
    x = backend.sample(after, SamplingParams(max_tokens=6, temperature=0))
    y = twin.sample(after, SamplingParams(max_tokens=6, temperature=0))
    assert [c.completion_ids for c in x] == [c.completion_ids for c in y]
    assert backend.prefix_cache.hits == 0


def _kv(n_tokens: int, value: float = 0.0):
    t = torch.full((1, n_tokens, 2), value)
    return [(t, t.clone())]  # one layer: 2 * n_tokens * 2 floats = 16 * n_tokens bytes


def test_prefix_cache_takes_the_longest_strict_prefix_once():
    cache = PrefixCache(max_bytes=10_000)
    cache.put((1, 2), _kv(2, 1.0))
    cache.put((1, 2, 3), _kv(3, 2.0))
    cache.put((9, 9, 9, 9), _kv(4))
    n, kv = cache.take([1, 2, 3, 4])
    assert n == 3 and kv is not None and float(kv[0][0][0, 0, 0]) == 2.0
    n, kv = cache.take([1, 2, 3, 4])  # (1, 2, 3) is gone: the next longest is (1, 2)
    assert n == 2 and kv is not None and float(kv[0][0][0, 0, 0]) == 1.0
    assert len(cache) == 1
    assert cache.take([9, 9, 9, 9]) == (0, None)  # a prompt must extend the prefix, not equal it
    assert (cache.hits, cache.misses) == (2, 1)


def test_prefix_cache_drops_least_recently_stored_past_its_budget():
    cache = PrefixCache(max_bytes=16 * 10)  # room for 10 tokens
    cache.put((1,) * 4, _kv(4))
    cache.put((2,) * 4, _kv(4))
    assert cache.bytes == 16 * 8
    cache.put((3,) * 4, _kv(4))  # 12 tokens > 10: the oldest goes
    assert len(cache) == 2 and cache.bytes == 16 * 8
    assert cache.take([1] * 5) == (0, None)
    assert cache.take([2] * 5)[0] == 4
    cache.put((4,) * 11, _kv(11))  # larger than the whole budget: not stored
    assert len(cache) == 1


@pytest.mark.parametrize("precision", ["fp32", "bf16-mixed"])
def test_sampling_and_training_are_bit_exact_in_both_precisions(make_local, precision):
    runs = []
    for _ in range(2):
        backend = make_local(seed=5, precision=precision, learning_rate=1e-2)
        assert backend.precision == precision
        history = play(backend, 2, SamplingParams(max_tokens=7, seed=11))
        backend.update(
            [episode_sample(conv, (-1.0) ** i, "agent") for i, conv in enumerate(history)]
        )
        after = play(backend, 2, SamplingParams(max_tokens=7, seed=12))
        runs.append((history, after, [p.detach().clone() for p in backend.model.parameters()]))
    (h1, a1, w1), (h2, a2, w2) = runs
    for x, y in zip([c for conv in h1 + a1 for c in conv], [c for conv in h2 + a2 for c in conv]):
        assert x.completion_ids == y.completion_ids and x.logprobs == y.logprobs
    assert all(torch.equal(p, q) for p, q in zip(w1, w2))


def test_auto_precision_follows_the_cpu(make_local):
    from spade.backends.torch_setup import cpu_has_native_bf16

    backend = make_local(precision="auto")
    assert backend.precision == ("bf16-mixed" if cpu_has_native_bf16() else "fp32")


def test_bf16_autocast_on_cpu_keeps_attention_in_fp32(make_local):
    from spade.backends._hf import FP32_ATTENTION

    mixed, plain = make_local(precision="bf16-mixed"), make_local(precision="fp32")
    assert mixed.model.config._attn_implementation == FP32_ATTENTION
    assert plain.model.config._attn_implementation == "sdpa"
    ids = torch.tensor([[5, 9, 200, 31, 7, 64, 12]])
    with torch.no_grad():
        exact = plain.model(input_ids=ids).logits
        with torch.autocast("cpu", dtype=torch.bfloat16):
            ours = mixed.model(input_ids=ids).logits
            plain.model.set_attn_implementation("sdpa")
            stock = plain.model(input_ids=ids).logits  # bf16 attention as transformers runs it
    # Same weights (seed 0); fp32 attention is at least as close to fp32 as bf16 attention.
    assert (ours.float() - exact).abs().max() <= (stock.float() - exact).abs().max() + 1e-3
    assert torch.allclose(ours.float(), exact, atol=0.1)


def test_prompts_fed_in_chunks_sample_what_one_pass_samples(make_local):
    # prefill_tokens=2 feeds three left-padded prompts one column at a time (and later turns'
    # new tokens after their cached prefixes): the replies and their logprobs must not change
    whole, chunked = make_local(), make_local(prefill_tokens=2)
    params = SamplingParams(max_tokens=7, temperature=0.9, seed=5)
    a, b = play(whole, 3, params), play(chunked, 3, params)
    assert_same_replies([c for conv in a for c in conv], [c for conv in b for c in conv])
    assert chunked.prefix_cache.hits == 6


def test_a_mixed_batch_is_sampled_in_two_passes_with_each_rows_own_seed(make_local):
    # one conversation has a cached prefix, two do not: the batch splits into two passes, and
    # each row samples what it samples in a batch of its own (its seed travels with it)
    backend = make_local()
    params = SamplingParams(max_tokens=6, temperature=1.0, seed=11)
    first = backend.sample([Prompt.of(OPENINGS[0])], params)[0]
    second = backend.extend(Prompt.of(OPENINGS[0]), first, [{"role": "user", "content": "more"}])
    batch = [Prompt.of(OPENINGS[1]), second, Prompt.of(OPENINGS[2])]
    mixed = backend.sample(batch, params)
    assert backend.prefix_cache.hits == 1
    alone = make_local(prefix_cache_mb=0).sample(batch, params)
    assert_same_replies(mixed, alone)


def test_length_groups_bound_the_padding():
    from spade.backends.sampling import length_groups

    # 29 prompts of 100 tokens and one of 2,500: padded together, 75,000 positions for 5,400
    assert length_groups([100] * 29 + [2500]) == [list(range(29)), [29]]
    assert length_groups([50, 60, 70, 80]) == [[0, 1, 2, 3]]  # close lengths: one batch
    assert length_groups([10, 30, 1000, 1100, 900, 20]) == [[0, 5, 1], [4, 2, 3]]
    assert length_groups([7]) == [[0]] and length_groups([]) == []
    for lengths in ([3, 9, 27, 81, 243], [5] * 8 + [400] * 3):
        for group in length_groups(lengths):
            longest = max(lengths[i] for i in group)
            assert len(group) == 1 or longest * len(group) <= 2 * sum(lengths[i] for i in group)


def test_a_batch_of_uneven_prompts_samples_what_one_padded_batch_samples(make_local, monkeypatch):
    from spade.backends import sampling

    long = [{"role": "user", "content": "Sort these numbers: " + ", ".join(map(str, range(90)))}]
    batch = [Prompt.of(m) for m in (OPENINGS[0], long, OPENINGS[2], OPENINGS[1])]
    params = SamplingParams(max_tokens=6, temperature=1.0, seed=3)
    passes: list[int] = []
    real = sampling.length_groups
    monkeypatch.setattr(
        sampling, "length_groups", lambda n, s: passes.append(len(real(n, s))) or real(n, s)
    )
    grouped = make_local(prefix_cache_mb=0).sample(batch, params)
    assert passes[0] == 2  # the long prompt goes alone
    monkeypatch.setattr(sampling, "length_groups", lambda n, s: [list(range(len(n)))])
    padded = make_local(prefix_cache_mb=0).sample(batch, params)
    assert_same_replies(grouped, padded)
