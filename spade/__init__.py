"""spade: SPADE self-play for language models, with model-written environments run in a sandbox."""

__version__ = "0.1.0"
