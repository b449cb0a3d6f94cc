"""Run directory -> PNG plots and one self-contained HTML report (images inlined, no network).

    spade report runs/latest                 # writes runs/latest/report/report.html + *.png
    build_report(Path("runs/latest"), out=Path("/tmp/r"))

The run is read by `spade.report.rundata` (read-only, safe while it is still going) and drawn by
`spade.report.figures`; this module writes the page: summary cards, every figure, the top
environments.
"""

from __future__ import annotations

import base64
import html
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from spade.files import atomic_write_text
from spade.report.figures import FIGURES, draw
from spade.report.rundata import RunData, load_run

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
    for name, row in ((run.evals.get("paired") or {}).get("sets") or {}).items():
        if "difference" in row:
            cards.append(
                (
                    f"{name} set: {row['before']:.0%} -> {row['after']:.0%}, paired 95% CI "
                    f"[{100 * row['low']:+.1f}, {100 * row['high']:+.1f}]",
                    f"{100 * row['difference']:+.1f} pts",
                )
            )
    subset = [
        m["near_subset_win_rate"] for m in run.metrics if m.get("near_subset_win_rate") is not None
    ]
    if subset:
        cards.append(("last near-subset win rate", _num(subset[-1])))
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
