"""Warm-start variants, measured: `python benchmarks/warmstart.py --variants focus --steps 160`.

Each variant is one `spade.warmstart.finetune.bootstrap(...)` of the default model for the same
number of optimizer steps (`--steps`), then `spade.evals.measure.measure_model` (48 Designer
replies with the loop's own prompt through the real validator, the Agent on the paired evaluation
sets). One JSON line per variant goes to `--out` (appended, so a long series survives a kill), and
a table of everything in that file is printed at the end. The budget is steps, so a busy machine
changes the seconds, not the weights; to compare two warm starts on the same items, see
`benchmarks/warmstart_pair.py`.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import time
from pathlib import Path
from typing import Any

from spade.warmstart.data import COMPACT_FAMILIES

FOCUS_FAMILIES = COMPACT_FAMILIES
"""The shortest compact family of each game skill, evaluation families left out."""

TWELVE_FAMILIES = (
    "arithmetic",
    "assignment",
    "broken_chain",
    "cheapest_route",
    "clue_number",
    "code_breaker",
    "grid_rule",
    "grid_walk",
    "modular_equation",
    "next_term",
    "path_trace",
    "response_law",
)
"""Every template family but the evaluation ones (the session-3 warm start's data)."""
SESSION3_DATA = {"families": TWELVE_FAMILIES, "data": {"count": 1500, "mini": 0}}

VARIANTS: dict[str, dict[str, Any]] = {
    # the session-3 default: one program per AdamW step, every weight trained
    "full-b1": {"batch_tokens": 1024, "learning_rate": 1e-4, **SESSION3_DATA},
    # several sequences per step (the optimizer step is amortised), every weight trained
    "full": {"batch_tokens": 4096, "learning_rate": 1e-4, **SESSION3_DATA},
    # only the top 10 of 30 layers: the backward pass stops early (~2x tokens per second)
    "top10": {
        "batch_tokens": 4096,
        "learning_rate": 2e-4,
        "trainable_layers": 10,
        **SESSION3_DATA,
    },
    "lora64": {"batch_tokens": 4096, "learning_rate": 1e-3, "lora_rank": 64, **SESSION3_DATA},
    # fewer, shorter families (one per skill), more optimizer steps, a higher learning rate:
    # each family is seen ~3x as often in the same steps
    "focus": {
        "batch_tokens": 2048,
        "learning_rate": 3e-4,
        "trainable_layers": 10,
        "families": FOCUS_FAMILIES,
        "data": {"count": 1500, "mini": 0},
    },
    # approach 3: mostly one-question programs of 5-9 lines (spade.templates.mini), the rest
    # from the six focus families
    "mini": {
        "batch_tokens": 2048,
        "learning_rate": 3e-4,
        "trainable_layers": 10,
        "families": FOCUS_FAMILIES,
        "data": {"count": 500, "mini": 1000},
    },
    # as `mini`, with more Agent turns (35% of the tokens), measured at the sampling
    # temperatures the tiny-cpu recipe then uses (Designer 0.5, Agent 0.7)
    "mini-agent": {
        "batch_tokens": 2048,
        "learning_rate": 3e-4,
        "trainable_layers": 10,
        "designer_share": 0.65,
        "families": FOCUS_FAMILIES,
        "data": {"count": 500, "mini": 1000},
        "measure": {"temperature": 0.5},
    },
}


def cpu_name() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return platform.processor() or "unknown"
    for line in out.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def run_variant(
    name: str, steps: int, seed: int, workdir: Path, temperatures: list[float]
) -> dict[str, Any]:
    from spade.evals.measure import measure_model
    from spade.warmstart.data import warm_start_examples
    from spade.warmstart.finetune import bootstrap

    settings = dict(VARIANTS[name])
    families = settings.pop("families", None)
    data = settings.pop("data", {})
    measure = settings.pop("measure", {})
    started = time.monotonic()
    path = bootstrap(
        "smollm2",
        examples=None
        if families is None
        else (lambda: warm_start_examples(seed, "compact", families=families, **data)),
        steps=steps,
        seed=seed,
        output=workdir / name,
        force=True,
        **settings,
    )
    train_seconds = time.monotonic() - started
    meta = json.loads((path / "spade_bootstrap.json").read_text())
    same = {"families": families, "mini": data.get("mini"), "count": data.get("count")}
    report = measure_model(str(path), seed=seed, keep_replies=True, **same, **measure)
    by_temperature = {
        str(t): measure_model(str(path), seed=seed, temperature=t, agent=False, **same)
        for t in temperatures
    }
    settings["families"] = families
    settings["data"] = data
    settings["measure"] = measure
    return {
        "variant": name,
        "settings": settings,
        "steps": steps,
        "cpu": cpu_name(),
        "train_seconds": round(train_seconds, 1),
        "bootstrap": meta,
        "measure": report,
        "designer_by_temperature": {
            t: {k: v for k, v in m.items() if k.startswith("designer") or k.startswith("admitted")}
            for t, m in by_temperature.items()
        },
    }


def throughput(repeats: int = 3) -> str:
    """Training tokens per second of the default model by setting (forward, backward and an
    AdamW step on random 512-token sequences, loss on the last half, bf16 autocast where the
    CPU has it), best of `repeats - 1` after a warm-up, with the ratio to a full fine-tune of one
    sequence per step; then an AdamW step over all weights, `foreach` against `fused`."""
    import torch
    from transformers import AutoModelForCausalLM

    from spade.backends.torch_setup import cpu_has_native_bf16, model_path

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(model_path("smollm2"), dtype=torch.float32)
    bf16 = cpu_has_native_bf16()
    settings = [  # (label, batch, autocast, frozen lower layers)
        ("full fine-tune, batch 1, fp32", 1, False, 0),
        ("full fine-tune, batch 1", 1, bf16, 0),
        ("full fine-tune, batch 4", 4, bf16, 0),
        ("lower 20 layers frozen (10 trained), batch 1", 1, bf16, 20),
        ("lower 25 layers frozen (5 trained), batch 1", 1, bf16, 25),
    ]
    rates: dict[str, float] = {}
    for label, batch, autocast, frozen in settings:
        for i, layer in enumerate(model.model.layers):
            layer.requires_grad_(i >= frozen)
        model.model.embed_tokens.weight.requires_grad_(frozen == 0)
        optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)
        ids = torch.randint(0, model.config.vocab_size, (batch, 512))
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                hidden = model.model(input_ids=ids).last_hidden_state
                logits = model.lm_head(hidden[:, -256:]).float()
            loss = torch.nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]), ids[:, -256:].reshape(-1)
            )
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            times.append(time.perf_counter() - started)
        rates[label] = batch * 512 / min(times[1:])
    base = rates["full fine-tune, batch 1"]
    lines = [
        f"CPU: {cpu_name()}; bf16 autocast: {bf16}; threads: {torch.get_num_threads()}",
        "| setting | tokens/s | vs full fine-tune, batch 1 |",
        "|---|---|---|",
        *(f"| {k} | {v:.0f} | {v / base:.2f}x |" for k, v in rates.items()),
    ]
    model.requires_grad_(True)
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    for name, kwargs in (("foreach (torch's default)", {}), ("fused", {"fused": True})):
        optimizer = torch.optim.AdamW(list(model.parameters()), lr=1e-5, **kwargs)
        optimizer.step()  # allocates the state
        started = time.perf_counter()
        optimizer.step()
        lines.append(f"AdamW step over all weights, {name}: {time.perf_counter() - started:.3f} s")
    return "\n".join(lines)


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| variant | steps | Designer seqs seen | tokens | final NLL | admitted (48) | "
        "first failures | near-dup of training | Agent near set [95% CI] | Agent far set |"
    )
    lines = [head, "|" + "---|" * 10]
    for r in rows:
        b, m = r["bootstrap"], r["measure"]
        ev, ho = m["agent_near_set"], m["agent_far_set"]

        def rate(x: dict[str, Any]) -> str:
            lo, hi = x["win_rate_95ci"]
            return f"{x['win_rate']:.1%} [{lo:.1%}, {hi:.1%}]"

        fails = ", ".join(f"{k} {v}" for k, v in sorted(m["designer_first_failures"].items()))
        lines.append(
            f"| {r['variant']} | {b['steps']} | {b['sequences_seen']['designer']} | "
            f"{b['tokens_seen']} | {b['final_nll']:.2f} | {m['designer_admitted']} "
            f"({m['designer_admitted_rate']:.0%}) | {fails} | "
            f"{m['admitted_near_duplicates_of_training']} | {rate(ev)} | {rate(ho)} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", nargs="+", default=["full", "top10"], choices=VARIANTS)
    parser.add_argument("--steps", type=int, default=160, help="optimizer steps per variant")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--designer-temperatures",
        type=float,
        nargs="*",
        default=[0.4],
        help="also measure the Designer alone at these sampling temperatures",
    )
    parser.add_argument("--out", type=Path, default=Path("runs/warmstart-variants.jsonl"))
    parser.add_argument("--workdir", type=Path, default=Path("runs/warmstart-variants"))
    parser.add_argument(
        "--throughput",
        action="store_true",
        help="only print training tokens/s by setting (no warm start is trained)",
    )
    args = parser.parse_args()
    if args.throughput:
        print(throughput())
        return
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for name in args.variants:
        row = run_variant(name, args.steps, args.seed, args.workdir, args.designer_temperatures)
        with args.out.open("a") as f:
            f.write(json.dumps(row) + "\n")
        print(table([row]), flush=True)
    rows = [json.loads(line) for line in args.out.read_text().splitlines() if line.strip()]
    print(f"\nCPU: {rows[-1]['cpu'] if rows else cpu_name()}")
    print(table(rows))


if __name__ == "__main__":
    main()
