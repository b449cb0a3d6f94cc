"""The seams between the self-play loop and a model: `Policy` (sampling), `Trainer` (updates).

The loop only ever sees the types in this file. A backend is anything that implements the
protocols: the local torch/transformers backend (`spade.backends.local`), an OpenAI-compatible
server (`spade.backends.openai_compat`, sampling only), and later vLLM/SGLang generation with
weight sync, torchrun/FSDP training or Ray-driven rollouts. Those arrive as new modules that
implement the same three methods; the loop does not change because:

- `Policy.sample` takes a whole batch of prompts at once (what a batched engine wants) and returns
  plain frozen data with the exact token ids and logprobs, so nothing downstream re-tokenizes;
- `Policy.extend` owns the chat template, so token-in/token-out multi-turn play works the same
  whether the template lives in a Hugging Face tokenizer or inside a remote engine;
- `Trainer.update` is one call per iteration with plain `Sample`s; a trainer that runs in other
  processes (FSDP) or must push weights to a separate generation engine (vLLM) does that inside
  `update`, so the loop never sees weight sync.

Token conventions (shared by every backend):

- a `Completion`'s `logprobs[i]` is the log-probability of `completion_ids[i]` under the policy's
  full-vocabulary distribution at the sampling temperature (logits / temperature), before top-k /
  top-p truncation. That is the distribution the trainer re-scores, so the PPO ratio starts at 1;
- a `Sample` is one sequence; `logprobs[i]` belongs to `token_ids[i]` (conditioned on the tokens
  before it) and is 0.0 wherever `loss_mask[i] == 0`. Position 0 is never trained.

Multi-turn conversations are extended token-in/token-out (SPADE.md section 2): the next prompt is
the previous prompt's tokens + the tokens the model generated, exactly as generated + only the new
messages' chat-template delta. `episode_sample` checks that invariant when it builds the training
sequence of an episode, and fails loudly if a backend ever re-tokenized.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

Message = Mapping[str, Any]
"""One chat message, OpenAI style: {"role": "user" (or system, assistant, tool), "content": ...}."""

FinishReason = Literal["stop", "length", "content_filter", "tool_calls"]
"""Why a reply ended: a natural stop (end of turn or a stop string), max_tokens, or, from an
OpenAI-compatible server only, its content filter or a tool call."""
"""`stop`: an end-of-turn token or a stop string ended the reply; `length`: `max_tokens` did."""


@dataclass(frozen=True)
class SamplingParams:
    """How to sample one reply per prompt."""

    max_tokens: int = 512
    """Most tokens generated per reply (the reply is cut with finish_reason "length")."""
    temperature: float = 1.0
    """Softmax temperature; 0 means greedy (logprobs are then reported at temperature 1)."""
    top_p: float = 1.0
    """Nucleus sampling: keep the smallest set of tokens whose probability reaches top_p."""
    top_k: int = 0
    """Keep only the k most likely tokens; 0 = off."""
    stop: tuple[str, ...] = ()
    """Stop strings: generation ends after the token that completes one (it stays in the reply)."""
    seed: int | None = None
    """Seed for this batch; prompt i uses stream (seed, i). None: the backend's own generator."""

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")
        if self.temperature < 0 or not math.isfinite(self.temperature):
            raise ValueError(f"temperature must be finite and >= 0, got {self.temperature}")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.top_k < 0:
            raise ValueError(f"top_k must be >= 0, got {self.top_k}")
        if isinstance(self.stop, str):  # a lone string would be iterated char by char
            object.__setattr__(self, "stop", (self.stop,))

    @property
    def logprob_temperature(self) -> float:
        """The temperature at which reported logprobs (and hence training ratios) are computed."""
        return self.temperature if self.temperature > 0 else 1.0


@dataclass(frozen=True)
class Prompt:
    """A conversation to continue: its messages and, when known, its exact prompt tokens.

    `token_ids` is None for a fresh conversation (the backend renders `messages` with its chat
    template). `Policy.extend` returns prompts with `token_ids` set, so later turns condition on
    exactly the tokens of earlier turns (token-in/token-out). A backend that cannot take tokens as
    input (an OpenAI-compatible chat server) leaves it None and re-renders `messages`.
    """

    messages: tuple[Message, ...]
    token_ids: tuple[int, ...] | None = None

    @classmethod
    def of(cls, conversation: Prompt | Sequence[Message]) -> Prompt:
        if isinstance(conversation, Prompt):
            return conversation
        return cls(messages=tuple(conversation))


