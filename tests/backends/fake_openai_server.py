"""A fake OpenAI-compatible chat server on 127.0.0.1, for testing OpenAICompatPolicy over real HTTP.

    python tests/backends/fake_openai_server.py --port 0 [--fail-first 2] [--require-key K] ...

Prints `PORT <n>` on stdout once listening. Standard library only.

Replies are deterministic: the text is "echo: <last user message>" cut to `max_tokens` characters
(one character = one token, id = its code point) and at the first stop string. Logprobs are
-0.5 - 0.01 * position; with `return_token_ids` the reply carries `prompt_token_ids` (the code
points of all message contents) and `choices[0].token_ids`, as vLLM does.

`--reply` breaks the successful replies on purpose: `not-json` (a 200 whose body is not JSON),
`malformed` (JSON without choices), `misaligned` (one token id fewer than logprobs),
`no-logprob` (logprob entries without their "logprob" field); `--finish R` reports finish
reason R; `--retry-after S` sends `Retry-After: S` with each --fail-first error.

GET /stats returns {"requests": n, "max_in_flight": m, "auth_seen": [bool...], "seeds": [...]}.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class State:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.lock = threading.Lock()
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.auth_seen: list[bool] = []
        self.seeds: list[int | None] = []


def make_handler(state: State) -> type[BaseHTTPRequestHandler]:
    args = state.args

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *a: object) -> None:  # quiet
            pass

        def _send(
            self, status: int, payload: object, headers: dict[str, str] | None = None
        ) -> None:
            body = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
            self._done()  # before the reply: a client may send its next request on receiving it
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def _done(self) -> None:
            """This request leaves the in-flight count (once)."""
            if getattr(self, "counted", False):
                self.counted = False
                with state.lock:
                    state.in_flight -= 1

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/stats"):
                with state.lock:
                    self._send(
                        200,
                        {
                            "requests": state.requests,
                            "max_in_flight": state.max_in_flight,
                            "auth_seen": state.auth_seen,
                            "seeds": state.seeds,
                        },
                    )
            else:
                self._send(404, {"error": {"message": "not found"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            auth = self.headers.get("Authorization")
            with state.lock:
                state.requests += 1
                n = state.requests
                state.in_flight += 1
                state.max_in_flight = max(state.max_in_flight, state.in_flight)
                state.auth_seen.append(auth is not None)
                state.seeds.append(body.get("seed"))
            self.counted = True
            try:
                self._reply(n, body, auth)
            finally:
                self._done()

        def _reply(self, n: int, body: dict, auth: str | None) -> None:
            if not self.path.endswith("/chat/completions"):
                return self._send(404, {"error": {"message": f"no route {self.path}"}})
            if args.require_key and auth != f"Bearer {args.require_key}":
                return self._send(401, {"error": {"message": "invalid api key"}})
            if n <= args.fail_first:
                return self._send(
                    args.fail_status,
                    {"error": {"message": "overloaded, try again"}},
                    {"Retry-After": args.retry_after}
                    if args.retry_after is not None
                    else ({"Retry-After": "0"} if args.fail_status == 429 else None),
                )
            if args.bad_request_model and body.get("model") == args.bad_request_model:
                return self._send(
                    400, {"error": {"message": f"model {args.bad_request_model} does not exist"}}
                )
            if args.delay_s:
                time.sleep(args.delay_s)
            messages = body.get("messages", [])
            last_user = next(
                (m["content"] for m in reversed(messages) if m.get("role") == "user"), ""
            )
            text = "echo: " + str(last_user)
            finish = "stop"
            max_tokens = int(body.get("max_tokens") or 10**9)
            if len(text) > max_tokens:
                text, finish = text[:max_tokens], "length"
            for stop in body.get("stop") or []:
                if stop in text:
                    text, finish = text[: text.index(stop)], "stop"
            choice: dict = {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": finish,
            }
            if body.get("logprobs") and not args.no_logprobs:
                choice["logprobs"] = {
                    "content": [
                        {"token": c, "logprob": -0.5 - 0.01 * i, "top_logprobs": []}
                        for i, c in enumerate(text)
                    ]
                }
            reply: dict = {
                "id": f"chatcmpl-{n}",
                "object": "chat.completion",
                "model": body.get("model"),
                "choices": [choice],
            }
            if body.get("return_token_ids"):
                reply["prompt_token_ids"] = [
                    ord(c) for m in messages for c in str(m.get("content", ""))
                ]
                choice["token_ids"] = [ord(c) for c in text]
            if args.finish is not None:
                choice["finish_reason"] = args.finish
            if args.reply == "not-json":
                return self._send(200, "<html>502 Bad Gateway</html>")
            if args.reply == "malformed":
                return self._send(200, {"id": "x", "object": "chat.completion"})
            if args.reply == "misaligned" and "token_ids" in choice:
                choice["token_ids"] = choice["token_ids"][:-1]
            if args.reply == "no-logprob" and "logprobs" in choice:
                for entry in choice["logprobs"]["content"]:
                    entry.pop("logprob")
            self._send(200, reply)

    return Handler


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=0)
    p.add_argument(
        "--fail-first", type=int, default=0, help="answer the first N requests with an error"
    )
    p.add_argument("--fail-status", type=int, default=503)
    p.add_argument("--require-key", default=None)
    p.add_argument("--delay-s", type=float, default=0.0)
    p.add_argument("--no-logprobs", action="store_true")
    p.add_argument("--bad-request-model", default=None)
    p.add_argument(
        "--reply", choices=["not-json", "malformed", "misaligned", "no-logprob"], default=None
    )
    p.add_argument("--finish", default=None, help="finish_reason of every reply")
    p.add_argument("--retry-after", default=None, help="Retry-After header of the errors")
    args = p.parse_args(argv)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(State(args)))
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()
