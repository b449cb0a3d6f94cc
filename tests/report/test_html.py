"""`spade report` on small synthetic run directories: every figure drawn, the HTML parses and
loads nothing from the network, a run still being written, a one-iteration --no-design run, an
empty run directory; and a headless Chromium render when Chromium is installed."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("matplotlib")

from spade.cli.pool_commands import report
from spade.envs.pool import EpisodeRow, Pool
from spade.report.figures import FIGURES
from spade.report.html import build_report
from spade.report.rundata import diversity, jaccard_distances
from spade.types import Program, Verdict
from tests.envs.test_pool_io import ECHO, make_pool

STEMS = [stem for stem, *_ in FIGURES]


def metrics_row(it: int, design: bool, closes_window: bool = True) -> dict[str, Any]:
    row: dict[str, Any] = {
        "iteration": it,
        "plain_win_rate": 0.25 * it,
        "hinted_win_rate": 0.75 if design else None,
        "episodes": 12,
        "mean_turns": 2.0,
        "tokens": 100,
        "bands": {"iteration": it, "frontier": 1, "mastered": 1, "out_of_reach": 1, "total": 3},
        "loss": {"shared": {"loss": 1.0}},
        "seconds": 2.0,
        "model_seconds": 1.0,
        "env_seconds": 0.5,
        "overhead": 0.25,
    }
    if design:
        row.update(valid_design_rate=2 / 3, skill_mix={"Logical Deduction": 2, "Optimization": 1})
    elif closes_window:
        row.update(designer_reward=0.35, regret=0.5)
    return row


def win(wins: int, n: int, low: float, high: float) -> dict[str, Any]:
    return {"wins": wins, "episodes": n, "rate": wins / n, "low": low, "high": high}


def make_run(run_dir: Path) -> Path:
    """Three iterations (design at 1 and 3), a pool (see make_pool), a held-out evaluation,
    and a fourth metrics line cut off mid-write."""
    make_pool(run_dir / "pool.sqlite")
    config = {"iterations": 6, "designer_reward": "blend", "model": {"model": "tiny"}}
    config.update(design={"envs_per_regen": 3, "regen_interval": 2}, play={"max_turns": 3})
    (run_dir / "config.json").write_text(json.dumps(config))
    lines = [json.dumps(metrics_row(it, design=it % 2 == 1)) for it in (1, 2, 3)]
    (run_dir / "metrics.jsonl").write_text("\n".join(lines) + '\n{"iteration": 4, "valid_des')
    by_skill = {"Optimization": win(1, 4, 0.05, 0.7), "Logical Deduction": win(2, 4, 0.15, 0.85)}
    after = {"Optimization": win(3, 4, 0.3, 0.95), "Logical Deduction": win(2, 4, 0.15, 0.85)}
    evals = {
        "before": {"overall": win(3, 8, 0.14, 0.69), "by_skill": by_skill, "errors": 0},
        "after": {"overall": win(5, 8, 0.31, 0.86), "by_skill": after, "errors": 0},
        "suites": {
            phase: {
                "reasoning-gym:chain_sum@0": {
                    "overall": cell,
                    "by_skill": {"reasoning-gym:chain_sum": cell},
                    "errors": 0,
                },
                "bfcl": {"skipped": "the bfcl suite needs its package"},
            }
            for phase, cell in (("before", win(1, 8, 0.02, 0.47)), ("after", win(2, 8, 0.07, 0.59)))
        },
    }
    (run_dir / "eval.json").write_text(json.dumps(evals))
    return run_dir


class Page(HTMLParser):
    """Every tag with its attributes, and the text, of an HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    page.close()
    return page


def assert_self_contained(page: Page) -> None:
    for tag, attrs in page.tags:
        assert tag not in ("link", "script", "iframe", "object"), tag
        for name in ("src", "href"):
            value = attrs.get(name) or ""
            assert not value.lower().startswith(("http:", "https:", "//", "file:")), value


