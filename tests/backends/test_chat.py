"""Chat templates and token-in/token-out turn deltas, on the tiny tokenizer (no model needed)."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

from spade.backends import chat

USER = {"role": "user", "content": "Guess the number. Reply \\boxed{n}."}
OBS = {"role": "user", "content": "Too low. Try again."}


def test_prompt_ends_with_the_assistant_header(tiny_tokenizer):
    ids = chat.prompt_ids(tiny_tokenizer, [USER])
    assert tiny_tokenizer.decode(ids).endswith("<|im_start|>assistant\n")
    assert tiny_tokenizer.convert_tokens_to_ids("<|im_end|>") in chat.end_of_turn_ids(
        tiny_tokenizer
    )


@pytest.mark.parametrize("ended", [True, False], ids=["reply-ended-by-eot", "reply-cut-short"])
def test_extension_equals_rendering_the_whole_conversation(tiny_tokenizer, ended):
    tok = tiny_tokenizer
    eot = chat.end_of_turn_ids(tok)
    reply = chat.encode(tok, "I guess \\boxed{7}")
    if ended:
        reply = reply + [tok.convert_tokens_to_ids("<|im_end|>")]
    history = chat.prompt_ids(tok, [USER]) + reply
    delta = chat.turn_delta_ids(tok, reply, [OBS], eot)
    expected = chat.render(
        tok, [USER, {"role": "assistant", "content": "I guess \\boxed{7}"}, OBS], True
    )
    assert tok.decode(history + delta) == expected
    assert delta[0] != reply[-1] or not ended  # the end-of-turn token is never doubled


def test_other_templates_work_too(tiny_tokenizer):
    """A Llama-3-like layout: default system prompt, headers, no newline after end-of-turn."""
    tok = tiny_tokenizer
    saved = tok.chat_template
    tok.chat_template = (
        "[SYS]be brief[/SYS]"
        "{% for m in messages %}"
        "<|im_start|>[{{ m['role'] }}]{{ m['content'] | trim }}<|im_end|>"
        "{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>[assistant]{% endif %}"
    )
    try:
        reply = chat.encode(tok, "ok")
        history = chat.prompt_ids(tok, [USER]) + reply
        delta = chat.turn_delta_ids(tok, reply, [OBS], chat.end_of_turn_ids(tok))
        expected = chat.render(tok, [USER, {"role": "assistant", "content": "ok"}, OBS], True)
        assert tok.decode(history + delta) == expected
        assert expected.count("[SYS]") == 1
    finally:
        tok.chat_template = saved


def test_default_template_is_given_only_when_missing(tiny_tokenizer):
    assert chat.ensure_chat_template(tiny_tokenizer) is False
    saved = tiny_tokenizer.chat_template
    tiny_tokenizer.chat_template = None
    try:
        assert chat.ensure_chat_template(tiny_tokenizer) is True
        assert tiny_tokenizer.chat_template == chat.DEFAULT_CHAT_TEMPLATE
    finally:
        tiny_tokenizer.chat_template = saved


def test_templates_that_rerender_the_last_assistant_turn(tiny_tokenizer):
    """Qwen3-like: the latest assistant turn gets an empty think block, earlier ones do not."""
    tok = tiny_tokenizer
    saved = tok.chat_template
    tok.chat_template = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
        "{% if m['role'] == 'assistant' and loop.last %}<think></think>{% endif %}"
        "{{ m['content'] }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    try:
        eot = {tok.convert_tokens_to_ids("<|im_end|>")}
        reply = chat.encode(tok, "ok") + sorted(eot)
        delta = chat.turn_delta_ids(tok, reply, [OBS], eot)
        assert (
            tok.decode(delta)
            == "\n<|im_start|>user\nToo low. Try again.<|im_end|>\n<|im_start|>assistant\n"
        )
    finally:
        tok.chat_template = saved
