"""Small helpers around transformers that the backend modules share."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def quiet_progress() -> Iterator[None]:
    """Hide transformers' own per-call progress bars (loading / writing weights) for a moment."""
    from transformers.utils import logging

    was_enabled = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            logging.enable_progress_bar()


FP32_ATTENTION = "spade_sdpa_fp32"
"""transformers attention implementation: SDPA computed in fp32 inside bf16 autocast."""


def use_fp32_attention(model: Any) -> bool:
    """Run a model's SDPA attention in fp32 while its matmuls stay in bf16 autocast.

    On CPU, autocast also casts scaled_dot_product_attention to bf16, whose kernels are far
    slower than fp32's there (measured on an AMD EPYC with AVX512-BF16, one thread, decode
    shapes of the default model: 4.4 ms bf16 vs 0.35 ms fp32 per call), and attention is a small
    share of the FLOPs. True when the model's implementation was switched (it must use "sdpa")."""
    import torch
    from transformers import AttentionInterface
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    def forward(module, query, key, value, attention_mask, **kwargs):  # type: ignore[no-untyped-def]
        with torch.autocast(device_type=query.device.type, enabled=False):
            return sdpa_attention_forward(
                module, query.float(), key.float(), value.float(), attention_mask, **kwargs
            )

    config = getattr(model, "config", None)
    if getattr(config, "_attn_implementation", None) != "sdpa":
        return False
    AttentionInterface.register(FP32_ATTENTION, forward)
    try:
        from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

        AttentionMaskInterface.register(FP32_ATTENTION, sdpa_mask)
    except ImportError:  # older transformers build masks from the attention name elsewhere
        return False
    model.set_attn_implementation(FP32_ATTENTION)
    return True
