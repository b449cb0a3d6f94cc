"""Small helpers around transformers that the backend modules share."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


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
