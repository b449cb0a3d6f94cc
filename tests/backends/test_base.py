"""The protocol types and episode assembly: pure Python, no torch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from spade.backends.base import Completion, Prompt, Sample, SamplingParams, episode_sample

ROOT = Path(__file__).resolve().parents[2]


def completion(prompt, reply, lp=None, temperature=1.0):
    return Completion(
        text="x",
        prompt_ids=tuple(prompt),
        completion_ids=tuple(reply),
        logprobs=tuple(lp if lp is not None else [-1.0] * len(reply)),
        finish_reason="stop",
        temperature=temperature,
    )


def test_sampling_params_validate_and_normalise_stop():
    assert SamplingParams(stop="</a>").stop == ("</a>",)
    assert SamplingParams(temperature=0).logprob_temperature == 1.0
    assert SamplingParams(temperature=0.7).logprob_temperature == 0.7
    for bad in ({"max_tokens": 0}, {"temperature": -1}, {"top_p": 0.0}, {"top_k": -1}):
        with pytest.raises(ValueError):
            SamplingParams(**bad)


def test_sample_rejects_misalignment_and_trained_first_token():
    with pytest.raises(ValueError, match="misaligned"):
        Sample((1, 2, 3), (0, 1), (0.0, -1.0, -1.0), 1.0, "agent")
    with pytest.raises(ValueError, match="loss_mask\\[0\\]"):
        Sample((1, 2), (1, 1), (-1.0, -1.0), 1.0, "agent")
    with pytest.raises(ValueError, match="finite"):
        Sample((1, 2), (0, 1), (0.0, -1.0), float("nan"), "agent")


def test_single_turn_episode_masks_only_the_reply():
    s = episode_sample(
        [completion([5, 6, 7], [8, 9], [-0.1, -0.2])], advantage=0.5, role="designer"
    )
    assert s.token_ids == (5, 6, 7, 8, 9)
    assert s.loss_mask == (0, 0, 0, 1, 1)
    assert s.logprobs == (0.0, 0.0, 0.0, -0.1, -0.2)
    assert (s.advantage, s.role, s.num_trained_tokens) == (0.5, "designer", 2)


def test_multi_turn_episode_keeps_each_reply_at_its_offset():
    # turn 1: prompt [1 2], reply [3 4]; observation delta [5 6]; turn 2 reply [7]
    turns = [completion([1, 2], [3, 4], [-0.3, -0.4]), completion([1, 2, 3, 4, 5, 6], [7], [-0.7])]
    s = episode_sample(turns, advantage=-1.0, role="agent")
    assert s.token_ids == (1, 2, 3, 4, 5, 6, 7)
    assert s.loss_mask == (0, 0, 1, 1, 0, 0, 1)
    assert s.logprobs == (0.0, 0.0, -0.3, -0.4, 0.0, 0.0, -0.7)


def test_episode_refuses_retokenized_history():
    turns = [completion([1, 2], [3, 4]), completion([1, 2, 99, 5], [7])]
    with pytest.raises(ValueError, match="re-tokenized"):
        episode_sample(turns, 1.0, "agent")


def test_episode_refuses_untrainable_completion_with_its_reason():
    c = Completion("hi", None, None, None, "stop", untrainable_reason="server gave no token ids")
    assert not c.trainable
    with pytest.raises(ValueError, match="server gave no token ids"):
        episode_sample([c], 1.0, "agent")


def test_episode_refuses_mixed_temperatures():
    turns = [completion([1], [2]), completion([1, 2, 3], [4], temperature=0.5)]
    with pytest.raises(ValueError, match="temperatures"):
        episode_sample(turns, 1.0, "agent")


def test_prompt_of_messages_and_completion_alignment_check():
    p = Prompt.of([{"role": "user", "content": "hi"}])
    assert p.token_ids is None and p.messages[0]["content"] == "hi"
    assert Prompt.of(p) is p
    with pytest.raises(ValueError, match="logprobs"):
        Completion("x", (1,), (2, 3), (-1.0,), "stop")


def test_importing_backends_loads_no_heavy_library():
    code = (
        "import sys, spade.backends, spade.backends.openai_compat, spade.backends.chat,"
        " spade.backends.tiny, spade.warmstart.finetune, spade.warmstart.data;"
        "from spade.backends import Policy, Trainer, Sample;"
        "heavy = [m for m in ('torch', 'transformers', 'tokenizers', 'numpy') if m in sys.modules];"
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
