"""Chat-template rendering and token-in/token-out turn deltas over a Hugging Face tokenizer.

Only needs a tokenizer object (no torch), so a future vLLM backend can reuse it.

Multi-turn extension never re-tokenizes history. The next prompt is

    previous prompt ids + generated ids (as generated) + delta

where `delta` is the text the template writes after an assistant reply when the new messages
follow it (the turn's closing, the new messages, the next assistant header), read off a rendering
of a fixed dummy exchange plus the new messages, minus the end-of-turn token when the model already
generated it. A reply cut by `max_tokens` or a stop string is therefore closed the way the template
would close it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spade.backends.base import Completion, Message, Prompt

DEFAULT_CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""ChatML (the Qwen family's format), used when a tokenizer ships no template of its own."""

DEFAULT_END_OF_TURN = "<|im_end|>"

_DUMMY_REPLY = "spade dummy reply"
_DUMMY = (
    {"role": "user", "content": "spade dummy prompt"},
    {"role": "assistant", "content": _DUMMY_REPLY},
)


def ensure_chat_template(tokenizer: Any) -> bool:
    """Give the tokenizer the default template if it has none; True if it was given one."""
    if getattr(tokenizer, "chat_template", None):
        return False
    tokenizer.chat_template = DEFAULT_CHAT_TEMPLATE
    return True


def render(tokenizer: Any, messages: Sequence[Message], add_generation_prompt: bool) -> str:
    return tokenizer.apply_chat_template(
        [dict(m) for m in messages], tokenize=False, add_generation_prompt=add_generation_prompt
    )


def encode(tokenizer: Any, text: str) -> list[int]:
    # The template text already holds any BOS / special tokens it wants; never add more.
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def prompt_ids(tokenizer: Any, messages: Sequence[Message]) -> list[int]:
    """Token ids of a fresh conversation, ready for the assistant's reply."""
    return encode(tokenizer, render(tokenizer, messages, add_generation_prompt=True))


def token_ids_of(tokenizer: Any, prompt: Prompt) -> list[int]:
    """A prompt's token ids: the ones it carries (a later turn, token-in/token-out), else its
    messages rendered fresh."""
    if prompt.token_ids is not None:
        return list(prompt.token_ids)
    return prompt_ids(tokenizer, prompt.messages)


def closing_suffix(tokenizer: Any) -> str:
    """The text the template writes right after an assistant reply's content."""
    base = render(tokenizer, _DUMMY, add_generation_prompt=False)
    at = base.rfind(_DUMMY_REPLY)
    if at < 0:
        raise ValueError("the chat template drops assistant content; cannot find its turn suffix")
    return base[at + len(_DUMMY_REPLY) :]


def end_of_turn_ids(tokenizer: Any) -> set[int]:
    """Token ids that end an assistant turn: the tokenizer's EOS, the template's closing token."""
    ids: set[int] = set()
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    suffix = closing_suffix(tokenizer).lstrip(" ")
    if suffix:
        first = encode(tokenizer, suffix)[:1]
        special = set(getattr(tokenizer, "all_special_ids", []) or [])
        added = set(getattr(tokenizer, "added_tokens_decoder", {}) or {})
        if first and (first[0] in special or first[0] in added):
            ids.add(first[0])
    return ids


def turn_delta_ids(
    tokenizer: Any, completion_ids: Sequence[int], messages: Sequence[Message], eot_ids: set[int]
) -> list[int]:
    """Tokens to append after a generated reply so that the next assistant turn can start."""
    # Everything the template writes after a (past) assistant reply: its closing, the new
    # messages, the next assistant header. Reading it off one rendering, rather than diffing two,
    # also works for templates that render the latest assistant turn differently (Qwen3 thinking).
    full = render(tokenizer, [*_DUMMY, *messages], add_generation_prompt=True)
    at = full.find(_DUMMY_REPLY)
    if at < 0:
        raise ValueError("the chat template drops assistant content; cannot extend a conversation")
    rest = full[at + len(_DUMMY_REPLY) :]
    if completion_ids and completion_ids[-1] in eot_ids:
        generated_end = tokenizer.decode([completion_ids[-1]])
        if rest.startswith(generated_end):  # the model already closed its turn
            rest = rest[len(generated_end) :]
    return encode(tokenizer, rest)


def extend_prompt(
    tokenizer: Any,
    prompt: Prompt,
    completion: Completion,
    messages: Sequence[Message],
    eot_ids: set[int],
) -> Prompt:
    """The next turn's prompt, token-in/token-out: the sampled prompt and reply ids as they were,
    then `turn_delta_ids` (a Policy's `extend` for backends that sample token ids)."""
    if completion.prompt_ids is None or completion.completion_ids is None:
        raise ValueError("extend needs a completion with token ids (sampled by this backend)")
    if prompt.token_ids is not None and tuple(prompt.token_ids) != completion.prompt_ids:
        raise ValueError("this completion was not sampled from this prompt")
    delta = turn_delta_ids(tokenizer, completion.completion_ids, messages, eot_ids)
    return Prompt(
        messages=(*prompt.messages, {"role": "assistant", "content": completion.text}, *messages),
        token_ids=completion.prompt_ids + completion.completion_ids + tuple(delta),
    )
