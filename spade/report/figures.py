"""The report's figures, drawn with matplotlib's object API (Agg canvas, no pyplot state).

Every figure is always drawn; one without data is a short strip that says why ("no designs: a
fixed-pool (--no-design) run") instead of disappearing, so two reports have the same sections.

One module over the usual ~450 lines on purpose: it is one short function per figure (`fig_*`,
each under 50 lines) over the shared styling helpers at the top, and `draw` lays them out; a
split would only move the helpers away from their every user.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from spade.evals.winrate import wilson
from spade.report.rundata import RunData, diversity, learning_curve, paired_cells
from spade.types import BANDS, Band

PLAIN, HINTED = "#1f77b4", "#ff7f0e"
BAND_COLORS: dict[Band, str] = {
    "frontier": "#2ca02c",
    "mastered": "#1f77b4",
    "out_of_reach": "#d62728",
}


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
            (label, BAND_COLORS[name], [r.get(name, 0) for r in rows])
            for label, name in zip(labels, BANDS)
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
            for band, color in (*BAND_COLORS.items(), (None, "#bbb"))
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


def fig_learning(run: RunData, ax: Any) -> None:
    """The learning curve: plain win rate on the played pool every iteration, and the fixed near
    subset every `eval_every` iterations (greedy; iteration 0: before training)."""
    curves = learning_curve(run)
    drawn = False
    for name, color, label in (
        ("plain", PLAIN, "plain win rate, played pool (sampled)"),
        ("near_subset", "#2ca02c", "near subset (fixed items, greedy)"),
    ):
        x, y = curves[name]
        if x:
            ax.plot(x, y, _line(len(x)), color=color, label=label)
            drawn = True
    if drawn:
        ax.set_ylim(-0.03, 1.03)
    else:
        _empty(ax, "no iteration yet")
    first = 0 if 0 in curves["near_subset"][0] else 1
    _style(ax, run, "learning curve: Agent win rate", "win rate", first=first)


def fig_heldout(run: RunData, ax: Any) -> None:
    cells = paired_cells(run.evals)
    if cells:
        title = "held-out paired sets, each item once (95% Wilson intervals)"
        rows = ((run.evals.get("paired") or {}).get("sets")) or {}
        diffs = [
            f"{name} {100 * r['difference']:+.1f} pts "
            f"[{100 * r['low']:+.1f}, {100 * r['high']:+.1f}]"
            for name, r in rows.items()
            if "difference" in r
        ]
        if diffs:
            title += "\nafter - before, paired bootstrap 95% CI: " + "; ".join(diffs)
        return _before_after(ax, cells, title)
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
    ("learning", "Learning curve", fig_learning, 1),
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
        if any("\n" in ax.get_title(loc="left") for ax in fig.axes):  # a two-line title
            fig.subplots_adjust(top=0.85)
        if not any(ax.axison for ax in fig.axes):  # only "no data" notes: a short strip
            fig.set_size_inches(11, 1.1)
            fig.subplots_adjust(top=0.72, bottom=0.05)
        paths[stem] = out / f"{stem}.png"
        fig.savefig(paths[stem], dpi=100)
    return paths
