"""Run directory -> PNG plots and one self-contained HTML report (images inlined, no network).

    spade report runs/latest                 # writes runs/latest/report/report.html + *.png
    build_report(Path("runs/latest"), out=Path("/tmp/r"))

Reads only: metrics.jsonl (a half-written last line is skipped), config.json, eval.json,
summary.json and pool.sqlite opened read-only, so it is safe while the run is still going. Every
figure is always drawn; one without data is a short strip that says why ("no designs: a
fixed-pool (--no-design) run") instead of disappearing, so two reports have the same sections.

Environment diversity is the mean pairwise Jaccard distance of the token 5-gram sets that the
validator's near-duplicate check uses (`spade.validate.shingles`), over the admitted pool as it
stood after each iteration, and over each iteration's admitted designs; the novelty line is the
mean distance of each new design to its nearest earlier environment. Above DIVERSITY_SAMPLE
admitted environments it is measured on a sample stratified by creation iteration.
"""

from __future__ import annotations

import base64
import dataclasses
import html
import json
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from spade.evaluate import wilson
from spade.pool_io import ReadOnlyPool, export_rows
from spade.rundir import atomic_write_text
from spade.validate import shingles

PLAIN, HINTED = "#1f77b4", "#ff7f0e"
BANDS = (("frontier", "#2ca02c"), ("mastered", "#1f77b4"), ("out_of_reach", "#d62728"))


@dataclasses.dataclass(frozen=True)
class RunData:
    """Everything the report draws, read once."""

    run_dir: Path
    config: dict[str, Any]
    metrics: list[dict[str, Any]]
    evals: dict[str, Any]
    finished: bool
    envs: list[dict[str, Any]]
    """Export rows (spade.pool_io.COLUMNS) of every stored program."""
    rewards: list[dict[str, Any]]
    """Designer rewards, one per scored design window."""
    episodes: list[dict[str, Any]]
    """Plays and wins per (iteration, hinted, new, turns); see ReadOnlyPool.episode_counts."""
    bands: list[dict[str, Any]]
    attempts: list[dict[str, Any]]
    counts: dict[str, int]
    skipped_lines: int
    """metrics.jsonl lines that did not parse (the last one, while a run writes it)."""

    @property
    def last_iteration(self) -> int:
        return max(
            [m["iteration"] for m in self.metrics]
            + [r["iteration"] for r in self.episodes]
            + [e["created_iteration"] for e in self.envs],
            default=1,
        )


def read_metrics(path: Path) -> tuple[list[dict[str, Any]], int]:
    """(one dict per complete line, number of lines skipped)."""
    if not path.exists():
        return [], 0
    rows, skipped = [], 0
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            skipped += 1
            continue
        if isinstance(row, dict) and isinstance(row.get("iteration"), int):
            rows.append(row)
    return rows, skipped


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text()) if path.exists() else {}
    except json.JSONDecodeError:  # written atomically, but tolerate a copied half file
        return {}
    return data if isinstance(data, dict) else {}


def load_run(run_dir: Path) -> RunData:
    metrics, skipped = read_metrics(run_dir / "metrics.jsonl")
    envs: list[dict[str, Any]] = []
    rewards: list[dict[str, Any]] = []
    episodes: list[dict[str, Any]] = []
    bands: list[dict[str, Any]] = []
    attempts: list[dict[str, Any]] = []
    counts: dict[str, int] = {}
    if (run_dir / "pool.sqlite").exists():
        with ReadOnlyPool(run_dir / "pool.sqlite") as pool:
            envs = [
                {**r, **{k: json.loads(r[k]) for k in ("verdict", "provenance")}}
                for r in export_rows(pool)
            ]
            rewards, episodes = pool.designer_rewards(), pool.episode_counts()
            bands, attempts, counts = pool.band_history(), pool.attempts(), pool.counts()
    return RunData(
        run_dir=run_dir,
        config=_json(run_dir / "config.json"),
        metrics=metrics,
        evals=_json(run_dir / "eval.json"),
        finished=(run_dir / "summary.json").exists(),
        envs=envs,
        rewards=rewards,
        episodes=episodes,
        bands=bands,
        attempts=attempts,
        counts=counts,
        skipped_lines=skipped,
    )


