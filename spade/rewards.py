"""Pure reward and advantage functions of the self-play loop (SPADE.md sections 2 and 3).

Agent: `group_advantages` is the GRPO z-score over the plain plays of one environment in one
iteration. Designer: a reward function maps the `DesignStats` of one design, collected at the
end of its window, to a number; `designer_advantages` centres those rewards per (skill, regen)
group and scales them by `designer_scale` (no std division), so both roles' gradients stay
comparable. Reward variants are values passed into the loop (`blend_reward`, `pure_regret_reward`,
`solve_rate_reward`, a `LearningPotential` instance); `DESIGNER_REWARDS` maps names to them for
the CLI only.

Where this departs from the paper's reference (SPADE.md "Ours"):

- regret needs the hinted and plain arms to have the same length (same seeds, same counts);
- a failed design attempt (no code, invalid code, rejected) is a training sample with
  `INVALID_DESIGN_REWARD`, below every valid design's reward, instead of being dropped; a copy
  of a warm-start training program is such a failure (`spade.selfplay.admission.TRAINING_COPY`), so
  a memorised program never earns a design's reward;
- the Designer's advantage scale has a floor (`designer_scale(floor=1.0)`), so it is not 0 in
  an iteration where the Agent has no samples;
- hint gates (`hint_gate`) close the "password" exploit where the hint simply gives the answer;
  a design whose hint fails them gets no regret term;
- "win rate" is the fraction of plays with return > 0 (a win, SPADE.md section 1), not the mean
  return: returns lie in [-1, 1], so a mean return of 0.5 could be all draws-and-wins or a mix of
  losses, and the plateau's [0.4, 0.6] band is meant as "wins about half the time".

Nothing here holds state except an explicit `LearningPotential` object, whose state is plain
JSON data (`state_dict` / `load_state_dict`) so a resumed run gives identical rewards.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from spade.sandbox.runtime import boxed_contents

INVALID_DESIGN_REWARD = -1.0
"""Reward of a failed design attempt (no code, invalid code, rejected by validation or as a
copy of a warm-start training program).

Below every valid design's reward: blend, solve rate and learning potential lie in [0, 1] and
pure regret in [0, 2] (returns lie in [-1, 1]), so invalid attempts always get a negative
advantage within their (skill, regen) group whenever a valid design shares it.
"""

MIN_LEAK_CHARS = 3
"""Solution strings shorter than this are not searched for in hints: one- or two-character
answers ("7", "A", "no") occur in ordinary prose by chance and would reject honest hints."""
REGRET_ELIGIBLE_PLAIN_WIN_RATE = (0.05, 0.95)
"""An environment earns regret reward only if its plain win rate lies in this closed range: at
0 or 1 without the hint, regret measures nothing but whether the hint gives the answer away."""

BLEND_REGRET_WEIGHT = 0.4
BLEND_PLATEAU_WEIGHT = 0.6
BLEND_REGRET_SCALE = 0.15
"""Regret at which the blend's regret term saturates at 1."""

DesignerReward = Callable[["DesignStats"], float]
"""A designer reward variant: the stats of one design at the end of its window -> its reward."""


# ---------------------------------------------------------------------------------------------
# Agent


def group_advantages(returns_G: Sequence[float], eps: float = 1e-8) -> list[float]:
    """GRPO advantages of one environment's plays: (R - mean) / (population std + eps).

    A group whose returns are all equal carries no signal and gets exact zeros (the std would
    be 0, and float noise in the mean must not turn into +-1e8-scaled advantages).
    """
    n = len(returns_G)
    if n == 0:
        return []
    if min(returns_G) == max(returns_G):
        return [0.0] * n
    mean = sum(returns_G) / n
    std = math.sqrt(sum((r - mean) ** 2 for r in returns_G) / n)
    return [(r - mean) / (std + eps) for r in returns_G]


# ---------------------------------------------------------------------------------------------
# Designer statistics


