"""Local torch/transformers backend specifics on the ~1M-parameter tiny-test model."""

from __future__ import annotations

import contextlib

import pytest

torch = pytest.importorskip("torch")

from spade.backends import Prompt, SamplingParams, episode_sample  # noqa: E402

PROMPTS = [
    [{"role": "user", "content": "Guess a number between 1 and 10. Answer \\boxed{n}."}],
    [
        {
            "role": "user",
            "content": "Which lever opens the gate? Answer \\boxed{A}, \\boxed{B} or \\boxed{C}.",
        }
    ],
    [{"role": "user", "content": "hi"}],
]


@pytest.fixture
def local(make_local):
    return make_local()


def ids(completions):
    return [c.completion_ids for c in completions]


def test_seeds_pick_the_stream_and_greedy_ignores_them(local):
    a = local.sample(PROMPTS, SamplingParams(max_tokens=8, seed=1))
    assert ids(a) != ids(local.sample(PROMPTS, SamplingParams(max_tokens=8, seed=2)))
    greedy = local.sample(PROMPTS, SamplingParams(max_tokens=8, temperature=0, seed=1))
    assert ids(greedy) == ids(
        local.sample(PROMPTS, SamplingParams(max_tokens=8, temperature=0, seed=2))
    )
    assert ids(greedy) == ids(local.sample(PROMPTS, SamplingParams(max_tokens=8, top_k=1, seed=3)))


def test_a_prompt_gets_the_same_reply_whatever_shares_its_batch(make_local):
    one_by_one = make_local()
    batched = make_local()
    object.__setattr__(one_by_one.config, "max_batch_size", 1)
    params = SamplingParams(max_tokens=10, seed=4, top_p=0.9)
    a, b = one_by_one.sample(PROMPTS, params), batched.sample(PROMPTS, params)
    assert ids(a) == ids(b)
    for x, y in zip(a, b):
        assert x.logprobs == pytest.approx(y.logprobs, abs=1e-4)


def test_sampled_logprobs_match_rescoring_at_the_temperature(local):
    params = SamplingParams(max_tokens=12, seed=5, temperature=0.7, top_p=0.8)
    completions = local.sample(PROMPTS, params)
    for c in completions:
        s = episode_sample([c], 1.0, "agent")
        assert s.temperature == 0.7
        rescored = [lp for lp, m in zip(local.score([s])[0], s.loss_mask) if m]
        assert rescored == pytest.approx(list(c.logprobs), abs=1e-4)


def test_stop_string_ends_the_reply(local):
    free = local.sample(PROMPTS[:1], SamplingParams(max_tokens=24, seed=6))[0]
    assert free.finish_reason == "length"
    stop = free.text[8:11]
    stopped = local.sample(PROMPTS[:1], SamplingParams(max_tokens=24, seed=6, stop=(stop,)))[0]
    assert stopped.finish_reason == "stop"
    assert stop in stopped.text and len(stopped.completion_ids) < len(free.completion_ids)
    assert stopped.completion_ids == free.completion_ids[: len(stopped.completion_ids)]
    assert stop not in local.tokenizer.decode(stopped.completion_ids[:-1])


def test_end_of_turn_token_ends_the_reply_and_is_kept(local):
    free = local.sample(PROMPTS[:1], SamplingParams(max_tokens=10, seed=7))[0]
    local.eot_ids = local.eot_ids | {free.completion_ids[3]}  # pretend the model said "end of turn"
    ended = local.sample(PROMPTS[:1], SamplingParams(max_tokens=10, seed=7))[0]
    assert ended.finish_reason == "stop"
    assert (
        ended.completion_ids
        == free.completion_ids[: free.completion_ids.index(free.completion_ids[3]) + 1]
    )