# --- diversity --------------------------------------------------------------------------------


def jaccard_distances(codes: Sequence[str]) -> np.ndarray:
    """Pairwise Jaccard distances of token 5-gram sets, exact, through an inverted index
    (pool-sized inputs: each shared shingle adds one to the intersections of its holders)."""
    n = len(codes)
    vocab: dict[tuple[str, ...], int] = {}
    holders: list[list[int]] = []
    sizes = np.zeros(n)
    for i, code in enumerate(codes):
        grams = shingles(code)
        sizes[i] = len(grams)
        for gram in grams:
            k = vocab.setdefault(gram, len(vocab))
            if k == len(holders):
                holders.append([])
            holders[k].append(i)
    inter = np.zeros((n, n))
    for group in holders:
        if len(group) > 1:
            idx = np.array(group)
            inter[np.ix_(idx, idx)] += 1
    np.fill_diagonal(inter, sizes)
    union = sizes[:, None] + sizes[None, :] - inter
    return 1.0 - inter / np.maximum(union, 1.0)


DIVERSITY_SAMPLE = 250
"""Above this many admitted environments, diversity is measured on a sample stratified by
creation iteration (tokenising ~1,000 programs alone would take most of the report's budget)."""


def diversity(
    envs: Sequence[dict[str, Any]], iterations: Sequence[int], sample: int = DIVERSITY_SAMPLE
) -> dict[str, list[Any]]:
    """Per iteration: mean pairwise distance of the admitted pool so far, of that iteration's
    admitted designs (None if fewer than two), and their mean nearest-neighbour distance to the
    environments before them (novelty; None if none). `sampled` is how many were compared."""
    admitted = sorted(
        (e for e in envs if e["admitted"]), key=lambda e: e["created_iteration"]
    )  # sorted() is stable: insertion order within an iteration
    total = len(admitted)
    if total > sample:  # evenly spaced within each iteration, at least two of each
        by_it: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for e in admitted:
            by_it[e["created_iteration"]].append(e)
        admitted = []
        for group in by_it.values():
            k = min(len(group), max(2, round(sample * len(group) / total)))
            admitted += [group[i] for i in np.linspace(0, len(group) - 1, k).round().astype(int)]
    created = np.array([e["created_iteration"] for e in admitted])
    dist = jaccard_distances([e["code"] for e in admitted])
    # the pool after an iteration is a prefix of `admitted`: sums of pairs by prefix, O(n^2) once
    pair_sums = np.concatenate([[0.0], np.cumsum(np.tril(dist, -1).sum(axis=1))])
    out: dict[str, list[Any]] = {"iteration": [], "pool": [], "designed": [], "novelty": []}
    out["sampled"] = [len(admitted), total]
    for it in iterations:
        k = int((created <= it).sum())
        new = np.flatnonzero(created == it)
        old = np.flatnonzero(created < it)
        out["iteration"].append(it)
        out["pool"].append(float(pair_sums[k] / (k * (k - 1) / 2)) if k > 1 else None)
        within = dist[np.ix_(new, new)][np.triu_indices(len(new), 1)]
        out["designed"].append(float(within.mean()) if len(new) > 1 else None)
        novelty = dist[np.ix_(new, old)].min(axis=1).mean() if len(new) and len(old) else None
        out["novelty"].append(None if novelty is None else float(novelty))
    return out


# --- figures ----------------------------------------------------------------------------------


def _series(rows: Sequence[dict[str, Any]], key: str) -> tuple[list[int], list[float]]:
    pairs = [(r["iteration"], r[key]) for r in rows if isinstance(r.get(key), (int, float))]
    return [p[0] for p in pairs], [float(p[1]) for p in pairs]


