"""Warm start: pluggable examples in, a cached model folder out that has learned them."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")

from spade.backends import SamplingParams
from spade.warmstart.data import PLAIN_FORMAT, Example, prompts_format, with_default_difficulty
from spade.warmstart.finetune import bootstrap
from spade.warmstart.replay import replay_many
from spade.warmstart.sequences import training_sequences

EXAMPLES = [
    Example(({"role": "user", "content": "Lamp puzzle. Which switch?"},), "\\boxed{3}", "agent"),
    Example(
        ({"role": "user", "content": "Design a maze env."},), "class MazeEnv:\n    pass", "designer"
    ),
]


def test_difficulty_variant_rewrites_only_the_constructor_default():
    code = (
        "class XEnv:\n"
        "    def __init__(self, max_turns=25, difficulty=2):\n"
        "        self.d = difficulty\n"
    )
    assert "difficulty=3)" in with_default_difficulty(code, 3)
    assert with_default_difficulty("class XEnv:\n    pass\n", 3) == "class XEnv:\n    pass\n"


def test_bootstrap_learns_its_examples_and_caches_the_result(make_local, tmp_path):
    out = tmp_path / "boot"
    path = bootstrap(
        "tiny-test",
        examples=EXAMPLES,
        steps=40,
        trainable_layers=None,
        learning_rate=3e-3,
        batch_tokens=64,
        designer_share=0.5,
        output=out,
        progress=False,
    )
    meta = json.loads((path / "spade_bootstrap.json").read_text())
    assert meta["finished"] and meta["steps"] == 40 and meta["final_nll"] < 1.5
    learned = make_local(model=str(path))
    reply = learned.sample(
        [list(EXAMPLES[0].messages)], SamplingParams(max_tokens=8, temperature=0)
    )[0]
    assert reply.text == "\\boxed{3}" and reply.finish_reason == "stop"
    stamp = (path / "model.safetensors").stat().st_mtime_ns
    assert (
        bootstrap(
            "tiny-test",
            examples=EXAMPLES,
            steps=40,
            trainable_layers=None,
            learning_rate=3e-3,
            batch_tokens=64,
            designer_share=0.5,
            output=out,
            progress=False,
        )
        == path
    )
    assert (path / "model.safetensors").stat().st_mtime_ns == stamp  # cached, not retrained


TINY_BOOT = dict(
    examples=EXAMPLES,
    trainable_layers=None,
    learning_rate=3e-3,
    batch_tokens=64,
    designer_share=0.5,
    progress=False,
)


def _sha256(path) -> str:
    import hashlib

    return hashlib.sha256((path / "model.safetensors").read_bytes()).hexdigest()


def test_bootstrap_stops_by_steps_whatever_the_clock_says(tmp_path, monkeypatch):
    """The budget is counted in steps: a machine so busy that each step takes an hour (a clock
    that jumps an hour every time it is read) trains the same steps to the same weights."""
    import time

    quiet = bootstrap("tiny-test", steps=6, output=tmp_path / "quiet", **TINY_BOOT)
    now = [time.monotonic()]

    def busy() -> float:
        now[0] += 3600.0
        return now[0]

    monkeypatch.setattr(time, "monotonic", busy)
    slow = bootstrap("tiny-test", steps=6, output=tmp_path / "busy", **TINY_BOOT)
    meta = json.loads((slow / "spade_bootstrap.json").read_text())
    assert meta["finished"] and meta["steps"] == 6 and meta["seconds"] > 3600
    assert _sha256(slow) == _sha256(quiet)


def test_an_interrupted_bootstrap_is_never_cached_as_finished(tmp_path, monkeypatch):
    from spade.backends.local import LocalBackend

    real = LocalBackend.sft_step
    calls = [0]

    def dies_at_step_3(self, *args, **kwargs):
        calls[0] += 1
        if calls[0] == 3:
            raise KeyboardInterrupt
        return real(self, *args, **kwargs)

    monkeypatch.setattr(LocalBackend, "sft_step", dies_at_step_3)
    out = tmp_path / "boot"
    with pytest.raises(KeyboardInterrupt):
        bootstrap("tiny-test", steps=5, output=out, **TINY_BOOT)
    assert not out.exists()  # nothing there to be taken for a finished warm start
    monkeypatch.setattr(LocalBackend, "sft_step", real)
    path = bootstrap("tiny-test", steps=5, output=out, **TINY_BOOT)  # trains again, in full
    assert json.loads((path / "spade_bootstrap.json").read_text())["steps"] == 5
    assert not out.with_name("boot.partial").exists()


def test_the_cache_key_covers_the_step_budget(tmp_path, monkeypatch):
    monkeypatch.setenv("SPADE_CACHE_DIR", str(tmp_path))
    three = bootstrap("tiny-test", steps=3, **TINY_BOOT)
    four = bootstrap("tiny-test", steps=4, **TINY_BOOT)
    assert three != four and three.parent == four.parent == tmp_path / "models"
    assert json.loads((four / "spade_bootstrap.json").read_text())["steps"] == 4
    assert bootstrap("tiny-test", steps=3, **TINY_BOOT) == three


def test_lora_bootstrap_is_merged_into_a_plain_model_folder(make_local, tmp_path):
    pytest.importorskip("peft")
    path = bootstrap(
        "tiny-test",
        examples=EXAMPLES,
        steps=30,
        learning_rate=3e-2,
        batch_tokens=64,
        designer_share=0.5,
        lora_rank=8,
        output=tmp_path / "lora",
        progress=False,
    )
    meta = json.loads((path / "spade_bootstrap.json").read_text())
    assert meta["lora_rank"] == 8 and meta["steps"] == 30
    assert not (path / "adapter_config.json").exists()  # merged: an ordinary checkpoint
    import torch

    learned, base = make_local(model=str(path)), make_local()
    assert learned.num_parameters == base.num_parameters
    changed = [
        name
        for (name, a), (_, b) in zip(
            learned.model.named_parameters(), base.model.named_parameters()
        )
        if not torch.equal(a, b)
    ]
    assert changed and all("lora" not in n for n in changed)  # the adapters were merged in


@pytest.mark.parametrize("fmt", [PLAIN_FORMAT, None], ids=["plain", "spade.prompts"])
def test_formats_render_designer_and_agent_turns(fmt):
    fmt = fmt or prompts_format()
    designer = fmt.designer_prompt("Optimization", 1)
    assert designer[-1]["role"] == "user" and "Optimization" in designer[-1]["content"]
    reply = fmt.designer_reply("class AEnv:\n    pass\n", "think")
    assert "```python" in reply and "HINT: think" in reply
    agent = fmt.agent_first("You see a box.", "Spatial Reasoning", [])
    assert agent[-1] == {"role": "user", "content": "You see a box."}


def test_replaying_a_solution_records_observations_and_replies():
    code = (
        "class CountEnv:\n"
        "    def __init__(self, max_turns=25, difficulty=1):\n"
        "        self.target = difficulty + 1\n"
        "    def reset(self, seed=None):\n"
        "        self.n = 0\n"
        "        return f'count to {self.target}', {}\n"
        "    def step(self, action):\n"
        "        self.n += 1\n"
        "        done = self.n == self.target\n"
        "        return f'at {self.n}', float(done), done, False, {}\n"
        "    def solution(self):\n"
        "        return ['\\\\boxed{+1}'] * self.target\n"
    )
    # a broken program (even one that exits its process) is skipped, not the ones around it
    exits = "raise SystemExit(3)"
    [(episode,), broken, (again,)] = replay_many(
        [(code, [(2, 0)]), (exits, [(1, 0)]), (code, [(2, 0)])]
    )
    assert episode["won"] and [t[0] for t in episode["turns"]] == ["count to 3", "at 1", "at 2"]
    assert broken == [] and again == episode


def test_replaying_many_programs_skips_only_the_broken_one():
    good = (
        "class OneEnv:\n"
        "    def __init__(self, max_turns=5, difficulty=1):\n"
        "        pass\n"
        "    def reset(self, seed=None):\n"
        "        return 'say it', {}\n"
        "    def step(self, action):\n"
        "        return 'done', 1.0, True, False, {}\n"
        "    def solution(self):\n"
        "        return ['\\\\boxed{it}']\n"
    )
    first, broken, last = replay_many([(good, [(1, 0)]), ("1/0", [(1, 0)]), (good, [(1, 1)])])
    assert broken == []
    assert (
        first[0]["won"] and last[0]["seed"] == 1 and last[0]["turns"] == [["say it", "\\boxed{it}"]]
    )


def test_an_agent_episode_is_one_sequence_with_only_the_replies_trained(make_local):
    backend = make_local()
    first = ({"role": "user", "content": "Pick a door."},)
    second = (
        *first,
        {"role": "assistant", "content": "\\boxed{1}"},
        {"role": "user", "content": "Closed. Again."},
    )
    designer = Example(
        ({"role": "user", "content": "Design."},), "class AEnv:\n    pass", "designer"
    )
    data = [Example(first, "\\boxed{1}", "agent"), Example(second, "\\boxed{2}", "agent"), designer]
    sequences, dropped = training_sequences(
        data, backend.tokenizer, backend.eot_ids, max_length=4096
    )
    assert dropped == 0
    (agent,) = [s for s in sequences if s.role == "agent"]
    (code,) = [s for s in sequences if s.role == "designer"]
    trained = [t for t, m in zip(agent.ids, agent.mask) if m]
    untrained = [t for t, m in zip(agent.ids, agent.mask) if not m]
    text = backend.tokenizer.decode(trained)
    assert "\\boxed{1}" in text and "\\boxed{2}" in text and "Closed" not in text
    assert "Closed. Again." in backend.tokenizer.decode(untrained)
    assert backend.tokenizer.decode([t for t, m in zip(code.ids, code.mask) if m]).startswith(
        "class AEnv"
    )
    # too long: dropped, counted
    assert training_sequences(data, backend.tokenizer, backend.eot_ids, max_length=8)[0] == []


def test_trainable_layers_bootstrap_leaves_the_embeddings_as_they_were(make_local, tmp_path):
    import torch

    path = bootstrap(
        "tiny-test",
        examples=EXAMPLES,
        steps=5,
        trainable_layers=1,
        learning_rate=3e-3,
        batch_tokens=64,
        output=tmp_path / "top1",
        progress=False,
    )
    meta = json.loads((path / "spade_bootstrap.json").read_text())
    assert meta["trainable_layers"] == 1 and meta["steps"] == 5
    learned, base = make_local(model=str(path)), make_local()
    emb = learned.model.get_input_embeddings().weight
    assert torch.equal(emb, base.model.get_input_embeddings().weight)
    top = learned.model.get_decoder().layers[-1]
    base_top = base.model.get_decoder().layers[-1]
    assert any(not torch.equal(a, b) for a, b in zip(top.parameters(), base_top.parameters()))
