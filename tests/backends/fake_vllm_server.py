"""A fake vLLM server on 127.0.0.1 speaking `/v1/completions` with vLLM's token-id extensions.

    python tests/backends/fake_vllm_server.py --port 0 [--fail-first N] [--reply MODE]

Prints `PORT <n>` once listening. Standard library only. It checks what VLLMPolicy must send (a
prompt of token ids, `return_token_ids`, `logprobs: 0`, an integer seed) and answers 400 when a
field is wrong, as a real server would refuse or misread it. Replies are deterministic: the
completion is `max_tokens` ids (at most 6) drawn from 20..69 by the request's seed, each with
logprob -0.1 x (position + 1), then the first stop token id; `prompt_token_ids` echoes the
prompt. `--reply` breaks them on purpose: `no-ids` (no `token_ids`), `misaligned` (one logprob
fewer), `retokenized` (a prompt_token_ids that differs from the prompt).

GET /requests returns every request body received, in order.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def make_handler(args: argparse.Namespace) -> type[BaseHTTPRequestHandler]:
    lock = threading.Lock()
    received: list[dict] = []

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
            self._send(404, {"error": {"message": "not found"}})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            with lock:
                received.append(body)
                n = len(received)
            if not self.path.endswith("/v1/completions"):
                return self._send(404, {"error": {"message": f"no route {self.path}"}})
            if n <= args.fail_first:
                return self._send(503, {"error": {"message": "engine is starting"}})
            prompt = body.get("prompt")
            if not (
                isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt)
            ):
                return self._send(400, {"error": {"message": "prompt must be token ids"}})
            if body.get("logprobs") != 0 or body.get("return_token_ids") is not True:
                return self._send(400, {"error": {"message": "expected logprobs=0 and ids"}})
            if not isinstance(body.get("seed"), int):
                return self._send(400, {"error": {"message": "seed must be an integer"}})
            rng = random.Random(body["seed"])
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

    return Handler


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--fail-first", type=int, default=0)
    p.add_argument("--reply", choices=["no-ids", "misaligned", "retokenized"], default=None)
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