def _label(text: str) -> str:
    """Text for matplotlib: a `$` would start mathtext (and an unmatched one fails the draw)."""
    return text.replace("$", r"\$")


def _line(n: int) -> str:
    """Markers while they can be told apart; a plain line on a long run."""
    return "o-" if n <= 40 else "-"


def _empty(ax: Any, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="#666")
    ax.set_axis_off()  # the title stays


def _style(
    ax: Any, run: RunData, title: str, ylabel: str = "", xlabel: str = "iteration", first: int = 1
) -> None:
    """Title, labels, grid, legend; an iteration axis spans the whole run in every figure."""
    from matplotlib.ticker import MaxNLocator

    ax.set_title(title, fontsize=11, loc="left")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    if xlabel == "iteration":
        last = max(run.last_iteration, first)
        ax.set_xlim(first - 0.6, last + 0.6)
        if last - first < 10:  # MaxNLocator would fall back to fractions on a short run
            ax.set_xticks(range(first, last + 1))
        else:
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, framealpha=0.85)


def _headroom(ax: Any, top: float, factor: float = 1.35) -> None:
    """Room above stacked bars or areas for a legend that would otherwise cover them."""
    ax.set_ylim(0, max(top, 1) * factor)


def fig_design(run: RunData, axes: Any) -> None:
    x, y = _series(run.metrics, "valid_design_rate")
    if x:
        axes[0].plot(x, y, _line(len(x)), color=PLAIN)
        axes[0].set_ylim(-0.03, 1.03)
    else:
        _empty(axes[0], _no_designs(run))
    _style(axes[0], run, "valid-design rate per design iteration", "admitted / attempts")
    x, y = _series(run.metrics, "designer_reward")
    per_env = [(r["iteration"], r["reward"]) for r in run.rewards]
    if per_env:
        axes[1].scatter(*zip(*per_env), s=12, alpha=0.4, color="#888", label="admitted design")
    if x:
        axes[1].plot(x, y, _line(len(x)), color=HINTED, label="mean (invalid designs included)")
    if not (x or per_env):
        _empty(axes[1], "no design window has closed yet")
    _style(axes[1], run, "Designer reward when its window closes", "reward")


def fig_regret(run: RunData, ax: Any) -> None:
    by_it: dict[int, list[float]] = defaultdict(list)
    points = [(r["iteration"], r["regret"], r["hint_ok"]) for r in run.rewards]
    for it, regret, _ in points:
        if regret is not None:
            by_it[it].append(regret)
    if not by_it:
        _empty(ax, "no regret measured yet (needs a closed design window with hinted plays)")
        return _style(ax, run, "regret of each design (hinted - plain mean return)", "regret")
    its = sorted(by_it)
    ax.boxplot(
        [by_it[i] for i in its], positions=its, widths=0.6, showfliers=False, manage_ticks=False
    )
    rng = np.random.default_rng(0)
    for ok, color, label in ((True, "#2ca02c", "hint passed gates"), (False, "#999", "gated out")):
        sel = [(i, r) for i, r, h in points if r is not None and h == ok]
        if sel:
            xs = np.array([s[0] for s in sel]) + rng.uniform(-0.2, 0.2, len(sel))
            ax.scatter(xs, [s[1] for s in sel], s=14, alpha=0.7, color=color, label=label)
    ax.axhline(0, color="#444", lw=0.8)
    _style(ax, run, "regret of each design (hinted - plain mean return)", "regret")


def _episode_rates(
    run: RunData, hinted: bool, new_only: bool = False
) -> tuple[list[int], list[float], list[float], list[float]]:
    wins: Counter[int] = Counter()
    plays: Counter[int] = Counter()
    for r in run.episodes:
        if r["hinted"] == hinted and (r["new"] or not new_only):
            wins[r["iteration"]] += r["wins"]
            plays[r["iteration"]] += r["plays"]
    its = sorted(plays)
    lows, highs = zip(*(wilson(wins[i], plays[i]) for i in its)) if its else ((), ())
    return its, [wins[i] / plays[i] for i in its], list(lows), list(highs)


