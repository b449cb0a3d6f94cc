"""Design -> validate -> admit, shared by the loop and `spade design`: verdicts by position,
retries up to `max_attempts` per slot, the admission limit, the failures recorded."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from spade.backends.base import Message, SamplingParams
from spade.cli import design_command
from spade.envs.checks import ValidatorConfig
from spade.envs.duplicates import shingles
from spade.envs.pool import Pool
from spade.prompts import PromptSettings, designer_reply
from spade.sandbox import Sandbox, SandboxConfig
from spade.selfplay.admission import (
    COUNT_REACHED,
    DesignRequest,
    TrainingPrograms,
    design_and_admit,
)
from spade.types import CheckFailure, env_id_of
from tests.support import loopkit
from tests.support.scripted import ScriptedPolicy

SKILL = "Magic Numbers"
# MagicEnv asks for the number it shows, which the validator rejects as a leak (answer_leak):
# the designs here ask for that number plus one
PLUS_ONE = (
    loopkit.MAGIC_ENV.replace("the number {self.target}.", "the number {self.target} plus one.")
    .replace("== self.target:", "== self.target + 1:")
    .replace("boxed{{{self.target}}}", "boxed{{{self.target + 1}}}")
)
assert PLUS_ONE.count("+ 1") == 2 and "plus one" in PLUS_ONE
ALPHA = designer_reply(PLUS_ONE.replace("MagicEnv", "AlphaEnv"), "First line.")
BETA = designer_reply(PLUS_ONE.replace("MagicEnv", "BetaEnv"), "First line.")
GARBAGE = "no code here"
LOOSE = ValidatorConfig(probe_seeds=1, solution_seeds=1, near_duplicate_threshold=1.01)


class Batches:
    """The i-th sampling call gets the i-th list of replies (one per prompt, in order)."""

    def __init__(self, batches: Sequence[Sequence[str]]) -> None:
        self.batches, self.calls = [list(b) for b in batches], 0
        self.policy = ScriptedPolicy(self.reply)
        self.seeds: list[int | None] = []

    def reply(self, messages: Sequence[Message]) -> str:
        batch = self.batches[min(self.calls, len(self.batches) - 1)]
        return batch.pop(0)

    def sample(self, prompts, params: SamplingParams):
        self.seeds.append(params.seed)
        out = self.policy.sample(prompts, params)
        self.calls += 1
        return out

    def extend(self, prompt, completion, messages):  # pragma: no cover - never multi-turn
        return self.policy.extend(prompt, completion, messages)


@pytest.fixture
def env(tmp_path: Path) -> Iterator[tuple[Pool, Sandbox, asyncio.AbstractEventLoop]]:
    loop = asyncio.new_event_loop()
    sandbox = Sandbox(SandboxConfig(warm_workers=1))
    loop.run_until_complete(sandbox.start())
    with Pool(tmp_path / "pool.sqlite") as pool:
        yield pool, sandbox, loop
    loop.run_until_complete(sandbox.aclose())
    loop.close()


def _request(n: int, **kw: object) -> DesignRequest:
    return DesignRequest(
        iteration=1,
        regen=0,
        skills=(SKILL,) * n,
        rng=random.Random(0),
        params=SamplingParams(max_tokens=64, seed=11),
        validator=LOOSE,
        **kw,  # type: ignore[arg-type]
    )


def test_each_attempt_gets_its_own_verdict(env) -> None:
    pool, sandbox, loop = env
    policy = Batches([[ALPHA, ALPHA, GARBAGE]])
    outcomes = design_and_admit(
        policy, sandbox, pool, loop.run_until_complete, _request(3, failed_reward=-1.0)
    )
    assert [o.admitted for o in outcomes] == [True, False, False]
    assert outcomes[0].env_id == env_id_of(ALPHA.split("```python\n")[1].split("```")[0])
    assert [f.check for f in outcomes[1].failures] == ["duplicate"]
    assert [(f.check, f.reason) for f in outcomes[2].failures] == [("design", "no code block")]
    rows = pool.attempts(1)
    assert [(r["attempt"], r["admitted"], r["reward"]) for r in rows] == [
        (0, True, None),
        (1, False, -1.0),
        (2, False, -1.0),
    ]
    assert len(pool.admitted()) == 1


def test_a_failed_slot_is_retried_up_to_max_attempts(env) -> None:
    pool, sandbox, loop = env
    # round 0: slot 0 fails, slot 1 admitted; round 1: slot 0 fails again; round 2: admitted
    policy = Batches([[GARBAGE, ALPHA], [GARBAGE], [BETA], [GARBAGE]])
    outcomes = design_and_admit(
        policy, sandbox, pool, loop.run_until_complete, _request(2, max_attempts=5)
    )
    assert [(o.attempt.attempt_index, o.admitted) for o in outcomes] == [
        (0, False),
        (1, True),
        (2, False),
        (3, True),
    ]
    assert policy.calls == 3  # stops once every slot is filled, before the 5th attempt
    assert len(set(policy.seeds)) == 3  # each retry samples with its own seed
    assert policy.seeds[0] == 11


def test_one_attempt_per_slot_by_default(env) -> None:
    pool, sandbox, loop = env
    policy = Batches([[GARBAGE, GARBAGE], [ALPHA, ALPHA]])
    outcomes = design_and_admit(policy, sandbox, pool, loop.run_until_complete, _request(2))
    assert [o.admitted for o in outcomes] == [False, False] and policy.calls == 1
    with pytest.raises(ValueError, match="max_attempts"):
        _request(1, max_attempts=0)


def test_the_limit_stops_admitting(env) -> None:
    pool, sandbox, loop = env
    policy = Batches([[ALPHA, BETA]])
    outcomes = design_and_admit(
        policy, sandbox, pool, loop.run_until_complete, _request(2, limit=1)
    )
    assert [o.admitted for o in outcomes] == [True, False]
    assert outcomes[1].failures == (COUNT_REACHED,)


def test_spade_design_uses_the_same_admission(tmp_path: Path, monkeypatch) -> None:
    # identical code twice in one round: the first is written out, the second is its duplicate
    # (before, the duplicate's verdict replaced the first one's and both were lost); BETA differs
    # from ALPHA by a class name only, a near-duplicate under the default validator
    policy = Batches([[ALPHA, ALPHA, BETA]])
    monkeypatch.setattr(design_command, "policy_for", lambda *a, **k: policy)
    out = tmp_path / "out"
    rc = design_command.design_cmd(out, count=2, skills=(SKILL,), batch=3, max_rounds=1)
    lines = [json.loads(x) for x in (out / "attempts.jsonl").read_text().splitlines()]
    assert [x["admitted"] for x in lines] == [True, False, False]
    assert [[f["check"] for f in x["failures"]] for x in lines] == [
        [],
        ["duplicate"],
        ["near_duplicate"],
    ]
    assert [p.name for p in out.glob("game_*.py")] == ["game_00000_000_magic_numbers.py"]
    assert rc == 1  # 1 of the 2 requested
    # each line keeps its own attempt's verdict (the admitted one, then the two rejections)
    assert [x["verdict"]["admitted"] for x in lines] == [True, False, False]
    assert [f["check"] for f in lines[2]["verdict"]["failures"]] == ["near_duplicate"]


def test_recipes_choose_their_retries() -> None:
    from spade.config import RECIPES

    assert RECIPES["paper-games"].design.max_attempts == 5  # the paper: up to 5 per slot
    assert RECIPES["paper-tools"].design.max_attempts == 5
    assert RECIPES["tiny-cpu"].design.max_attempts == 2  # one retry: a round of 6 came back empty


def test_retries_stop_once_the_limit_is_met(env) -> None:
    pool, sandbox, loop = env
    # round 0 admits one of two and the limit is 1: no round 1, although a slot failed
    policy = Batches([[ALPHA, GARBAGE], [BETA]])
    request = _request(2, limit=1, max_attempts=3)
    outcomes = design_and_admit(policy, sandbox, pool, loop.run_until_complete, request)
    assert [o.admitted for o in outcomes] == [True, False] and policy.calls == 1


def test_a_retry_samples_with_a_seed_derived_from_the_round() -> None:
    from spade.selfplay.admission import _round_params

    params = SamplingParams(max_tokens=8, seed=11)
    assert _round_params(params, 0) is params
    expected = random.Random("11/retry/2").randrange(2**31)
    assert _round_params(params, 2).seed == _round_params(params, 2).seed == expected
    assert _round_params(SamplingParams(max_tokens=8, seed=None), 2).seed is None


def test_the_request_shapes_the_designer_prompt(env) -> None:
    from spade.prompts import designer_system

    pool, sandbox, loop = env
    seen: list[Sequence[Message]] = []
    policy = Batches([[GARBAGE]])
    reply = policy.reply
    policy.policy.reply = lambda messages: seen.append(messages) or reply(messages)
    request = _request(1, prompt_settings=PromptSettings(difficulty_word="brutal", form="compact"))
    design_and_admit(policy, sandbox, pool, loop.run_until_complete, request)
    (messages,) = seen
    assert messages[0]["content"] == designer_system("game", form="compact")
    assert "Write a new brutal environment" in messages[-1]["content"]


def test_the_pool_row_keeps_the_attempts_provenance(env) -> None:
    pool, sandbox, loop = env
    policy = Batches([[GARBAGE, GARBAGE], [ALPHA, GARBAGE]])
    request = dataclasses.replace(_request(2, max_attempts=2), regen=3)
    outcomes = design_and_admit(policy, sandbox, pool, loop.run_until_complete, request)
    assert [o.admitted for o in outcomes] == [False, False, True, False]
    (row,) = list(pool.export_rows())
    assert row["provenance"] == {"attempt": 2, "exemplars": [], "grounding": None, "regen": 3}


def test_designs_are_checked_against_the_pool_not_only_each_other(env) -> None:
    pool, sandbox, loop = env
    strict = ValidatorConfig(probe_seeds=1, solution_seeds=1)  # near-duplicates are refused
    first = dataclasses.replace(_request(1), validator=strict)
    design_and_admit(Batches([[ALPHA]]), sandbox, pool, loop.run_until_complete, first)
    # BETA differs from the admitted ALPHA by its class name: caught against the pool
    (outcome,) = design_and_admit(Batches([[BETA]]), sandbox, pool, loop.run_until_complete, first)
    assert not outcome.admitted
    assert [f.check for f in outcome.failures] == ["near_duplicate"]


def test_a_program_the_pool_holds_unadmitted_is_not_admitted_again(env) -> None:
    from spade.selfplay.admission import POOL_DUPLICATE
    from spade.types import Program, Verdict

    pool, sandbox, loop = env
    code = ALPHA.split("```python\n")[1].split("```")[0]
    program = Program.from_code(code, skill=SKILL)
    # stored earlier with a failing verdict: not among the admitted the validator compares with
    assert pool.add_program(program, Verdict(program.env_id, False, (), {}), 0)
    (outcome,) = design_and_admit(
        Batches([[ALPHA]]), sandbox, pool, loop.run_until_complete, _request(1)
    )
    assert not outcome.admitted and outcome.failures == (POOL_DUPLICATE,)
    assert pool.admitted() == []


def _code(reply: str) -> str:
    return reply.split("```python\n")[1].split("```")[0]


def test_training_similarity_is_the_near_duplicate_measure() -> None:
    # token 5-grams with literals normalised: `a = 1 / b = 2 / c = 3` is 9 tokens, 5 shingles;
    # with `d` for `c` the first two are shared: 2 / (5 + 5 - 2) = 0.25
    training = TrainingPrograms((shingles("a = 1\nb = 2\nc = 3\n"),))
    assert training.nearest("a = 1\nb = 2\nd = 3\n") == 0.25
    assert training.nearest("a = 7\nb = 8\nc = 9\n") == 1.0  # other numbers: still a copy
    assert TrainingPrograms(()).nearest("a = 1\n") == 0.0


def test_a_copy_of_a_training_program_is_refused_unrun(env) -> None:
    # the training set holds ALPHA: ALPHA itself is an exact copy, refused before validation
    # (the validator always reports its seconds: an empty verdict was never run) with the
    # failed reward; BETA differs by its class name only (0.95), a near copy that LOOSE's
    # threshold (1.01) lets in, with its similarity kept; under the default 0.9 it is refused
    pool, sandbox, loop = env
    training = TrainingPrograms((shingles(_code(ALPHA)),))
    request = _request(2, training=training, failed_reward=-1.0)
    copy, near = design_and_admit(
        Batches([[ALPHA, BETA]]), sandbox, pool, loop.run_until_complete, request
    )
    assert (copy.admitted, copy.training_similarity) == (False, 1.0)
    reason = "1.00 token similarity to a warm-start training program"
    assert copy.failures == (CheckFailure("training_copy", reason),)
    assert copy.verdict is not None and copy.verdict.stats == {}
    assert near.admitted and near.training_similarity == training.nearest(_code(BETA))
    assert 0.9 <= near.training_similarity < 1.0
    assert [(r["attempt"], r["admitted"], r["reward"]) for r in pool.attempts(1)] == [
        (0, False, -1.0),
        (1, True, None),
    ]
    (row,) = list(pool.export_rows())
    assert row["provenance"]["training_similarity"] == round(near.training_similarity, 3)
    strict = dataclasses.replace(
        _request(1, training=training), validator=ValidatorConfig(probe_seeds=1, solution_seeds=1)
    )
    gamma = designer_reply(PLUS_ONE.replace("MagicEnv", "GammaEnv"), "First line.")
    (refused,) = design_and_admit(
        Batches([[gamma]]), sandbox, pool, loop.run_until_complete, strict
    )
    assert [f.check for f in refused.failures] == ["training_copy"]
    # without a training set nothing is compared, and no similarity is kept
    delta = designer_reply(PLUS_ONE.replace("MagicEnv", "DeltaEnv"), "First line.")
    (plain,) = design_and_admit(
        Batches([[delta]]), sandbox, pool, loop.run_until_complete, _request(1)
    )
    assert plain.admitted and plain.training_similarity is None
    (row,) = [r for r in pool.export_rows() if r["env_id"] == plain.env_id]
    assert "training_similarity" not in row["provenance"]


class _Stop(Exception):
    """Raised by a stub once it has seen what it was asked."""


class _NoSandbox:
    async def start(self) -> _NoSandbox:
        return self

    async def aclose(self) -> None:
        pass


def _designed_with(monkeypatch, tmp_path: Path, **flags: object) -> tuple:
    """(temperature, max_tokens, prompt budget, form) of the first request `spade design` makes."""
    from spade import sandbox
    from spade.selfplay import admission

    seen: list[tuple] = []

    def capture(policy, envs, pool, run_async, request):
        p = request.params
        settings = request.prompt_settings
        seen.append((p.temperature, p.max_tokens, settings.budget_chars, settings.form))
        raise _Stop

    monkeypatch.setattr(design_command, "policy_for", lambda *a, **k: None)
    monkeypatch.setattr(sandbox, "make_sandbox", lambda *a, **k: _NoSandbox())
    monkeypatch.setattr(admission, "design_and_admit", capture)
    with pytest.raises(_Stop):
        design_command.design_cmd(tmp_path / "out", **flags)  # type: ignore[arg-type]
    return seen[0]


def test_spade_design_and_the_bootstrap_measurement_use_the_recipes_designer(
    tmp_path: Path, monkeypatch
) -> None:
    # with the embedded default, `spade design` and `spade bootstrap`'s measurement
    # (`measure_model`) sample the Designer as `spade train` does: TINY_CPU.design's
    # temperature, reply length, prompt budget and form, unless a flag says otherwise
    from spade.config import TINY_CPU
    from spade.evals import measure
    from spade.selfplay import models

    d = TINY_CPU.design
    recipe = (d.temperature, d.max_tokens, d.prompt_budget_chars, d.form)
    measured: list[tuple] = []

    def capture(policy, **kw):
        p = kw["params"]
        settings = kw["settings"]
        measured.append((p.temperature, p.max_tokens, settings.budget_chars, settings.form))
        raise _Stop

    monkeypatch.setattr(models, "local_backend", lambda *a, **k: None)
    monkeypatch.setattr(measure, "design", capture)
    with pytest.raises(_Stop):
        measure.measure_model("unused")
    assert _designed_with(monkeypatch, tmp_path) == measured[0] == recipe
    # the same numbers nowhere else: the recipe is not the other models' defaults
    other = design_command.OTHER_MODEL_DESIGN
    assert (other.temperature, other.max_tokens, other.prompt_budget_chars) != recipe[:3]
    # a flag overrides its own setting only; 0 lifts the prompt cap
    assert _designed_with(monkeypatch, tmp_path, temperature=0.9, prompt_budget_chars=0) == (
        0.9,
        d.max_tokens,
        None,
        d.form,
    )
    # any other model starts from the other defaults
    assert _designed_with(monkeypatch, tmp_path, model="some/hub-model") == (
        other.temperature,
        other.max_tokens,
        other.prompt_budget_chars,
        other.form,
    )
