"""The commands that use a model: `spade train | design | eval | bootstrap | untie`.

Here `spade train` (with its summary table), `spade bootstrap` and `spade untie`, and `run`,
which dispatches to them and to `spade design` (`spade.cli.design_command`) and `spade eval`
(`spade.cli.eval_command`). Imported only when one of them runs (they pull in torch through the
local backend).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import tyro
from rich.table import Table

from spade import config as config_io
from spade.cli.design_command import design_cmd
from spade.cli.eval_command import console, eval_cmd
from spade.config import FSDP, RECIPES, TINY_CPU, ModelConfig, TrainConfig, UsageError
from spade.types import BANDS, COMPACT, Form
from spade.warmstart.finetune import DEFAULT_STEPS


def train_main(argv: list[str]) -> int:
    """`spade train [--recipe NAME] [--resume RUN_DIR] [config overrides]`."""
    recipe, resume, rest = "tiny-cpu", None, []
    args = iter(argv)
    for arg in args:
        if arg == "--recipe" or arg.startswith("--recipe="):
            recipe = arg.split("=", 1)[1] if "=" in arg else next(args, "")
        elif arg == "--resume" or arg.startswith("--resume="):
            resume = arg.split("=", 1)[1] if "=" in arg else next(args, "")
        elif arg in ("--sandbox", "--sandbox=local", "--sandbox=ray"):
            rest += ["--sandbox-backend", arg.split("=", 1)[1] if "=" in arg else next(args, "")]
        else:
            rest.append(arg)
    if recipe not in RECIPES:
        console.print(f"spade train: unknown recipe {recipe!r}; choose from {', '.join(RECIPES)}")
        return 2
    if resume is not None:
        if rest:
            console.print(
                "spade train: --resume continues a run with its saved config; "
                "overrides are not allowed"
            )
            return 2
        run_dir = Path(resume)
        if not (run_dir / "config.json").exists():
            console.print(f"spade train: {run_dir} holds no run (no config.json)")
            return 2
        cfg = config_io.load(run_dir / "config.json")
    else:
        cfg = tyro.cli(
            TrainConfig,
            default=RECIPES[recipe],
            args=rest,
            prog="spade train",
            description=_TRAIN_HELP,
        )
    from spade.evals.before_after import split_suite_spec
    from spade.selfplay.models import serve_fsdp_rank
    from spade.start_weights import EXIT_OTHER_START, OtherStartError
    from spade.train import train

    try:
        for spec in cfg.eval_suites:
            split_suite_spec(spec)
    except ValueError as exc:
        console.print(f"spade train: --eval-suites: {exc}")
        return 2
    if cfg.model.trainer == FSDP:
        from spade.backends.fsdp import init_distributed, rank

        try:
            init_distributed()
        except RuntimeError as exc:
            console.print(f"spade train --trainer fsdp: {exc}")
            return 2
        if rank() != 0:  # the loop runs on rank 0; this rank holds a shard and follows it
            serve_fsdp_rank(cfg)
            return 0
    try:
        summary = train(cfg, resume=resume is not None, show=console.print)
    except OtherStartError as exc:  # its own status: `spade experiment` leaves such a run
        console.print(f"spade train: {exc}")
        return EXIT_OTHER_START
    except (FileExistsError, UsageError) as exc:  # a usage error, not a crash
        console.print(f"spade train: {exc}")
        return 2
    print_summary(summary)
    return 0


_TRAIN_HELP = (
    "Run SPADE self-play. Presets: --recipe tiny-cpu (default: the embedded model on this "
    "machine), paper-games, paper-tools (real models; set --model). --resume RUN_DIR "
    "continues a run exactly where it was stopped. Every field below overrides the preset."
)


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def print_summary(summary: dict[str, Any]) -> None:
    table = Table(title="self-play summary")
    for column in (
        "iter",
        "valid designs",
        "designer reward",
        "regret (closed)",
        "new-design regret [95% CI]",
        "plain win",
        "hinted win",
        "agent/designer samples",
        "frontier/mastered/out",
        "turns",
        "s",
    ):
        table.add_column(column, justify="right")
    for m in summary["iterations"]:
        bands = m.get("bands") or {}
        total = bands.get("total") or 0
        shares = "-"
        if total:
            shares = "/".join(f"{bands.get(k, 0) / total:.0%}" for k in BANDS)
        new = m.get("new_design_regret")
        new_text = "-" if not new else f"{new['mean']:+.2f} [{new['low']:+.2f}, {new['high']:+.2f}]"
        table.add_row(
            str(m["iteration"]),
            _fmt(m.get("valid_design_rate")),
            _fmt(m.get("designer_reward")),
            _fmt(m.get("regret")),
            new_text,
            _fmt(m["plain_win_rate"]),
            _fmt(m.get("hinted_win_rate")),
            f"{m.get('agent_samples', 0)}/{m.get('designer_samples', 0)}",
            shares,
            _fmt(m["mean_turns"]),
            f"{m['seconds']:.0f}",
        )
    console.print(table)
    evals = summary.get("eval", {})
    for when in ("before", "after"):
        if when in evals:
            o = evals[when]["overall"]
            console.print(
                f"held-out win rate {when}: {o['rate']:.2f} "
                f"(95% CI {o['low']:.2f}-{o['high']:.2f}, {o['episodes']} episodes)"
            )
    suites = evals.get("suites", {})
    for spec in dict.fromkeys(k for phase in suites.values() for k in phase):
        cells = []
        for when in ("before", "after"):
            result = suites.get(when, {}).get(spec)
            if result and "overall" in result:
                o = result["overall"]
                cells.append(f"{when} {o['rate']:.2f} ({o['wins']}/{o['episodes']})")
            elif result:
                cells.append(f"{when}: skipped ({result.get('skipped')})")
        console.print(f"{spec}: " + ", ".join(cells))
    model = summary.get("model") or {}
    if model:
        params = model.get("parameters")
        size = f", {params / 1e6:.1f}M parameters" if params else ""
        console.print(
            f"model: {model.get('path', '?')}{size}, {model.get('precision', '?')} on "
            f"{model.get('device', '?')}"
        )
    if "peak_rss_mib" in summary:
        console.print(f"peak memory (RSS): {summary['peak_rss_mib'] / 1024:.2f} GiB")
    console.print(f"run directory: {summary['run_dir']}")


# --- bootstrap --------------------------------------------------------------------------------


def bootstrap_cmd(
    model: str = "smollm2",
    force: bool = False,
    seed: int = 0,
    measure: bool = True,
    steps: int = DEFAULT_STEPS,
    form: Form = TINY_CPU.design.form,
    lora_rank: int = 0,
    trainable_layers: int = 10,
    learning_rate: float = 3e-4,
) -> int:
    """Warm-start a model on both roles (template families and seeds, cached), then measure it.

    Args:
        model: `smollm2` (the embedded default), `tiny-test`, or a local checkpoint.
        form: The Designer form it is taught (the `tiny-cpu` recipe uses `compact`).
        lora_rank: Train LoRA adapters of this rank instead of all weights (0: all weights).
        trainable_layers: Train only the top N decoder layers (0: every layer).
        learning_rate: Peak learning rate (AdamW, 5% warm-up, cosine decay).
        steps: Optimizer steps (the budget: the same command gives the same weights on a quiet
            or a busy machine; a different budget is a different cached model).
        force: Rebuild even if a cached model exists.
        seed: Seed of the warm start.
        measure: Report the share of admitted Designer replies (48, the loop's prompt) and the
            Agent's win rate on the held-out evaluation set.
    """
    from spade.warmstart.finetune import bootstrap

    if steps <= 0:
        console.print(f"spade bootstrap: --steps must be positive, got {steps}")
        return 2
    path = bootstrap(
        model,
        seed=seed,
        force=force,
        steps=steps,
        form=form,
        lora_rank=lora_rank,
        trainable_layers=trainable_layers or None,
        learning_rate=learning_rate,
    )
    console.print(f"warm-started model: {path}")
    if measure:
        from spade.evals.measure import measure_model

        report = measure_model(
            str(path), seed=seed, form=form, show=lambda line: console.print(line, soft_wrap=True)
        )
        console.print(json.dumps(report, indent=2))
    return 0


def untie_cmd(
    model: str = "smollm2",
    out: Path | None = None,
    form: Form = COMPACT,
    warm_start: bool = True,
    force: bool = False,
) -> int:
    """Write a copy of a model whose LM head is its own weight, for vLLM weight sync.

    vLLM 0.32's `reload_weights` keeps the launch-time LM head of a model with tied embeddings
    (SmolLM2 ties them), so `spade train --vllm-urls` refuses such a model: serve and train
    the copy this writes instead (docs/scale.md). Same outputs; one more weight matrix.

    Args:
        model: `smollm2` (the embedded default, warm-started as `spade train` would), `tiny-test`,
            or a local model folder.
        out: Where to write the copy (default: beside the model, with `-untied` appended).
        form: The Designer form of the warm start (as `--designer.form` in training).
        warm_start: Untie the warm-started default (as `spade train` trains it), not the raw one.
        force: Rewrite an existing copy.
    """
    from spade.backends.torch_setup import untie_embeddings
    from spade.selfplay.models import warm_started_model

    source = warm_started_model(ModelConfig(model=model, warm_start=warm_start), form=form)
    target = out if out is not None else Path(str(source).rstrip("/") + "-untied")
    if (target / "config.json").exists() and not force:
        console.print(f"untied copy (exists; --force rewrites it): {target}", soft_wrap=True)
    else:
        try:
            untie_embeddings(source, target)
        except ValueError as e:
            console.print(f"spade untie: {e}")
            return 2
        console.print(f"untied copy of {source}: {target}", soft_wrap=True)
    console.print(
        f"serve it: MODEL={target} recipes/vllm_server.sh\n"
        f"train it: spade train --model {target} --vllm-urls URL ...",
        soft_wrap=True,
    )
    return 0


def run(name: str, argv: list[str]) -> int:
    if name == "train":
        return train_main(argv)
    commands = {
        "eval": eval_cmd,
        "design": design_cmd,
        "bootstrap": bootstrap_cmd,
        "untie": untie_cmd,
    }
    result = tyro.cli(commands[name], args=argv, prog=f"spade {name}")  # type: ignore[call-overload]
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(run(sys.argv[1], sys.argv[2:]))