@dataclass(frozen=True)
class Completion:
    """One sampled reply.

    Token fields are None when the backend could not provide them (an OpenAI-compatible server
    that returns no token ids or logprobs); such a completion is fine for designing and
    evaluating, but `trainable` is False and `episode_sample` refuses it with the reason.
    """

    text: str
    """The decoded reply (special tokens removed); includes a matched stop string."""
    prompt_ids: tuple[int, ...] | None
    completion_ids: tuple[int, ...] | None
    logprobs: tuple[float, ...] | None
    """Per completion token, at `temperature` (see the module docstring)."""
    finish_reason: FinishReason
    temperature: float = 1.0
    """The temperature `logprobs` were computed at (SamplingParams.logprob_temperature)."""
    untrainable_reason: str | None = None
    """Why the token fields are missing, when they are."""
    weight_version: int | None = None
    """The version of the weights that sampled it, when a server reports one (VLLMPolicy)."""

    def __post_init__(self) -> None:
        if self.completion_ids is not None and self.logprobs is not None:
            if len(self.completion_ids) != len(self.logprobs):
                raise ValueError(
                    f"{len(self.completion_ids)} completion ids but {len(self.logprobs)} logprobs"
                )

    @property
    def trainable(self) -> bool:
        return (
            self.prompt_ids is not None
            and self.completion_ids is not None
            and self.logprobs is not None
        )


@runtime_checkable
class Policy(Protocol):
    """Samples replies. Implementations: LocalBackend, OpenAICompatPolicy."""

    def sample(
        self, prompts: Sequence[Prompt | Sequence[Message]], params: SamplingParams
    ) -> list[Completion]:
        """One completion per prompt, in order."""
        ...

    def extend(self, prompt: Prompt, completion: Completion, messages: Sequence[Message]) -> Prompt:
        """The prompt for the next turn: `prompt` + `completion` (as generated) + `messages`."""
        ...


Role = Literal["designer", "agent"]


@dataclass(frozen=True)
class Sample:
    """One training sequence: tokens, which of them are trained, their behaviour logprobs."""

    token_ids: tuple[int, ...]
    loss_mask: tuple[int, ...]
    """1 where the token was generated by the policy and is trained, else 0."""
    logprobs: tuple[float, ...]
    """Behaviour logprob of each token at sampling time (0.0 where loss_mask is 0)."""
    advantage: float
    role: Role
    temperature: float = 1.0
    """The temperature the behaviour logprobs were computed at; the trainer re-scores at it."""

    def __post_init__(self) -> None:
        n = len(self.token_ids)
        if len(self.loss_mask) != n or len(self.logprobs) != n:
            raise ValueError(
                f"misaligned sample: {n} tokens, {len(self.loss_mask)} mask, "
                f"{len(self.logprobs)} logprobs"
            )
        if n < 2:
            raise ValueError("a sample needs at least 2 tokens (a prompt token and a reply token)")
        if self.loss_mask[0]:
            raise ValueError("loss_mask[0] must be 0: the first token has no context to score it")
        if not math.isfinite(self.advantage):
            raise ValueError(f"advantage must be finite, got {self.advantage}")
        if self.temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {self.temperature}")

    @property
    def num_trained_tokens(self) -> int:
        return sum(self.loss_mask)


def episode_sample(completions: Sequence[Completion], advantage: float, role: Role) -> Sample:
    """The training sequence of one episode (one turn or many), built from its completions.

    Turn i's reply `completions[i].completion_ids` sits at offset `len(completions[i].prompt_ids)`
    and is trained (mask 1); everything else (prompts, observations, template tokens) is not.
    Each turn's prompt must start with the previous turn's prompt + reply, token for token.
    """
    if not completions:
        raise ValueError("an episode needs at least one completion")
    for c in completions:
        if not c.trainable:
            reason = c.untrainable_reason or "it carries no token ids or logprobs"
            raise ValueError(f"cannot train on this completion: {reason}")
    temperatures = {c.temperature for c in completions}
    if len(temperatures) != 1:
        raise ValueError(f"one episode sampled at several temperatures: {sorted(temperatures)}")
    mask: list[int] = []
    logprobs: list[float] = []
    tokens: list[int] = []
    for i, c in enumerate(completions):
        assert c.prompt_ids is not None and c.completion_ids is not None and c.logprobs is not None
        if tuple(tokens) != c.prompt_ids[: len(tokens)]:
            raise ValueError(
                f"turn {i}'s prompt does not start with the earlier turns' tokens: "
                "the conversation was re-tokenized instead of extended with Policy.extend"
            )
        new_prompt = c.prompt_ids[len(tokens) :]
        tokens += list(new_prompt) + list(c.completion_ids)
        mask += [0] * len(new_prompt) + [1] * len(c.completion_ids)
        logprobs += [0.0] * len(new_prompt) + list(c.logprobs)
    return Sample(
        token_ids=tuple(tokens),
        loss_mask=tuple(mask),
        logprobs=tuple(logprobs),
        advantage=float(advantage),
        role=role,
        temperature=temperatures.pop(),
    )