@contextlib.contextmanager
def _forced(backend, tokens: dict[int, int]):
    """The output layer nudged to pick `tokens[k]` at its k-th call (one call per sampled token;
    the first, the prompt's prefill, gives the first token)."""
    calls = []

    def hook(module, inputs, logits):
        calls.append(1)
        if len(calls) not in tokens:
            return logits
        bonus = torch.zeros(logits.shape[-1])
        bonus[tokens[len(calls)]] = 1e4
        return logits + bonus

    handle = backend.model.get_output_embeddings().register_forward_hook(hook)
    try:
        yield
    finally:
        handle.remove()


def test_a_special_token_ends_the_reply_and_is_left_out_of_its_text(local):
    # the output layer is nudged so that the third token is <|im_end|>, a special token: it ends
    # the reply and stays in the ids (the trainer learns to end turns), but not in the text
    end = local.tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert end in local.eot_ids and "<|im_end|>" in local.tokenizer.all_special_tokens
    with _forced(local, {3: end}):  # call 1 is the prompt's prefill, giving the first token
        [c] = local.sample(PROMPTS[:1], SamplingParams(max_tokens=8, seed=11))
    assert len(c.completion_ids) == 3 and c.completion_ids[-1] == end
    assert c.finish_reason == "stop"
    assert c.text == local.tokenizer.decode(c.completion_ids[:2]) and "<|im_end|>" not in c.text


def test_a_stop_string_is_seen_across_byte_tokens_and_in_special_tokens(local):
    # "x🂡🂡" is 9 byte-level tokens (4 per card): the check looks back over 4 tokens per
    # character of the longest stop string (+4), so the whole stop string is in view
    hit = local._stop_checker(("🂡🂡",))
    ids = local.tokenizer.encode("x🂡🂡", add_special_tokens=False)
    assert len(ids) == 9
    assert hit(ids) and not hit(ids[:-1])
    special = local._stop_checker(("<|im_start|>",))  # a stop string may be a special token's
    chat = local.tokenizer.encode("ab<|im_start|>", add_special_tokens=False)
    assert special(chat) and not special(chat[:-1])
    assert local._stop_checker(()) is None


def test_unseeded_calls_draw_fresh_reproducible_seeds(make_local, monkeypatch):
    import spade.backends.local as local_module

    drawn: list[int] = []
    row_seeds = local_module.row_seeds

    def record(base: int, n: int) -> list[int]:
        drawn.append(base)
        return row_seeds(base, n)

    monkeypatch.setattr(local_module, "row_seeds", record)
    for seed in (0, 0, 1):
        backend = make_local(seed=seed)
        for _ in range(48):
            backend.sample(PROMPTS[2:], SamplingParams(max_tokens=1))
    a, b, c = drawn[:48], drawn[48:96], drawn[96:]
    assert a == b  # the backend's seed fixes the draws
    assert len(set(a)) == 48 and not set(a) & set(c)  # each call a new stream, per backend seed
    assert all(0 <= s < 2**62 for s in drawn)
    backend.sample(PROMPTS[2:], SamplingParams(max_tokens=1, seed=5))
    assert drawn[-1] == 5  # a given seed is used as it is


def test_extend_appends_only_the_template_delta(local):
    params = SamplingParams(max_tokens=6, seed=8)
    first = Prompt.of(PROMPTS[0])
    c1 = local.sample([first], params)[0]
    second = local.extend(first, c1, [{"role": "user", "content": "Too low."}])
    history = c1.prompt_ids + c1.completion_ids
    assert second.token_ids[: len(history)] == history
    delta = local.tokenizer.decode(second.token_ids[len(history) :])
    assert delta == "<|im_end|>\n<|im_start|>user\nToo low.<|im_end|>\n<|im_start|>assistant\n"
    with pytest.raises(ValueError, match="not sampled from this prompt"):
        local.extend(second, c1, [])


def _episodes(backend, n=4):
    completions = backend.sample(PROMPTS * 2, SamplingParams(max_tokens=12, seed=9))[:n]
    return [
        episode_sample([c], advantage=(-1.0) ** i, role="agent") for i, c in enumerate(completions)
    ]