def assert_png(path: Path) -> None:
    from matplotlib.image import imread

    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = imread(path)
    assert pixels.shape[0] > 100 and pixels.shape[1] > 100
    assert pixels.std() > 0.01  # something drawn, not a blank canvas


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report of make_run, drawn while the run holds an open write transaction (as a
    running `spade train` does between commits): the read-only pool must not wait for it."""
    run_dir = make_run(tmp_path_factory.mktemp("report") / "run")
    program = Program.from_code(ECHO, skill="Mathematical Reasoning")
    with Pool(run_dir / "pool.sqlite") as writer, writer.transaction():
        writer.record_episodes([EpisodeRow(program.env_id, 4, 0, False, 1.0, 1)])
        return build_report(run_dir)


def test_report_draws_every_figure_into_a_self_contained_page(built: Path) -> None:
    assert built == built.parent.parent / "report" / "report.html"
    for stem in STEMS:
        assert_png(built.parent / f"{stem}.png")
    page = parse(built)
    assert_self_contained(page)
    images = [a["src"] or "" for t, a in page.tags if t == "img"]
    assert len(images) == len(FIGURES)
    assert all(src.startswith("data:image/png;base64,") for src in images)
    text = " ".join(page.text)
    assert "1 metrics line(s) skipped" in text
    assert "3 / 6" in text  # iterations done / configured
    # 44 committed episodes (3 environments x 4 seeds x 3 iterations + 8 hinted); not the 45th
    assert "<b>44</b><span>episodes played" in built.read_text()
    # the top-by-regret table: next-term (regret 0.5) above first-word (0.0), code included
    assert [t for t, _ in page.tags].count("details") == 2
    assert text.index("NextTermEnv") < text.index("FirstWordEnv")
    assert "constant step" in text


def test_report_on_a_one_iteration_no_design_run_and_an_empty_run(tmp_path: Path) -> None:
    run_dir = tmp_path / "fixed"
    # a `$` in a name would start matplotlib mathtext, and an unmatched one fail the draw
    seed = Program.from_code(ECHO, source="seed.py", skill="Budget $ Reasoning")
    with Pool(run_dir / "pool.sqlite") as pool:
        pool.add_program(seed, Verdict(seed.env_id, True), 0, {"seed_file": "seed.py"})
        pool.record_episodes(
            EpisodeRow(seed.env_id, 1, s, False, float(s % 2), 2) for s in range(4)
        )
        pool.record_bands(1)
    (run_dir / "config.json").write_text(json.dumps({"iterations": 1, "no_design": True}))
    (run_dir / "metrics.jsonl").write_text(
        json.dumps(metrics_row(1, design=False, closes_window=False)) + "\n"
    )
    empty = tmp_path / "empty"  # what `spade train` has written in its first second
    empty.mkdir()
    (empty / "config.json").write_text("{}")
    assert report(empty) == 0  # the command, on a directory with nothing in it yet
    texts = []
    for d in (run_dir, empty):
        page = parse(build_report(d) if d == run_dir else d / "report" / "report.html")
        assert_self_contained(page)
        for stem in STEMS:
            assert_png(d / "report" / f"{stem}.png")
        texts.append(" ".join(page.text))
    assert "No environment has a regret yet" in texts[0] and "EchoNumberEnv" in texts[0]
    assert "The pool is empty" in texts[1]
    assert report(tmp_path / "missing") == 2
    assert report(tmp_path) == 2  # not a run directory: nothing is written into it


def test_diversity_is_the_mean_pairwise_jaccard_distance() -> None:
    a = "x = 1\ny = 2\nz = 3\n"
    dist = jaccard_distances([a, a, "def f(): return 1\n"])
    assert dist[0, 1] == 0.0 and dist[0, 2] == 1.0 and dist[0, 0] == 0.0
    envs = [
        {"admitted": True, "created_iteration": it, "code": code}
        for it, code in ((0, a), (1, a), (1, "def f(): return 1\n"))
    ]
    div = diversity(envs, [0, 1])
    # after iteration 1: pairs (a, a) 0, (a, f) 1, (a, f) 1 -> 2/3; designs at 1: (a, f) -> 1;
    # novelty at 1: a is 0 from the seed a, f is 1 from it -> 0.5
    assert div["pool"] == [None, pytest.approx(2 / 3)]
    assert div["designed"] == [None, 1.0] and div["novelty"] == [None, 0.5]
    assert div["sampled"] == [3, 3]
    # a sample stratified by iteration keeps at least two of each: all three here
    assert diversity(envs, [0, 1], sample=2) == div
    envs += [{"admitted": True, "created_iteration": 1, "code": f"v_{i} = w\n"} for i in range(8)]
    assert diversity(envs, [1], sample=5)["sampled"] == [1 + 5, 11]  # 5 = round(10 * 5 / 11)


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not installed")
def test_chromium_renders_the_report_headless(built: Path, tmp_path: Path) -> None:
    shot = tmp_path / "shot.png"
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [
                "chromium",
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                f"--user-data-dir={profile}",
                f"--screenshot={shot}",
                "--window-size=1280,3000",
                built.as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=60,
        )
    assert_png(shot)


def test_the_suites_figure_draws_each_subset_before_and_after(tmp_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from spade.report.figures import fig_suites
    from spade.report.rundata import load_run

    run = load_run(make_run(tmp_path / "run"))
    fig, ax = plt.subplots()
    fig_suites(run, ax)
    heights = [p.get_height() for p in ax.patches]
    assert heights == [1 / 8, 2 / 8]  # chain_sum before, after; the skipped suite draws nothing
    assert [t.get_text() for t in ax.get_xticklabels()] == ["reasoning-gym:\nchain_sum"]
    plt.close(fig)

    run.evals["suites"] = {"before": {"bfcl": {"skipped": "the bfcl suite needs its package"}}}
    fig, ax = plt.subplots()
    fig_suites(run, ax)
    assert not ax.patches and "bfcl: the bfcl suite needs its package" in ax.texts[0].get_text()
    plt.close(fig)


def test_a_paired_run_gets_its_learning_curve_and_paired_sets_drawn(tmp_path: Path) -> None:
    from spade.report.rundata import learning_curve, load_run, paired_cells

    run_dir = make_run(tmp_path / "run")
    rows = [metrics_row(it, design=it % 2 == 1) for it in (1, 2, 3)]
    rows[1]["near_subset_win_rate"] = 0.5  # eval_every=2 over 3 iterations: at 2 and 3
    rows[2]["near_subset_win_rate"] = 0.625
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    rgym = {"far:reasoning-gym:chain_sum": win(1, 2, 0.1, 0.9), "far:smaller": win(0, 2, 0, 0.6)}
    evals = {
        "before": {
            "overall": win(2, 7, 0.1, 0.6),
            "by_family": rgym,
            "sets": {"near": {"outcomes": "1100"}, "far": {"outcomes": "010"}},
            "near_subset_win_rate": 0.25,
        },
        "after": {
            "overall": win(5, 7, 0.4, 0.9),
            "sets": {"near": {"outcomes": "1111"}, "far": {"outcomes": "011"}},
        },
        "paired": {
            "sets": {
                "near": {"before": 0.5, "after": 1.0, "difference": 0.5, "low": 0.0, "high": 1.0},
                "far": {"before": 1 / 3, "after": 2 / 3, "difference": 1 / 3, "low": 0.0,
                        "high": 1.0},
            }
        },
    }  # fmt: skip
    (run_dir / "eval.json").write_text(json.dumps(evals))
    run = load_run(run_dir)
    assert learning_curve(run) == {
        "plain": ([1, 2, 3], [0.25, 0.5, 0.75]),
        "near_subset": ([0, 2, 3], [0.25, 0.5, 0.625]),
    }
    cells = paired_cells(run.evals)
    assert {k: v["wins"] for k, v in cells["before"].items()} == {
        "near": 2,
        "far": 1,
        "far:reasoning-gym": 1,
    }
    assert (cells["after"]["near"]["rate"], cells["after"]["far"]["episodes"]) == (1.0, 3)
    assert paired_cells({"before": {"overall": win(1, 2, 0, 1)}}) == {}  # another eval_set

    page = build_report(run_dir)
    for stem in STEMS:
        assert_png(page.parent / f"{stem}.png")
    text = " ".join(parse(page).text)
    assert "+50.0 pts" in text and "near set: 50% -> 100%, paired 95% CI [+0.0, +100.0]" in text
    assert "last near-subset win rate" in text and "Learning curve" in text
