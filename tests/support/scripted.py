"""A scripted Policy for loop and rollout tests: replies come from a plain function.

Tokens are the UTF-8 bytes of the text (+3, so 0-2 stay free as special ids), so tests can decode
them back; logprobs are a constant. It implements the `Policy` protocol token-in/token-out: a
conversation is extended by appending the completion's tokens as generated plus the new messages.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from spade.backends.base import Completion, Message, Prompt, SamplingParams

LOGPROB = -0.5


def encode(text: str) -> tuple[int, ...]:
    return tuple(b + 3 for b in text.encode())


def decode(ids: Sequence[int]) -> str:
    return bytes(i - 3 for i in ids).decode()


def render(messages: Sequence[Message]) -> tuple[int, ...]:
    return encode("".join(f"<{m['role']}>{m.get('content', '')}</{m['role']}>" for m in messages))


class ScriptedPolicy:
    def __init__(self, reply: Callable[[Sequence[Message]], str]) -> None:
        self.reply = reply
        self.calls: list[int] = []  # batch size of each sample() call

    def sample(
        self, prompts: Sequence[Prompt | Sequence[Message]], params: SamplingParams
    ) -> list[Completion]:
        self.calls.append(len(prompts))
        out = []
        for conversation in prompts:
            prompt = Prompt.of(conversation)
            ids = prompt.token_ids if prompt.token_ids is not None else render(prompt.messages)
            text = self.reply(prompt.messages)
            completion_ids = encode(text)
            out.append(
                Completion(
                    text,
                    tuple(ids),
                    completion_ids,
                    tuple(LOGPROB for _ in completion_ids),
                    "stop",
                    params.logprob_temperature,
                )
            )
        return out

    def extend(self, prompt: Prompt, completion: Completion, messages: Sequence[Message]) -> Prompt:
        assert completion.prompt_ids is not None and completion.completion_ids is not None
        history = (*prompt.messages, {"role": "assistant", "content": completion.text}, *messages)
        ids = completion.prompt_ids + completion.completion_ids + render(messages)
        return Prompt(history, ids)