def test_micro_batching_does_not_change_the_update(make_local):
    big, small = make_local(micro_batch_tokens=10_000), make_local(micro_batch_tokens=30)
    samples = _episodes(big)
    mb, ms = big.update(samples), small.update(samples)
    # Gradient accumulation with one token-level normaliser: same loss, same gradient. (Parameters
    # are not compared: Adam's first step is ~lr * sign(g), which amplifies rounding where g ~ 0.)
    for key in ("pg_loss", "entropy", "grad_norm", "trained_tokens"):
        assert mb[key] == pytest.approx(ms[key], rel=1e-5, abs=1e-6), key


def test_minibatches_are_optimizer_steps_and_become_off_policy(make_local):
    backend = make_local(num_minibatches=2, learning_rate=5e-2)
    samples = _episodes(backend)
    metrics = backend.update(samples)
    steps = {int(s["step"]) for s in backend.optimizer.state.values()}
    assert steps == {2}
    assert metrics["approx_kl"] > 0  # the second minibatch saw weights moved by the first


def test_training_is_deterministic_on_cpu(make_local):
    a, b = make_local(seed=3), make_local(seed=3)
    for backend in (a, b):
        backend.update(_episodes(backend))
        backend.update(_episodes(backend))
    for p, q in zip(a.model.parameters(), b.model.parameters()):
        assert torch.equal(p, q)


def test_kl_to_the_frozen_reference(make_local):
    backend = make_local(kl_coef=0.1, learning_rate=5e-2)
    samples = _episodes(backend)
    first = backend.update(samples)
    assert first["kl_ref"] == pytest.approx(0.0, abs=1e-6)  # still at the reference
    second = backend.update(samples)
    assert second["kl_ref"] > 0
    assert second["loss"] == pytest.approx(second["pg_loss"] + 0.1 * second["kl_ref"])
    assert make_local().ref_model is None  # default: no second copy held


def test_with_lora_the_kl_reference_is_the_base_model(make_local):
    pytest.importorskip("peft")
    from spade.backends.torch_setup import LoraSettings

    backend = make_local(lora=LoraSettings(r=2, alpha=4), kl_coef=0.1, learning_rate=5e-2)
    assert backend.ref_model is None  # no second copy: the adapter switched off is the reference
    samples = _episodes(backend)
    first = backend.update(samples)
    assert first["kl_ref"] == pytest.approx(0.0, abs=1e-6)  # LoRA's B starts at 0
    assert backend.update(samples)["kl_ref"] > 0
    base = make_local()  # the same base weights without an adapter
    for s in samples:
        batch = backend._collate([s])
        expected = base._logprobs(base.model, batch, batch["mask"].bool())[0]
        assert torch.allclose(backend._reference_logprobs(batch), expected, atol=1e-5)


def test_an_update_forgets_the_prefix_cache(make_local):
    # the first turn's keys and values, cached for the conversation's next turn, were computed
    # with the old weights: after an update the next turn must be what the new weights give
    # without any cache
    backend = make_local(learning_rate=5e-2)
    params = SamplingParams(max_tokens=6, seed=12)
    first = [Prompt.of(p) for p in PROMPTS]
    replies = backend.sample(first, params)
    assert backend.prefix_cache is not None and len(backend.prefix_cache) == len(PROMPTS)
    backend.update(_episodes(backend))
    turn = {"role": "user", "content": "Again."}
    second = [backend.extend(p, c, [turn]) for p, c in zip(first, replies)]
    after = backend.sample(second, params)
    uncached = make_local(prefix_cache_mb=0)
    uncached.model.load_state_dict(backend.model.state_dict())
    expected = uncached.sample(second, params)
    assert ids(after) == ids(expected)
    for a, e in zip(after, expected):
        assert a.logprobs == pytest.approx(e.logprobs, abs=1e-4)


