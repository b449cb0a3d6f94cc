"""Warm-start examples as token sequences, the way the loop trains them (token-in/token-out).

    sequences, dropped = training_sequences(examples, tokenizer, eot_ids, max_length=6144)

A Designer sequence is a prompt and one reply; an Agent sequence is one whole episode, its
examples chained by their conversations, with only the replies trained and the observations
between them tokenized as the loop extends a multi-turn prompt (`chat.turn_delta_ids`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from spade.backends.base import Message, Role
from spade.warmstart.data import Example


def _encode_all(tokenizer: Any, texts: Sequence[str]) -> list[list[int]]:
    """Token ids of each text; repeated texts (prompts) are encoded once, in batched calls."""
    from spade.backends import chat

    unique = list(dict.fromkeys(texts))
    ids: dict[str, list[int]] = {}
    for start in range(0, len(unique), 512):
        chunk = unique[start : start + 512]
        for text, encoded in zip(chunk, tokenizer(chunk, add_special_tokens=False)["input_ids"]):
            ids[text] = list(encoded)
    if unique and ids[unique[0]] != chat.encode(tokenizer, unique[0]):  # batch == one by one
        raise AssertionError("batched tokenization differs from chat.encode")
    return [ids[t] for t in texts]


@dataclass(frozen=True)
class TrainingSequence:
    """One training sequence: token ids and a loss mask (1 = trained). A Designer sequence is a
    prompt and one reply; an Agent sequence is one episode, the replies of all its turns trained
    and the prompt and later observations between them not (as the loop builds a multi-turn
    sample, token-in/token-out)."""

    ids: tuple[int, ...]
    mask: tuple[int, ...]
    role: Role

    @property
    def tokens(self) -> int:
        return len(self.ids)


def _message_key(messages: Sequence[Message]) -> str:
    return json.dumps([[m["role"], str(m["content"])] for m in messages])


def _chains(agent: Sequence[Example]) -> list[list[Example]]:
    """Agent examples chained into episodes: an example continues another when its messages are
    the other's messages, the other's reply and one more observation."""
    successors: dict[str, list[Example]] = {}
    for e in agent:
        msgs = e.messages
        if len(msgs) >= 3 and msgs[-2]["role"] == "assistant" and msgs[-1]["role"] == "user":
            key = _message_key(msgs[:-2]) + "\x00" + str(msgs[-2]["content"])
            successors.setdefault(key, []).append(e)
    keys = {_message_key(e.messages) + "\x00" + e.target for e in agent}
    chains: list[list[Example]] = []
    for e in agent:
        msgs = e.messages
        if len(msgs) >= 3 and msgs[-2]["role"] == "assistant":
            if _message_key(msgs[:-2]) + "\x00" + str(msgs[-2]["content"]) in keys:
                continue  # continues another example: not the start of a chain
        chain = [e]
        while nxt := successors.get(_message_key(chain[-1].messages) + "\x00" + chain[-1].target):
            chain.append(nxt.pop(0))
        chains.append(chain)
    return chains


def training_sequences(
    data: Sequence[Example], tokenizer: Any, eot_ids: set[int], max_length: int
) -> tuple[list[TrainingSequence], int]:
    """The training sequences of `data` and the number of examples dropped for length: a
    Designer example is its prompt and reply, Agent examples are chained into whole episodes
    (`_chains`); each reply ends with the end-of-turn token `min(eot_ids)`."""
    from spade.backends import chat

    eot = min(eot_ids)
    designer = [e for e in data if e.role == "designer"]
    chains = _chains([e for e in data if e.role != "designer"])
    texts = [chat.render(tokenizer, e.messages, True) for e in designer]
    texts += [chat.render(tokenizer, c[0].messages, True) for c in chains]
    texts += [e.target for e in designer] + [e.target for c in chains for e in c]
    encoded = iter(_encode_all(tokenizer, texts))
    prompts = [next(encoded) for _ in designer]
    chain_prompts = [next(encoded) for _ in chains]
    replies = [next(encoded) for _ in designer]
    chain_replies = [[next(encoded) for _ in c] for c in chains]

    out: list[TrainingSequence] = []
    dropped = 0
    for prompt, reply in zip(prompts, replies):
        if len(prompt) + len(reply) + 1 > max_length:
            dropped += 1
            continue
        ids = (*prompt, *reply, eot)
        out.append(TrainingSequence(ids, (0,) * len(prompt) + (1,) * (len(reply) + 1), "designer"))
    for chain, prompt, turns in zip(chains, chain_prompts, chain_replies):
        seq, mask = list(prompt), [0] * len(prompt)
        for i, (e, reply) in enumerate(zip(chain, turns)):
            delta = chat.turn_delta_ids(tokenizer, seq[-1:], e.messages[-1:], eot_ids) if i else []
            if len(seq) + len(delta) + len(reply) + 1 > max_length:
                dropped += len(chain) - i
                break
            seq += [*delta, *reply, eot]
            mask += [0] * len(delta) + [1] * (len(reply) + 1)
        if any(mask):
            out.append(TrainingSequence(tuple(seq), tuple(mask), chain[0].role))
    return out, dropped