def fig_win_rate(run: RunData, ax: Any) -> None:
    its, rates, lows, highs = _episode_rates(run, hinted=False)
    drawn = bool(its)
    if its:
        ax.plot(its, rates, _line(len(its)), color=PLAIN, label="plain, all active environments")
        if len(its) > 1:
            ax.fill_between(its, lows, highs, color=PLAIN, alpha=0.15)
        else:  # a band needs two points
            ax.errorbar(
                its,
                rates,
                yerr=[np.subtract(rates, lows), np.subtract(highs, rates)],
                color=PLAIN,
                capsize=3,
            )
    # only design iterations have hinted plays, on the new designs: paired points, not lines
    for hinted, dx, marker in ((False, -0.1, "s"), (True, 0.1, "s")):
        its, rates, lows, highs = _episode_rates(run, hinted=hinted, new_only=True)
        if its and any(r["hinted"] for r in run.episodes):
            err = [np.subtract(rates, lows), np.subtract(highs, rates)]
            color, label = (HINTED, "hinted") if hinted else (PLAIN, "plain")
            ax.errorbar(
                np.add(its, dx),
                rates,
                yerr=err,
                fmt=marker,
                color=color,
                capsize=3,
                mfc="white" if not hinted else color,
                label=f"{label}, new designs (same seeds)",
            )
            drawn = True
    if not drawn:
        x, y = _series(run.metrics, "plain_win_rate")
        if x:
            ax.plot(x, y, _line(len(x)), color=PLAIN, label="plain")
            drawn = True
    if drawn:
        ax.set_ylim(-0.03, 1.03)
    else:
        _empty(ax, "no plays yet")
    _style(ax, run, "Agent win rate per iteration (95% Wilson intervals)", "win rate")


def _stacked_bars(
    ax: Any, x: Sequence[Any], layers: Sequence[tuple[str, str, Any]], counts: bool = True
) -> float:
    """Bars of (label, colour, values) stacked in order; returns the tallest stack."""
    from matplotlib.ticker import MaxNLocator

    bottom = np.zeros(len(x))
    for label, color, values in layers:
        values = np.asarray(values, dtype=float)
        if values.any():
            ax.bar(x, values, bottom=bottom, color=color, label=label, width=0.8)
            bottom += values
    if counts:  # no fractional ticks
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    return float(bottom.max(initial=0.0))


def fig_bands(run: RunData, ax: Any) -> None:
    rows = run.bands or [m["bands"] for m in run.metrics if isinstance(m.get("bands"), dict)]
    if not rows:
        _empty(ax, "no band census yet")
    else:
        labels = ("frontier (0.2-0.8)", "mastered (>0.8)", "out of reach (<0.2)")
        layers = [
            (label, color, [r.get(name, 0) for r in rows])
            for label, (name, color) in zip(labels, BANDS)
        ]
        _headroom(ax, _stacked_bars(ax, [r["iteration"] for r in rows], layers))
    _style(ax, run, "played environments by plain win rate (all plays so far)", "environments")