def test_bf16_mixed_samples_and_scores_under_bf16_autocast(make_local):
    # the output layer's result is bf16 under autocast, fp32 outside it
    dtypes: list[torch.dtype] = []
    for precision in ("bf16-mixed", "fp32"):
        backend = make_local(precision=precision)
        head = backend.model.get_output_embeddings()
        handle = head.register_forward_hook(lambda m, i, out: dtypes.append(out.dtype))
        try:
            [c] = backend.sample(PROMPTS[:1], SamplingParams(max_tokens=3, seed=1))
            backend.score([episode_sample([c], 1.0, "agent")])
        finally:
            handle.remove()
        expected = torch.bfloat16 if precision == "bf16-mixed" else torch.float32
        assert len(dtypes) >= 3 and set(dtypes) == {expected}, precision
        dtypes.clear()


def _variant(tmp_path, name: str, edit) -> str:
    """A copy of the tiny-test folder, its JSON files edited by `edit(file_name, data)`."""
    import json
    import shutil

    from spade.backends.tiny import tiny_model_path

    out = tmp_path / name
    shutil.copytree(tiny_model_path("tiny-test"), out)
    for f in out.glob("*.json"):
        f.write_text(json.dumps(edit(f.name, json.loads(f.read_text()))))
    return str(out)


def test_the_generation_configs_end_tokens_also_end_a_reply(make_local, tmp_path):
    def edit(name, data):
        if name == "generation_config.json":
            data["eos_token_id"] = [2, 7]
        return data

    assert make_local().eot_ids == {2}  # <|im_end|>: the tokenizer's and the template's
    assert make_local(model=_variant(tmp_path, "eos", edit)).eot_ids == {2, 7}


def _without_im_end(eos: bool):
    """Edits: <|im_end|> renamed <|eot|> and no chat template (so the default ChatML is used,
    whose closing text is no longer one token); with or without it as the EOS."""

    def edit(name, data):
        if name == "tokenizer.json":
            for token in data["added_tokens"]:
                if token["content"] == "<|im_end|>":
                    token["content"] = "<|eot|>"
            data["model"]["vocab"]["<|eot|>"] = data["model"]["vocab"].pop("<|im_end|>")
        if name == "tokenizer_config.json":
            data["eos_token"] = "<|eot|>" if eos else None
        if name == "generation_config.json" and not eos:
            data.pop("eos_token_id")
        return data

    return edit


def test_without_an_end_of_turn_token_the_template_text_ends_a_reply(make_local, tmp_path):
    import os

    for eos in (True, False):
        path = _variant(tmp_path, f"eos-{eos}", _without_im_end(eos))
        os.remove(os.path.join(path, "chat_template.jinja"))
        backend = make_local(model=path)
        assert backend._template_stops == ("<|im_end|>",)
        assert backend.eot_ids == ({2} if eos else set())
    # the reply is forced to write "<|im_end|>" (byte-level tokens) from its second token on
    text = backend.tokenizer.encode("<|im_end|>", add_special_tokens=False)
    with _forced(backend, {k + 2: token for k, token in enumerate(text)}):
        [c] = backend.sample(PROMPTS[:1], SamplingParams(max_tokens=40, seed=2))
    assert c.finish_reason == "stop" and c.text.endswith("<|im_end|>")
    assert list(c.completion_ids[1:]) == text


def test_a_model_without_any_end_of_turn_is_refused(make_local, tmp_path):
    import os

    path = _variant(tmp_path, "none", _without_im_end(eos=False))
    with open(os.path.join(path, "chat_template.jinja"), "w") as f:
        f.write("{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}")
    with pytest.raises(ValueError, match=r": no end-of-turn token; cannot tell when a reply ends$"):
        make_local(model=path)