def win_rate_of(returns: Iterable[float]) -> float:
    """Fraction of returns > 0 (a win, SPADE.md section 1); 0.0 when there are none."""
    returns = list(returns)
    return sum(1 for r in returns if r > 0) / len(returns) if returns else 0.0


def paired_win_difference(
    pairs: Sequence[tuple[float, float]], z: float = 1.96
) -> dict[str, float] | None:
    """Hinted minus plain win rate over paired plays (same environment, same seed): the mean of
    the per-pair differences of wins (1 / 0), with a normal-approximation 95% interval on it
    (clipped to [-1, 1]). None without pairs. One pair gives an interval of the whole range."""
    if not pairs:
        return None
    diffs = [float(h > 0) - float(p > 0) for h, p in pairs]
    n = len(diffs)
    mean = sum(diffs) / n
    if n == 1:
        return {"mean": mean, "low": -1.0, "high": 1.0, "pairs": 1}
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
    half = z * sd / math.sqrt(n)
    return {"mean": mean, "low": max(-1.0, mean - half), "high": min(1.0, mean + half), "pairs": n}


def regret(hinted_returns: Sequence[float], plain_returns: Sequence[float]) -> float:
    """mean(hinted) - mean(plain). Both arms must be non-empty and the same length.

    The arms are meant to be paired plays (same seeds, same counts, SPADE.md section 3 "Ours");
    unequal lengths mean the caller mixed something up, so this fails instead of guessing.
    """
    if not hinted_returns or not plain_returns:
        raise ValueError(
            f"regret needs both arms: {len(hinted_returns)} hinted, {len(plain_returns)} plain"
        )
    if len(hinted_returns) != len(plain_returns):
        raise ValueError(
            f"regret needs paired arms (same seeds and counts): "
            f"{len(hinted_returns)} hinted vs {len(plain_returns)} plain"
        )
    return sum(hinted_returns) / len(hinted_returns) - sum(plain_returns) / len(plain_returns)


def plateau(win_rate: float) -> float:
    """1 on [0.4, 0.6], linear down to 0 at 0.15 and at 0.85, 0 outside."""
    if math.isnan(win_rate):
        raise ValueError("plateau of NaN")
    if 0.4 <= win_rate <= 0.6:
        return 1.0
    if 0.15 < win_rate < 0.4:
        return (win_rate - 0.15) / 0.25
    if 0.6 < win_rate < 0.85:
        return (0.85 - win_rate) / 0.25
    return 0.0


@dataclass(frozen=True)
class DesignStats:
    """What the Designer's reward sees about one admitted design, at the end of its window.

    `hinted_returns` / `plain_returns` are the paired arms at the design iteration (same seeds,
    same counts). `window_returns` are all plain Agent plays of the environment over its window
    (the design iteration's plain plays included, hinted plays excluded). `hint_ok` says the
    hint passed `hint_gate`; when it is True the arms must be paired so `regret` is defined.
    Sequences are stored as tuples of floats.
    """

    env_id: str
    skill: str
    regen: int
    hint: str
    hinted_returns: tuple[float, ...]
    plain_returns: tuple[float, ...]
    window_returns: tuple[float, ...]
    hint_ok: bool

    def __post_init__(self) -> None:
        for name in ("hinted_returns", "plain_returns", "window_returns"):
            object.__setattr__(self, name, tuple(float(r) for r in getattr(self, name)))
        if self.hint_ok:
            regret(self.hinted_returns, self.plain_returns)  # raises if the arms are not paired

    @property
    def win_rate(self) -> float:
        """Fraction of window plays won (return > 0); 0.0 if the window holds no plays."""
        return win_rate_of(self.window_returns)

    @property
    def plain_win_rate(self) -> float:
        """Fraction of the plain arm's plays won (return > 0); 0.0 if there are none."""
        return win_rate_of(self.plain_returns)

    @property
    def regret(self) -> float:
        """mean(hinted) - mean(plain); raises ValueError unless the arms are paired."""
        return regret(self.hinted_returns, self.plain_returns)


# ---------------------------------------------------------------------------------------------
# Hint gates