def fig_skills(run: RunData, axes: Any) -> None:
    skills = sorted({a["skill"] for a in run.attempts} | {e["skill"] for e in run.envs})
    colors = {s: f"C{i % 10}" for i, s in enumerate(skills)}
    by_it: dict[int, Counter[str]] = defaultdict(Counter)
    for a in run.attempts:
        by_it[a["iteration"]][a["skill"]] += 1
    if by_it:
        its = sorted(by_it)
        layers = [(_label(s), colors[s], [by_it[i][s] for i in its]) for s in skills]
        _headroom(axes[0], _stacked_bars(axes[0], its, layers), 1.5)
    else:
        _empty(axes[0], _no_designs(run))
    _style(axes[0], run, "design attempts by skill", "attempts")
    pool = [e for e in run.envs if e["admitted"]]
    if pool:
        names = sorted({e["skill"] for e in pool})
        ticks = [_label(n) for n in names]
        layers = [
            (
                (band or "never played").replace("_", " "),
                color,
                [sum(e["band"] == band for e in pool if e["skill"] == s) for s in names],
            )
            for band, color in (*BANDS, (None, "#bbb"))
        ]
        x = list(range(len(names)))
        _headroom(axes[1], _stacked_bars(axes[1], x, layers), 1.5)
        if len(names) <= 6:  # one word per line
            axes[1].set_xticks(x, [n.replace(" ", "\n") for n in ticks], fontsize=7)
            axes[1].figure.subplots_adjust(bottom=0.2)
        else:  # games and tools: slanted names
            axes[1].set_xticks(
                x, names, fontsize=7, rotation=30, ha="right", rotation_mode="anchor"
            )
            axes[1].figure.subplots_adjust(bottom=0.3)
    else:
        _empty(axes[1], "the pool is empty")
    _style(axes[1], run, "admitted pool by skill and band", "environments", "")


def fig_turns(run: RunData, ax: Any) -> None:
    drawn = False
    for hinted, color, label in ((False, PLAIN, "plain"), (True, HINTED, "hinted")):
        turns: dict[int, list[int]] = defaultdict(list)
        for r in run.episodes:
            if r["hinted"] == hinted:
                turns[r["iteration"]].extend([r["turns"]] * r["plays"])
        if turns:
            its = sorted(turns)
            means = [np.mean(turns[i]) for i in its]
            ax.plot(its, means, _line(len(its)), color=color, label=f"{label} mean")
            if not hinted:
                q = [np.percentile(turns[i], [10, 90]) for i in its]
                ax.fill_between(its, *zip(*q), color=color, alpha=0.15, label="plain 10-90%")
            drawn = True
    cap = run.config.get("play", {}).get("max_turns")
    if drawn and cap:
        ax.axhline(cap, color="#444", ls="--", lw=0.8, label=f"turn cap ({cap})")
    if drawn:
        ax.set_ylim(bottom=0)
    else:
        _empty(ax, "no plays yet")
    _style(ax, run, "turns per episode", "turns")


def fig_diversity(run: RunData, ax: Any) -> None:
    its = sorted(
        {0, *(m["iteration"] for m in run.metrics), *(e["created_iteration"] for e in run.envs)}
    )
    div = diversity(run.envs, its)
    drawn = False
    for key, color, label in (
        ("pool", PLAIN, "admitted pool so far (pairwise)"),
        ("designed", HINTED, "designs admitted this iteration (pairwise)"),
        ("novelty", "#2ca02c", "new design to nearest earlier env"),
    ):
        pts = [(i, v) for i, v in zip(div["iteration"], div[key]) if v is not None]
        if pts:
            style = _line(len(pts)) if key != "pool" else "-"
            ax.plot(*zip(*pts), style, color=color, label=label)
            drawn = True
    if drawn:
        ax.set_ylim(-0.03, 1.03)
    else:
        _empty(ax, "fewer than two admitted environments")
    title = "environment diversity: Jaccard distance of token 5-gram sets"
    sampled, total = div["sampled"]
    if sampled < total:
        title += f" (sample of {sampled} of {total} environments)"
    _style(ax, run, title, "distance", first=its[0])


def fig_heldout(run: RunData, ax: Any) -> None:
    phases = {p: run.evals[p] for p in ("before", "after") if isinstance(run.evals.get(p), dict)}
    if not phases:
        _empty(ax, "no held-out evaluation in this run (eval.json)")
        return _style(ax, run, "held-out win rate", "win rate", "")
    cells = {
        p: {"overall": data["overall"], **data.get("by_skill", {})} for p, data in phases.items()
    }
    _before_after(ax, cells, "held-out win rate (95% Wilson intervals)")


