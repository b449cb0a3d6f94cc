"""`spade bootstrap`'s measurement report: the Agent's part, from the paired sets' outcomes."""

from __future__ import annotations

import random

from spade.evals import sets as evalsets
from spade.evals.measure import _agent_report


def test_the_agent_report_keeps_every_items_outcome_beside_the_counts() -> None:
    near, far = evalsets.near_set(), evalsets.far_set()
    rng = random.Random(0)
    bits = {e.name: "".join(rng.choice("01") for _ in e.programs) for e in (near, far)}
    before = {"sets": {n: {"outcomes": b, "cached": n == "far"} for n, b in bits.items()}}
    report = _agent_report(before)
    for evalset in (near, far):
        row = report[f"agent_{evalset.name}_set"]
        assert row["outcomes"] == bits[evalset.name]  # item order: the set's
        assert row["episodes"] == len(evalset.programs)
        assert sum(row["by_family"].values()) == bits[evalset.name].count("1")
        first = next(iter(evalset.families))  # e.g. near:add
        idx = evalset.families[first]
        assert row["by_family"][first.split(":", 1)[1]] == sum(
            bits[evalset.name][i] == "1" for i in idx
        )
    assert report["agent_far_set"]["cached"] and not report["agent_near_set"]["cached"]