def solution_strings(reply: str) -> list[str]:
    """The strings a hint must not contain for one solution reply: the reply itself, each
    `\\boxed{}` content (found by the runtime's parser, `boxed_contents`) and each `<answer>`
    content, those of at least MIN_LEAK_CHARS."""
    candidates = [reply]
    candidates += boxed_contents(reply)
    candidates += re.findall(r"<answer>(.*?)</answer>", reply, flags=re.DOTALL | re.IGNORECASE)
    out = []
    for c in candidates:
        norm = _normalise(c)
        if len(norm) >= MIN_LEAK_CHARS and norm not in out:
            out.append(norm)
    return out


def _normalise(text: str) -> str:
    """Case-folded, whitespace runs collapsed: "verbatim" should survive re-spacing."""
    return " ".join(text.split()).casefold()


def hint_gate(hint: str, solution_replies: Sequence[str], plain_win_rate: float) -> str | None:
    """None if the hint may earn regret reward, else the first reason it may not.

    Gates, in order: non-empty; no code fence; does not contain any solution reply, nor its
    `\\boxed{}` / `<answer>` content, verbatim (ignoring case and whitespace runs; strings
    shorter than MIN_LEAK_CHARS are not searched); the plain win rate lies in
    REGRET_ELIGIBLE_PLAIN_WIN_RATE.

    The length cap (600 characters, SPADE.md section 3) is applied where hints are read:
    `spade.selfplay.designer` keeps at most `prompts.MAX_HINT_CHARS` characters of a hint.
    """
    if not hint.strip():
        return "hint is empty"
    if "```" in hint:
        return "hint contains a code fence"
    norm_hint = _normalise(hint)
    for reply in solution_replies:
        for leak in solution_strings(reply):
            if leak in norm_hint:
                return f"hint contains the solution {leak!r}"
    lo, hi = REGRET_ELIGIBLE_PLAIN_WIN_RATE
    if not lo <= plain_win_rate <= hi:
        return f"plain win rate {plain_win_rate:.3f} outside [{lo}, {hi}]"
    return None


# ---------------------------------------------------------------------------------------------
# Designer reward variants


def blend_reward(stats: DesignStats) -> float:
    """The paper's deployed reward, in [0, 1]:
    0.4 * clip(regret / 0.15, 0, 1) [0 unless hint_ok] + 0.6 * plateau(win_rate)."""
    regret_term = 0.0
    if stats.hint_ok:
        regret_term = min(1.0, max(0.0, stats.regret / BLEND_REGRET_SCALE))
    return BLEND_REGRET_WEIGHT * regret_term + BLEND_PLATEAU_WEIGHT * plateau(stats.win_rate)


def pure_regret_reward(stats: DesignStats) -> float:
    """Ablation: max(0, regret) if the hint passed its gates, else 0. In [0, 2]."""
    return max(0.0, stats.regret) if stats.hint_ok else 0.0


def solve_rate_reward(stats: DesignStats) -> float:
    """Ablation: plateau(win_rate) only, in [0, 1]; the hint plays no part."""
    return plateau(stats.win_rate)


