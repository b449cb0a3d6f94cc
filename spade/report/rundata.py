"""A run directory read once for `spade report`: metrics, config, evaluations and the pool.

Reads only: metrics.jsonl (a half-written last line is skipped), config.json, eval.json,
summary.json and pool.sqlite opened read-only, so it is safe while the run is still going.

Environment diversity is the mean pairwise Jaccard distance of the token 5-gram sets that the
validator's near-duplicate check uses (`spade.envs.duplicates.shingles`), over the admitted pool
as it stood after each iteration, and over each iteration's admitted designs; the novelty line is
the mean distance of each new design to its nearest earlier environment. Above DIVERSITY_SAMPLE
admitted environments it is measured on a sample stratified by creation iteration.
"""

from __future__ import annotations

import dataclasses
import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from spade.envs.duplicates import shingles
from spade.envs.pool_io import ReadOnlyPool, export_rows
from spade.selfplay.rundir import read_metrics


@dataclasses.dataclass(frozen=True)
class RunData:
    """Everything the report draws, read once."""

    run_dir: Path
    config: dict[str, Any]
    metrics: list[dict[str, Any]]
    evals: dict[str, Any]
    finished: bool
    envs: list[dict[str, Any]]
    """Export rows (spade.envs.pool_io.COLUMNS) of every stored program."""
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


def learning_curve(run: RunData) -> dict[str, tuple[list[int], list[float]]]:
    """(iterations, win rates) of the Agent's plain plays on the played pool (`plain_win_rate`)
    and of the fixed near subset (`near_subset_win_rate`, every `eval_every` iterations; at
    iteration 0 the "before" evaluation's outcomes on those items, when the run has one)."""
    curves: dict[str, tuple[list[int], list[float]]] = {}
    for name, key in (("plain", "plain_win_rate"), ("near_subset", "near_subset_win_rate")):
        points = [
            (m["iteration"], float(m[key]))
            for m in run.metrics
            if isinstance(m.get(key), (int, float))
        ]
        if name == "near_subset":
            start = (run.evals.get("before") or {}).get("near_subset_win_rate")
            if isinstance(start, (int, float)):
                points.insert(0, (0, float(start)))
        curves[name] = ([p[0] for p in points], [p[1] for p in points])
    return curves


def paired_cells(evals: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per phase ("before", "after"), per paired set (and the far set's reasoning-gym items as
    `far:reasoning-gym`), its win rate with a Wilson interval ({wins, episodes, rate, low,
    high}), from the per-item outcomes in eval.json; {} for a run without the paired sets."""
    from spade.evals.winrate import WinRate

    out: dict[str, dict[str, dict[str, Any]]] = {}
    for phase in ("before", "after"):
        sets = (evals.get(phase) or {}).get("sets")
        if not isinstance(sets, dict):
            continue
        out[phase] = {
            name: WinRate(record["outcomes"].count("1"), len(record["outcomes"])).to_json()
            for name, record in sets.items()
        }
        # the far set's reasoning-gym items on their own (from the by-family counts)
        rgym = [
            v
            for k, v in (evals[phase].get("by_family") or {}).items()
            if k.startswith("far:reasoning-gym:")
        ]
        if rgym:
            wins, n = sum(v["wins"] for v in rgym), sum(v["episodes"] for v in rgym)
            out[phase]["far:reasoning-gym"] = WinRate(wins, n).to_json()
    return out


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