def fig_suites(run: RunData, ax: Any) -> None:
    """Public suites (`eval_suites`): each subset's win rate before and after training."""
    suites = run.evals.get("suites") or {}
    cells = {
        phase: {
            skill: cell
            for result in (suites.get(phase) or {}).values()
            for skill, cell in (result.get("by_skill") or {}).items()
        }
        for phase in ("before", "after")
    }
    cells = {p: c for p, c in cells.items() if c}
    if not cells:
        skipped = [
            f"{spec}: {r['skipped']}"
            for phase in suites.values()
            for spec, r in phase.items()
            if "skipped" in r
        ]
        _empty(ax, "\n".join(skipped[:3]) or "no suite evaluation in this run (eval_suites)")
        return _style(ax, run, "public suites", "win rate", "")
    _before_after(ax, cells, "public suites: win rate per subset (95% Wilson intervals)")


def _before_after(ax: Any, cells: dict[str, dict[str, Any]], title: str) -> None:
    """Bars per group (`overall` first), one per phase, with interval whiskers and values."""
    names = {g for phase in cells.values() for g in phase}
    groups = (["overall"] if "overall" in names else []) + sorted(names - {"overall"})
    x = np.arange(len(groups))
    width = 0.8 / len(cells)
    for k, (phase, data) in enumerate(cells.items()):
        row = [data.get(g) for g in groups]
        rates = [c["rate"] if c else 0.0 for c in row]
        err = [
            [c["rate"] - c["low"] if c else 0.0 for c in row],
            [c["high"] - c["rate"] if c else 0.0 for c in row],
        ]
        xs = x + (k - (len(cells) - 1) / 2) * width
        ax.bar(
            xs,
            rates,
            width,
            yerr=err,
            capsize=3,
            color=(PLAIN, HINTED)[k],
            label=f"{phase} training",
        )
        for xi, rate, c in zip(xs, rates, row):  # the value over its interval: a 0 shows too
            top = c["high"] if c else rate
            ax.text(xi, top + 0.02, f"{rate:.2f}", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(x, [_label(g).replace(" ", "\n").replace(":", ":\n") for g in groups], fontsize=8)
    ax.set_ylim(0, 1.12)
    ax.set_title(title, fontsize=11, loc="left")
    ax.set_ylabel("win rate")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8, frameon=False)


def fig_time(run: RunData, ax: Any) -> None:
    rows = [m for m in run.metrics if isinstance(m.get("seconds"), (int, float))]
    if not rows:
        _empty(ax, "no completed iteration yet")
        return _style(ax, run, "time per iteration", "seconds")
    model = np.array([m.get("model_seconds") or 0.0 for m in rows])
    env = np.array([m.get("env_seconds") or 0.0 for m in rows])
    other = np.maximum(np.array([m["seconds"] for m in rows]) - model - env, 0.0)
    layers = [
        ("model (sample + update)", PLAIN, model),
        ("sandbox (validate + play)", HINTED, env),
        ("other", "#bbb", other),
    ]
    _headroom(ax, _stacked_bars(ax, [m["iteration"] for m in rows], layers, counts=False))
    _style(ax, run, "time per iteration", "seconds")


def _no_designs(run: RunData) -> str:
    if run.config.get("no_design"):
        return "no designs: a fixed-pool (--no-design) run"
    return "no design attempt recorded yet"


# (file stem, section title, figure function, number of panels)
FIGURES: tuple[tuple[str, str, Callable[[RunData, Any], None], int], ...] = (
    ("design", "Designer: valid designs and reward", fig_design, 2),
    ("regret", "Regret distribution over time", fig_regret, 1),
    ("win_rate", "Plain vs hinted win rate", fig_win_rate, 1),
    ("bands", "Pool bands over time", fig_bands, 1),
    ("skills", "Skill mix", fig_skills, 2),
    ("turns", "Turns per episode", fig_turns, 1),
    ("diversity", "Environment diversity", fig_diversity, 1),
    ("heldout", "Held-out evaluation", fig_heldout, 1),
    ("suites", "Public suites", fig_suites, 1),
    ("time", "Time per iteration", fig_time, 1),
)


