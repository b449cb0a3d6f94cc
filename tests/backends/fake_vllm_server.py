"""A fake vLLM server on 127.0.0.1 speaking `/v1/completions` with vLLM's token-id extensions.

    python tests/backends/fake_vllm_server.py --port 0 [--fail-first N] [--reply MODE]

Prints `PORT <n>` once listening. Standard library only. It checks what VLLMPolicy must send (a
prompt of token ids, `return_token_ids`, `logprobs: 0`, an integer seed) and answers 400 when a
field is wrong, as a real server would refuse or misread it. Replies are deterministic: the
completion is `max_tokens` ids (at most 6) drawn from 20..69 by the request's seed, each with
logprob -0.1 x (position + 1), then the first stop token id; `prompt_token_ids` echoes the
prompt. `--reply` breaks them on purpose: `no-ids` (no `token_ids`), `misaligned` (one logprob
fewer), `retokenized` (a prompt_token_ids that differs from the prompt).

Dev-mode endpoints (as `VLLM_SERVER_DEV_MODE=1` serves them; `--no-dev` answers 404):
`POST /pause?mode=wait`, `/resume` (a completion while paused is a 503, so a test sees one
that slipped in), `/collective_rpc` (only `reload_weights` with an existing `weights_path`; the
loaded path seeds later completions, so new weights sample other ids), `/update_weight_version
{"new_version": "N"}`, `/reset_prefix_cache`, and `GET /weight_info`.

LoRA (`--no-lora` answers 404, as a server without `VLLM_ALLOW_RUNTIME_LORA_UPDATING`): `POST
/v1/load_lora_adapter {lora_name, lora_path, load_inplace}` needs a folder with
`adapter_config.json`, refuses a second load of a name without `load_inplace` and a name that
is the served model's (400, as vLLM), answers success in plain text (as vLLM),
and completions asking for that name are seeded by the adapter file's bytes. With
`--served-model-name NAME` a completion for any other model than NAME or a loaded adapter is a
404 ("The model `x` does not exist.").

The NCCL control plane (vLLM's RL routes; the broadcast itself needs GPUs and is not faked):
`GET /get_world_size` (`--world-size`, default 1), `POST /init_weight_transfer_engine
{"init_info": {...}}` (the worker-side fields checked), `/start_weight_update`,
`/update_weights {"update_info": {names, dtype_names, shapes}}` (equal lengths; only between a
start and a finish), `/finish_weight_update` (the weights then count as new),
`/shutdown_weight_transfer_engine`; out of order they answer 500 as vLLM's engine raises.

`--slow-above N --slow-s S`: a completion whose prompt has more than N ids is answered after S
seconds (one slow conversation among fast ones).

GET /requests returns every request received, in order: its body plus `"_path"` and `"_t"`
(arrival, `time.monotonic()`; the test runs on the same machine).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

TRANSFER_ROUTES = {
    "/init_weight_transfer_engine",
    "/start_weight_update",
    "/update_weights",
    "/finish_weight_update",
    "/shutdown_weight_transfer_engine",
}


def make_handler(args: argparse.Namespace) -> type[BaseHTTPRequestHandler]:
    lock = threading.Lock()
    received: list[dict] = []
    state: dict = {
        "paused": False,
        "weights": None,
        "version": None,
        "loras": {},
        "transfer": None,
        "updating": False,
        "nccl_updates": 0,
    }

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *a: object) -> None:
            pass

        def _send(self, status: int, payload: object) -> None:
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/requests"):
                with lock:
                    return self._send(200, received)
            if self.path == "/weight_info" and not args.no_dev:
                return self._send(200, {"weight_version": state["version"]})
            if self.path.split("?")[0] == "/get_world_size" and not args.no_dev:
                with lock:
                    received.append({"_path": self.path, "_t": time.monotonic()})
                return self._send(200, {"world_size": args.world_size})
            self._send(404, {"error": {"message": "not found"}})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            with lock:
                received.append({**body, "_path": self.path, "_t": time.monotonic()})
                n = len(received)
            if not self.path.startswith("/v1/"):
                return self._dev(self.path, body)
            if self.path.endswith("/v1/load_lora_adapter"):
                return self._load_lora(body)
            if not self.path.endswith("/v1/completions"):
                return self._send(404, {"error": {"message": f"no route {self.path}"}})
            if n <= args.fail_first:
                return self._send(503, {"error": {"message": "engine is starting"}})
            if state["paused"]:
                return self._send(503, {"error": {"message": "generation is paused"}})
            model = body.get("model")
            served = {args.served_model_name, *state["loras"]}
            if args.served_model_name is not None and model not in served:
                message = f"The model `{model}` does not exist."
                return self._send(404, {"error": {"message": message}})
            prompt = body.get("prompt")
            if not (
                isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt)
            ):
                return self._send(400, {"error": {"message": "prompt must be token ids"}})
            if body.get("logprobs") != 0 or body.get("return_token_ids") is not True:
                return self._send(400, {"error": {"message": "expected logprobs=0 and ids"}})
            if not isinstance(body.get("seed"), int):
                return self._send(400, {"error": {"message": "seed must be an integer"}})
            if args.slow_above is not None and len(prompt) > args.slow_above:
                time.sleep(args.slow_s)
            weights = state["loras"].get(model, state["weights"])
            rng = random.Random(f"{body['seed']}/{weights}")
            ids = [rng.randrange(20, 70) for _ in range(min(int(body["max_tokens"]), 6))]
            finish = "length"
            stops = body.get("stop_token_ids") or []
            if len(ids) < int(body["max_tokens"]) and stops:
                ids.append(stops[0])
                finish = "stop"
            logprobs = [-0.1 * (k + 1) for k in range(len(ids))]
            choice = {
                "index": 0,
                "text": " ".join(f"t{t}" for t in ids),
                "token_ids": ids,
                "logprobs": {"token_logprobs": logprobs, "tokens": [f"t{t}" for t in ids]},
                "finish_reason": finish,
                "prompt_token_ids": list(prompt),
            }
            if args.reply == "no-ids":
                del choice["token_ids"]
            if args.reply == "misaligned":
                choice["logprobs"]["token_logprobs"] = logprobs[:-1]
            if args.reply == "retokenized":
                choice["prompt_token_ids"] = list(prompt)[:-1]
            self._send(200, {"id": f"cmpl-{n}", "object": "text_completion", "choices": [choice]})

        def _load_lora(self, body: dict) -> None:
            if args.no_lora:
                return self._send(404, {"detail": "Not Found"})
            name, path = body.get("lora_name"), body.get("lora_path")
            if not isinstance(name, str) or not isinstance(path, str):
                return self._send(400, {"error": {"message": "lora_name and lora_path needed"}})
            if not (Path(path) / "adapter_config.json").is_file():
                return self._send(400, {"error": {"message": f"no adapter at {path}"}})
            if name in state["loras"] and body.get("load_inplace") is not True:
                message = f"The lora adapter '{name}' has already been loaded."
                return self._send(400, {"error": {"message": message}})
            if name == args.served_model_name:
                message = f"The lora adapter '{name}' conflicts with a served base model."
                return self._send(400, {"error": {"message": message}})
            digest = hashlib.sha256()
            for f in sorted(Path(path).glob("*.safetensors")):
                digest.update(f.read_bytes())
            state["loras"][name] = digest.hexdigest()
            text = f"Success: LoRA adapter '{name}' added successfully.".encode()
            self.send_response(200)  # plain text, as vLLM 0.32 answers
            self.send_header("Content-Length", str(len(text)))
            self.end_headers()
            self.wfile.write(text)

        def _transfer(self, route: str, body: dict) -> None:
            """vLLM's NCCL control plane, minus the broadcast."""
            if route == "/init_weight_transfer_engine":
                info = body.get("init_info")
                fields = {"master_address", "master_port", "rank_offset", "world_size"}
                if not isinstance(info, dict) or not fields <= set(info):
                    return self._send(422, {"detail": f"init_info needs {sorted(fields)}"})
                if info["world_size"] != args.world_size + 1 or info["rank_offset"] != 1:
                    return self._send(500, {"detail": "NCCL group size does not match"})
                state["transfer"] = info
                return self._send(200, {"message": "Weight transfer initialized"})
            if route == "/shutdown_weight_transfer_engine":
                state["transfer"] = None
                return self._send(200, {"message": "Weight transfer shut down"})
            if state["transfer"] is None:
                return self._send(500, {"detail": "weight transfer engine is not initialized"})
            if route == "/start_weight_update":
                state["updating"] = True
                return self._send(200, {"message": "Weight update started"})
            if not state["updating"]:
                return self._send(500, {"detail": f"{route} outside start/finish_weight_update"})
            if route == "/update_weights":
                info = body.get("update_info") or {}
                lists = [info.get(k) for k in ("names", "dtype_names", "shapes")]
                if not all(isinstance(x, list) for x in lists) or len({len(x) for x in lists}) != 1:
                    return self._send(422, {"detail": "names, dtype_names, shapes must align"})
                return self._send(200, {"message": "Weights updated"})
            state["updating"] = False  # /finish_weight_update
            state["nccl_updates"] += 1
            state["weights"] = f"nccl-{state['nccl_updates']}"
            return self._send(200, {"message": "Weight update finished"})

        def _dev(self, path: str, body: dict) -> None:
            route = path.split("?")[0]
            if args.no_dev:
                return self._send(404, {"detail": "Not Found"})
            if route == "/pause":
                if "mode=wait" not in path:
                    return self._send(400, {"error": "expected mode=wait"})
                state["paused"] = True
                return self._send(200, {"status": "paused"})
            if route == "/resume":
                state["paused"] = False
                return self._send(200, {"status": "resumed"})
            if route == "/reset_prefix_cache":
                return self._send(200, {})
            if route == "/update_weight_version":
                if not isinstance(body.get("new_version"), str):
                    return self._send(422, {"detail": "new_version must be a string"})
                state["version"] = body["new_version"]
                return self._send(200, {"success": True, "new_version": body["new_version"]})
            if route in TRANSFER_ROUTES:
                return self._transfer(route, body)
            if route == "/collective_rpc":
                weights = (body.get("kwargs") or {}).get("weights_path")
                if body.get("method") != "reload_weights" or not isinstance(weights, str):
                    return self._send(400, {"detail": "only reload_weights is faked"})
                if not (Path(weights) / "config.json").is_file():
                    return self._send(500, {"detail": f"no model at {weights}"})
                state["weights"] = weights
                return self._send(200, {"results": [None]})
            self._send(404, {"detail": "Not Found"})

    return Handler


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--fail-first", type=int, default=0)
    p.add_argument("--reply", choices=["no-ids", "misaligned", "retokenized"], default=None)
    p.add_argument("--no-dev", action="store_true", help="no dev-mode endpoints")
    p.add_argument("--no-lora", action="store_true", help="no runtime LoRA loading")
    p.add_argument("--served-model-name", default=None)
    p.add_argument("--world-size", type=int, default=1)
    p.add_argument("--slow-above", type=int, default=None)
    p.add_argument("--slow-s", type=float, default=1.0)
    args = p.parse_args(argv)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(args))
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()