class LearningPotential:
    """Ablation: reward |win_rate - mu_slow(skill)|, with a per-skill slow EMA of the window win
    rate. In [0, 1].

    Calls are stateful and order-dependent: each call returns the reward against the EMA as it
    stands, then folds this design's win rate into its skill's EMA. The first design of a skill
    initialises the EMA to its win rate (reward 0: nothing to compare against yet).

    Ours: the paper keeps a fast EMA beside the slow one, but its reward reads only the slow one,
    so no fast EMA is kept here (a saved state that still holds one loads; it is ignored).
    """

    def __init__(self, slow_alpha: float = 0.05) -> None:
        if not 0.0 < slow_alpha <= 1.0:
            raise ValueError(f"slow_alpha must be in (0, 1], got {slow_alpha}")
        self.slow_alpha = float(slow_alpha)
        self._slow: dict[str, float] = {}

    def mu_slow(self, skill: str) -> float | None:
        return self._slow.get(skill)

    def __call__(self, stats: DesignStats) -> float:
        w, skill = stats.win_rate, stats.skill
        if skill not in self._slow:
            self._slow[skill] = w
            return 0.0
        reward = abs(w - self._slow[skill])
        self._slow[skill] += self.slow_alpha * (w - self._slow[skill])
        return reward

    def state_dict(self) -> dict[str, Any]:
        """Plain JSON data; Python floats round-trip exactly through json."""
        return {"slow_alpha": self.slow_alpha, "slow": dict(sorted(self._slow.items()))}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore what `state_dict` returned (alpha included)."""
        fresh = LearningPotential(state["slow_alpha"])  # validates the alpha
        self.slow_alpha = fresh.slow_alpha
        self._slow = {str(k): float(v) for k, v in state["slow"].items()}


DesignerRewardName = Literal["blend", "regret", "solve_rate", "learning_potential"]
"""The names of `DESIGNER_REWARDS`, the values of `TrainConfig.designer_reward` (the CLI's
choices)."""

DESIGNER_REWARDS: dict[str, DesignerReward | Callable[[], DesignerReward]] = {
    "blend": blend_reward,
    "regret": pure_regret_reward,
    "solve_rate": solve_rate_reward,
    "learning_potential": LearningPotential,
}
"""For the CLI only: name -> reward function, or a factory (a class) for stateful variants.
Use `make_designer_reward(name)` to get a ready reward function either way."""


def make_designer_reward(name: str) -> DesignerReward:
    """The reward function named `name` in DESIGNER_REWARDS (a fresh object for stateful ones)."""
    try:
        value = DESIGNER_REWARDS[name]
    except KeyError:
        raise ValueError(
            f"unknown designer reward {name!r}; choose from {sorted(DESIGNER_REWARDS)}"
        ) from None
    if isinstance(value, type):  # a factory: stateful variants get a fresh object per run
        return cast(DesignerReward, value())
    return cast(DesignerReward, value)


# ---------------------------------------------------------------------------------------------
# Designer advantages


def designer_scale(
    n_agent_samples: int,
    n_designer_samples: int,
    regen_interval: int,
    cap: float = 50.0,
    floor: float = 1.0,
) -> float:
    """max(floor, min(N_agent / N_designer * regen_interval, cap)); 0.0 when there are no
    designer samples.

    Designer samples are few and arrive once per regeneration; scaling their advantages by the
    sample ratio keeps their share of the gradient comparable to the Agent's. The floor is ours
    (the paper has none): without it the scale is 0 whenever the Agent has no samples in the
    iteration, so a mix of valid and invalid designs would teach the Designer nothing exactly
    when the Agent is stuck. `floor=0` gives the paper's formula.
    """
    if n_agent_samples < 0 or n_designer_samples < 0 or regen_interval < 1 or not 0 <= floor:
        raise ValueError(
            f"bad designer_scale inputs: {n_agent_samples} agent, {n_designer_samples} designer, "
            f"regen_interval {regen_interval}, floor {floor}"
        )
    if n_designer_samples == 0:
        return 0.0
    return max(floor, min(n_agent_samples / n_designer_samples * regen_interval, cap))


def designer_advantages(
    rewards: Sequence[float], groups: Sequence[Hashable], scale: float
) -> list[float]:
    """(r - mean of r over items with the same group key) * scale; no std division.

    The group key is (skill, regen): designs compete only with designs of the same skill from
    the same regeneration. Failed attempts (INVALID_DESIGN_REWARD) belong to their group too.
    """
    if len(rewards) != len(groups):
        raise ValueError(f"{len(rewards)} rewards but {len(groups)} group keys")
    members: dict[Hashable, list[float]] = defaultdict(list)
    for r, g in zip(rewards, groups):
        members[g].append(r)
    means = {g: sum(rs) / len(rs) for g, rs in members.items()}
    return [(r - means[g]) * scale for r, g in zip(rewards, groups)]