def draw(run: RunData, out: Path) -> dict[str, Path]:
    """Every figure as out/<stem>.png (Agg canvas, no pyplot state)."""
    from matplotlib.figure import Figure

    paths = {}
    for stem, _, draw_fn, panels in FIGURES:
        # fixed margins: a layout engine would cost one more full draw per figure
        fig = Figure(figsize=(11, 3.8))
        fig.subplots_adjust(left=0.07, right=0.985, top=0.9, bottom=0.15, wspace=0.2)
        axes = fig.subplots(1, panels)
        draw_fn(run, axes)
        if not any(ax.axison for ax in fig.axes):  # only "no data" notes: a short strip
            fig.set_size_inches(11, 1.1)
            fig.subplots_adjust(top=0.72, bottom=0.05)
        paths[stem] = out / f"{stem}.png"
        fig.savefig(paths[stem], dpi=100)
    return paths


# --- HTML -------------------------------------------------------------------------------------

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #222;
  max-width: 1180px; margin: 0 auto; padding: 16px 24px 48px; }
h1 { font-size: 22px; margin: 8px 0 2px; } h2 { font-size: 17px; margin: 28px 0 6px;
  border-bottom: 1px solid #ddd; padding-bottom: 3px; }
.sub { color: #666; margin: 0 0 12px; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(170px, 1fr)); gap: 8px; }
.card { border: 1px solid #ddd; border-radius: 6px; padding: 8px 10px; background: #fafafa; }
.card b { display: block; font-size: 18px; } .card span { color: #666; font-size: 12px; }
img { max-width: 100%; display: block; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid #eee; vertical-align: top; }
th { background: #f3f3f3; } .num { text-align: right; font-variant-numeric: tabular-nums; }
code, pre { font: 12px/1.4 ui-monospace, Menlo, Consolas, monospace; }
details > div, details > pre { max-width: 1060px; max-height: 480px; overflow: auto; }
details > div { border: 1px solid #eee; }
summary { cursor: pointer; color: #1f5fa8; }
.warn { color: #a15c00; }
"""


def _num(value: Any, fmt: str = "{:.2f}") -> str:
    return "-" if value is None else fmt.format(value)


def _code_html(code: str) -> str:
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    return highlight(code, PythonLexer(), HtmlFormatter(noclasses=True, linenos="inline"))


def _cards(run: RunData) -> str:
    last = run.metrics[-1] if run.metrics else {}
    admitted = sum(e["admitted"] for e in run.envs)
    valid = [m["valid_design_rate"] for m in run.metrics if m.get("valid_design_rate") is not None]
    cards = [
        ("iterations", f"{last.get('iteration', 0)} / {run.config.get('iterations', '?')}"),
        ("admitted environments", f"{admitted}"),
        ("episodes played", f"{run.counts.get('episodes', 0)}"),
        ("last plain win rate", _num(last.get("plain_win_rate"))),
        ("mean valid-design rate", _num(float(np.mean(valid)) if valid else None)),
        ("wall time", _num(sum(m.get("seconds", 0.0) for m in run.metrics), "{:.0f} s")),
    ]
    for phase in ("before", "after"):
        overall = run.evals.get(phase, {}).get("overall")
        if overall:
            cards.append((f"held-out win rate {phase}", _num(overall["rate"])))
    return "".join(
        f'<div class="card"><b>{html.escape(v)}</b><span>{html.escape(k)}</span></div>'
        for k, v in cards
    )


def _env_table(run: RunData, top: int) -> str:
    with_regret = [e for e in run.envs if e["regret"] is not None]
    ranked = sorted(with_regret, key=lambda e: -e["regret"])[:top]
    note = ""
    if not ranked:
        note = "<p>No environment has a regret yet; the most played ones are shown instead.</p>"
        ranked = sorted((e for e in run.envs if e["admitted"]), key=lambda e: -e["plays"])[:top]
    if not ranked:
        return "<p>The pool is empty.</p>"
    head = (
        "<tr><th>#</th><th>environment</th><th>skill</th><th class=num>created</th>"
        "<th class=num>plays</th><th class=num>win rate</th><th class=num>hinted (plays)</th>"
        "<th class=num>regret</th><th class=num>Designer reward</th><th>hint</th></tr>"
    )
    body = []
    for rank, e in enumerate(ranked, 1):
        gate = {True: "passed gates", False: "gated out", None: ""}[e["hint_ok"]]
        body.append(
            f"<tr><td>{rank}</td><td><code>{e['env_id'][:12]}</code><br>"
            f"{html.escape(e['description'])}</td><td>{html.escape(e['skill'])}</td>"
            f"<td class=num>{e['created_iteration']}</td><td class=num>{e['plays']}</td>"
            f"<td class=num>{_num(e['win_rate'])}</td>"
            f"<td class=num>{_num(e['hinted_win_rate'])} ({e['hinted_plays']})</td>"
            f"<td class=num>{_num(e['regret'])}</td><td class=num>{_num(e['designer_reward'])}</td>"
            f"<td>{html.escape(e['hint']) or '<i>none</i>'}<br><small>{gate}</small></td></tr>"
            f"<tr><td></td><td colspan=9><details><summary>code ({len(e['code'].splitlines())} "
            f"lines) and provenance</summary><div>{_code_html(e['code'])}</div>"
            f"<pre>{html.escape(json.dumps(e['provenance'], indent=1))}</pre></details></td></tr>"
        )
    return f"{note}<table>{head}{''.join(body)}</table>"


def render_html(run: RunData, pngs: dict[str, Path], top: int = 10) -> str:
    state = "finished" if run.finished else "running (or stopped early)"
    warn = (
        f'<p class="warn">{run.skipped_lines} metrics line(s) skipped (still being written?)</p>'
        if run.skipped_lines
        else ""
    )
    sections = []
    for stem, title, _, _ in FIGURES:
        data = base64.b64encode(pngs[stem].read_bytes()).decode("ascii")
        sections.append(
            f'<h2 id="{stem}">{html.escape(title)}</h2>'
            f'<img alt="{html.escape(title)}" src="data:image/png;base64,{data}">'
        )
    cfg = run.config
    design = cfg.get("design", {})
    setting = ", ".join(
        f"{k} {v}".strip()
        for k, v in (
            ("model", cfg.get("model", {}).get("model")),
            ("designer reward", cfg.get("designer_reward")),
            ("envs/regen", design.get("envs_per_regen")),
            ("regen interval", design.get("regen_interval")),
            ("plays/env", cfg.get("play", {}).get("plays_per_env")),
            ("", "no design (fixed pool)" if cfg.get("no_design") else None),
        )
        if v is not None
    )
    sub = "; ".join(
        x for x in (state, setting, f"generated {time.strftime('%Y-%m-%d %H:%M')}") if x
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>spade report: {html.escape(run.run_dir.name)}</title><style>{CSS}</style></head>
<body><h1>SPADE run <code>{html.escape(str(run.run_dir))}</code></h1>
<p class="sub">{html.escape(sub)}</p>
{warn}<div class="cards">{_cards(run)}</div>
{"".join(sections)}
<h2 id="top">Top environments by regret</h2>{_env_table(run, top)}
</body></html>
"""


def build_report(run_dir: Path, out: Path | None = None, top: int = 10) -> Path:
    """Write the PNGs and report.html into `out` (default RUN_DIR/report); returns the HTML."""
    if not any(
        (run_dir / name).exists() for name in ("config.json", "metrics.jsonl", "pool.sqlite")
    ):
        raise FileNotFoundError(f"{run_dir} is not a run directory (no config.json yet)")
    out = out or run_dir / "report"
    out.mkdir(parents=True, exist_ok=True)
    run = load_run(run_dir)
    page = render_html(run, draw(run, out), top)
    path = out / "report.html"
    atomic_write_text(path, page)
    return path