@runtime_checkable
class Trainer(Protocol):
    """Updates the policy. After `update` returns, the paired Policy samples the new weights."""

    def update(self, samples: Sequence[Sample]) -> dict[str, float]:
        """One policy update on this batch; returns scalar metrics (loss, kl, clip_frac, ...)."""
        ...

    def save(self, directory: str | Path) -> None:
        """Write everything needed to resume exactly: weights, optimizer, RNG, step counter."""
        ...

    def load(self, directory: str | Path) -> None:
        """Restore what `save` wrote."""
        ...


@dataclass(frozen=True)
class Models:
    """The policies and trainers of each role; the same objects unless `--separate-designer`."""

    agent: Policy
    agent_trainer: Trainer
    designer: Policy
    designer_trainer: Trainer


@dataclass(frozen=True)
class PPOConfig:
    """The policy-gradient update (SPADE.md section 2, step 5)."""

    learning_rate: float = 1e-6
    """AdamW learning rate (paper 1e-6 for a 30B model; small models want ~1e-4 to 1e-3)."""
    weight_decay: float = 0.1
    betas: tuple[float, float] = (0.9, 0.999)
    clip_low: float = 0.2
    """Ratio floor is 1 - clip_low."""
    clip_high: float = 0.28
    """Ratio ceiling is 1 + clip_high (asymmetric, DAPO-style 'clip-higher')."""
    kl_coef: float = 0.0
    """Weight of the k3 KL to a frozen copy of the initial weights; 0 = no reference model."""
    warmup_steps: int = 0
    """Linear learning-rate warm-up over the run's first N optimizer steps (0 = none). Adam's
    first step moves every trainable weight by about the learning rate whatever the gradient's
    size: at lr 1e-4 the default run's first update had an approx KL of 306 (one collapsed
    token) and its greedy near set fell 14 points; later updates at the same rate had 0.004."""
    max_grad_norm: float = 1.0
    """Clip the global gradient norm to this; 0 = no clipping."""
    micro_batch_tokens: int = 8192
    """Token budget (padded length x sequences) of one forward/backward micro-batch."""
    num_minibatches: int = 1
    """Optimizer steps per `update` call; the batch is split into this many contiguous chunks."""
    role_normalisation: Literal["joint", "per_role"] = "per_role"
    """What divides a minibatch's token-summed loss. `per_role`: each role's sum by that role's
    trained tokens in the minibatch, and the role losses added, so each role present gets a
    whole share of the step whatever its reply lengths (a mean over its tokens, as if it were
    alone). `joint` (the behaviour before issue 26): one division by all the minibatch's
    trained tokens, so the role with the longer replies takes the gradient: Designer replies of
    150-400 tokens beside Agent answers of ~10 left the Agent's sequences ~5-15% of each step.
    Within a role every token weighs the same either way; a minibatch of one role is the same."""
    tis_cap: float | None = None
    """Truncated importance sampling against a sampler/trainer mismatch (the reference's
    `--use-tis`): before updating, the trainer re-scores every sample at its current weights;
    the PPO ratio is taken against those logprobs and each token's loss is weighted by
    min(exp(trainer - sampler logprob), tis_cap). For samplers other than the trained model
    itself (vLLM); None (the default) trusts the sampler's logprobs as the local backend's are."""

    def __post_init__(self) -> None:
        if self.clip_low < 0 or self.clip_high < 0:
            raise ValueError("clip ranges must be >= 0")
        if self.warmup_steps < 0:
            raise ValueError(f"warmup_steps must be >= 0, got {self.warmup_steps}")
        if self.micro_batch_tokens < 1 or self.num_minibatches < 1:
            raise ValueError("micro_batch_tokens and num_minibatches must be >= 1")
        if self.tis_cap is not None and self.tis_cap <= 0:
            raise ValueError(f"tis_cap must be > 0 (or None), got {self.tis_cap}")
        if self.role_normalisation not in ("joint", "per_role"):
            raise ValueError(
                f"role_normalisation must be 'joint' or 'per_role', got {self.role_normalisation!r}"
            )