def test_threads_and_pure_bf16_are_applied(make_local, tmp_path):
    from spade.backends.local import LocalBackend, LocalConfig

    before = torch.get_num_threads()
    try:
        LocalBackend(LocalConfig(model="tiny-test", device="cpu", precision="fp32", threads=1))
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
    bf16 = make_local(precision="bf16")
    assert {p.dtype for p in bf16.model.parameters()} == {torch.bfloat16}
    assert {p.dtype for p in make_local().model.parameters()} == {torch.float32}


def test_export_gives_a_folder_the_backend_loads(local, make_local, tmp_path):
    local.update(_episodes(local))
    path = local.export(tmp_path / "exported")
    reloaded = make_local(model=str(path))
    params = SamplingParams(max_tokens=8, seed=10)
    assert reloaded.sample(PROMPTS, params) == local.sample(PROMPTS, params)


def test_load_refuses_a_checkpoint_of_another_tokenizer(local, tmp_path):
    local.save(tmp_path / "ckpt")
    local.tokenizer.chat_template = local.tokenizer.chat_template + " "
    with pytest.raises(ValueError, match="another tokenizer"):
        local.load(tmp_path / "ckpt")


def test_llama_architecture_also_works(make_local, tmp_path):
    from spade.backends.tiny import TinyConfig, tiny_model_path

    path = tiny_model_path(
        TinyConfig(
            name="llama-test",
            arch="llama",
            vocab_size=1024,
            hidden_size=64,
            num_layers=2,
            intermediate_size=128,
        )
    )
    backend = make_local(model=str(path))
    c = backend.sample(PROMPTS[:1], SamplingParams(max_tokens=5, seed=0))[0]
    before = backend.score([episode_sample([c], 1.0, "agent")])[0]
    backend.update([episode_sample([c], 1.0, "agent")])
    assert sum(backend.score([episode_sample([c], 1.0, "agent")])[0]) > sum(before)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_bf16_on_gpu(torch_threads):
    from spade.backends.local import LocalBackend, LocalConfig

    backend = LocalBackend(LocalConfig(model="tiny-test"))
    assert backend.precision == "bf16-mixed" and backend.device.type == "cuda"
    c = backend.sample(PROMPTS, SamplingParams(max_tokens=8, seed=0))
    metrics = backend.update([episode_sample([x], 1.0, "agent") for x in c])
    assert metrics["ratio"] == pytest.approx(1.0, abs=0.05)  # bf16 rounding


def test_trainable_layers_train_only_the_top_of_the_decoder(torch_threads):
    from spade.backends.local import LocalBackend, LocalConfig

    backend = LocalBackend(LocalConfig(model="tiny-test", precision="fp32", trainable_layers=1))
    layers = backend.model.get_decoder().layers
    before = {n: p.detach().clone() for n, p in backend.model.named_parameters()}
    backend.update(_episodes(backend))
    changed = {n for n, p in backend.model.named_parameters() if not torch.equal(p, before[n])}
    top = f"layers.{len(layers) - 1}."
    assert changed, "the top layer was not trained"
    assert all(top in n or (n.endswith("norm.weight") and "layers." not in n) for n in changed)
    assert not any("embed" in n for n in changed)
    trained = {id(p) for g in backend.optimizer.param_groups for p in g["params"]}
    assert trained == {id(p) for p in backend.model.parameters() if p.requires_grad}
    with pytest.raises(ValueError, match="trainable_layers must be at least 1"):
        LocalBackend(LocalConfig(model="tiny-test", trainable_layers=0))
    every = LocalBackend(LocalConfig(model="tiny-test", trainable_layers=len(layers) + 5))
    assert all(p.requires_grad for p in every.model.get_decoder().layers.parameters())
    assert not every.model.get_input_embeddings().weight.requires_grad


def test_the_optimizer_is_fused_adamw_where_torch_has_one(local):
    from spade.backends.torch_setup import fused_adamw

    expected = fused_adamw(local.device)
    assert local.optimizer.defaults.get("fused", None) == expected.get("fused", None)
    if tuple(int(x) for x in torch.__version__.split(".")[:2]) >= (2, 4):
        assert expected == {"fused": True}
