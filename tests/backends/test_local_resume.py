"""`train()` killed mid-run and resumed through the real LocalBackend (tiny-test): the trainer's
weights, AdamW moments, RNG streams and step counter come back from the checkpoint, so the
resumed run ends bit-identical to an uninterrupted one.

The replies are scripted (tests/support/loopkit.py), the updates real: scripted token ids are UTF-8
bytes + 3, all below tiny-test's 2,048-token vocabulary, with constant behaviour logprobs
(off-policy samples, which the PPO ratio handles like any other)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from spade.backends.base import Models, Prompt  # noqa: E402
from spade.envs.pool import Pool  # noqa: E402
from spade.train import train  # noqa: E402
from tests.support import loopkit  # noqa: E402
from tests.support.scripted import ScriptedPolicy  # noqa: E402


class _Crash(Exception):
    pass


class _CrashOnDesign:
    """The scripted policy, raising on the n-th Designer batch (at the start of an iteration)."""

    def __init__(self, n: int) -> None:
        self.policy, self.n, self.designs = ScriptedPolicy(loopkit.reply), n, 0

    def sample(self, prompts, params):
        first = Prompt.of(prompts[0]).messages
        if "Environment Designer" in str(first[0].get("content", "")):
            self.designs += 1
            if self.designs == self.n:
                raise _Crash
        return self.policy.sample(prompts, params)

    def extend(self, prompt, completion, messages):
        return self.policy.extend(prompt, completion, messages)


def _run(run_dir: Path, backend, policy, resume: bool = False) -> dict:
    cfg = loopkit.small_config(run_dir, iterations=3)
    if not resume:
        run_dir.mkdir(parents=True, exist_ok=True)
        with Pool(run_dir / "pool.sqlite") as pool:
            loopkit.add_magic(pool)
    models = Models(policy, backend, policy, backend)
    return train(cfg, resume=resume, models=models, progress_bars=False, show=lambda s: None)


@pytest.mark.slow
def test_resume_restores_the_local_trainer_exactly(make_local, tmp_path: Path) -> None:
    reference = make_local(seed=5, learning_rate=1e-2)
    summary = _run(tmp_path / "ref", reference, ScriptedPolicy(loopkit.reply))
    assert all(m["loss"] for m in summary["iterations"])  # every iteration really trained
    assert reference.step == 3

    crashed = make_local(seed=5, learning_rate=1e-2)
    with pytest.raises(_Crash):  # regen_interval 2: iterations 1 and 3 design
        _run(tmp_path / "run", crashed, _CrashOnDesign(n=2))
    assert json.loads((tmp_path / "run" / "state.json").read_text())["iteration"] == 2
    assert crashed.step == 2

    resumed = make_local(seed=9, learning_rate=1e-2)  # other initial weights and RNG streams
    torch.manual_seed(1234)
    _run(tmp_path / "run", resumed, ScriptedPolicy(loopkit.reply), resume=True)
    assert resumed.step == 3
    for p, q in zip(reference.model.parameters(), resumed.model.parameters()):
        assert torch.equal(p, q)
    ref_opt, res_opt = reference.optimizer.state_dict(), resumed.optimizer.state_dict()
    for a, b in zip(ref_opt["state"].values(), res_opt["state"].values()):
        assert torch.equal(a["exp_avg"], b["exp_avg"]) and torch.equal(
            a["exp_avg_sq"], b["exp_avg_sq"]
        )
    assert torch.equal(reference._sampler_rng.get_state(), resumed._sampler_rng.get_state())
