"""Value a portfolio through a flaky market-data API whose errors each demand a different recovery.

skill: Error Recovery
hint: Read each error code and act on it: 503 means wait at least the stated seconds and retry (it can happen again), 502 means switch endpoint, 301 means resolve the new ticker, 401 means fetch a fresh token. Never retry unchanged without fixing the cause.
difficulty: 1-3
turns: single
"""
import json
import random


def _call(name, /, **arguments):
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


TICKERS = ["ALDR", "BRQX", "CYMO", "DELV", "EQNT", "FARO", "GLYD", "HMPT", "IRKA", "JOVE", "KTRN", "LUMA"]


class FlakyQuotesEnv(ToolUseBaseEnv):
    MODES = {1: ["ok", "limited", "down"], 2: ["ok", "limited", "down", "moved"],
             3: ["ok", "limited", "down", "moved", "ok"]}

    def __init__(self, max_turns=20, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.difficulty = difficulty
        super().__init__(max_turns=max_turns)

    def reset(self, seed=None):
        self._rng = rng = random.Random(seed)
        self.turn_count, self._call_history, self._current_msg = 0, [], 0
        d = self.difficulty
        modes = list(self.MODES[d])
        rng.shuffle(modes)
        names = rng.sample(TICKERS, len(modes) + 1)
        holdings = {sym: rng.randint(5, 120) for sym in names[:-1]}
        symbols = {}
        for sym, mode in zip(names, modes):
            symbols[sym] = {"mode": mode, "failures": 2 if d == 3 else 1, "served": 0, "available_at": 0,
                            "retry_after": [rng.randint(40, 90) for _ in range(2)]}
        moved = [s for s, m in zip(names, modes) if m == "moved"]
        renamed = {moved[0]: names[-1]} if moved else {}
        prices = {renamed.get(sym, sym): round(rng.uniform(8, 480), 2) for sym in holdings}
        self._state = {"holdings": holdings, "symbols": symbols, "renamed": renamed, "prices": prices, "clock": 0,
                       "ttl": 30 if d == 3 else 10 ** 9, "tokens": {},
                       "token_pool": ["tok_%08x" % rng.getrandbits(32) for _ in range(30)]}
        self._expected_answer = "%.2f" % sum(q * prices[renamed.get(s, s)] for s, q in holdings.items())
        sym_p = {"type": "string"}
        self._tools = {
            "get_token": {"description": "Issue a fresh API token.", "parameters": {"type": "object", "properties": {}}},
            "get_quote": {"description": "Last price of a ticker. endpoint: 'primary' (default) or 'backup'.",
                          "parameters": {"type": "object", "properties": {"symbol": sym_p, "token": {"type": "string"},
                                                                          "endpoint": {"type": "string"}},
                                         "required": ["symbol", "token"]}},
            "resolve_symbol": {"description": "Current ticker of a renamed/merged symbol.",
                               "parameters": {"type": "object", "properties": {"symbol": sym_p}, "required": ["symbol"]}},
            "wait": {"description": "Let simulated time pass (seconds, 1-300).",
                     "parameters": {"type": "object", "properties": {"seconds": {"type": "integer"}},
                                    "required": ["seconds"]}},
        }
        held = ", ".join(f"{q} x {s}" for s, q in holdings.items())
        ttl = " Tokens expire 30 simulated seconds after they are issued." if d == 3 else ""
        obs = (f"You value a client's portfolio: {held}. Report its total market value in USD (sum of shares x last "
               "price). The market-data API is unreliable: calls can fail with HTTP-style error codes that explain what "
               f"to do. A renamed ticker keeps the same shares under its new ticker.{ttl} Only wait() advances the clock.\n"
               "Tools: get_token(), get_quote(symbol, token, endpoint='primary'), resolve_symbol(symbol), wait(seconds).\n"
               'Call tools like <tool_call>{"name": "get_quote", "arguments": {"symbol": "ABCD", "token": "tok_..."}}'
               "</tool_call> (several per reply allowed, run in order). Finish with e.g. <answer>12345.67</answer>.\n"
               f"You have {self.max_turns} replies. Success: the exact total to the cent.")
        return obs, {}

    def tool_get_token(self):
        s = self._state
        n = len(s["tokens"])
        token = s["token_pool"][n] if n < len(s["token_pool"]) else "tok_x%d" % n
        s["tokens"][token] = s["clock"]
        return json.dumps({"token": token, "issued_at": s["clock"]})

    def tool_wait(self, seconds):
        seconds = int(seconds)
        if not 1 <= seconds <= 300:
            return "400 Bad Request: seconds must be between 1 and 300."
        self._state["clock"] += seconds
        return f"Waited {seconds}s. Clock is now t={self._state['clock']}s."

    def tool_resolve_symbol(self, symbol):
        sym = str(symbol).strip().upper()
        if sym in self._state["renamed"]:
            return json.dumps({"symbol": sym, "current_ticker": self._state["renamed"][sym]})
        return f"{sym} has not been renamed." if sym in self._state["symbols"] else f"404 Not Found: unknown symbol {sym}."

    def tool_get_quote(self, symbol, token, endpoint="primary"):
        s, sym, endpoint = self._state, str(symbol).strip().upper(), str(endpoint).strip().lower()
        if token not in s["tokens"]:
            return "401 Unauthorized: invalid token. Call get_token()."
        if s["clock"] - s["tokens"][token] >= s["ttl"]:
            return "401 Unauthorized: token expired. Call get_token() for a new one."
        if endpoint not in ("primary", "backup"):
            return "400 Bad Request: endpoint must be 'primary' or 'backup'."
        if sym in s["prices"] and sym not in s["symbols"]:  # the new ticker of a renamed symbol
            return json.dumps({"symbol": sym, "price": s["prices"][sym], "endpoint": endpoint})
        info = s["symbols"].get(sym)
        if info is None:
            return f"404 Not Found: unknown symbol {sym}."
        if info["mode"] == "moved":
            return f"301 Moved Permanently: {sym} was renamed after a merger. Call resolve_symbol('{sym}')."
        if info["mode"] == "down" and endpoint == "primary":
            return "502 Bad Gateway: primary endpoint cannot reach this exchange. Alternative endpoint: 'backup'."
        if info["mode"] == "limited":
            if s["clock"] < info["available_at"]:
                return f"503 Service Unavailable: retry after {info['available_at'] - s['clock']}s."
            if info["failures"] > 0:  # throttled again: a new back-off window starts now
                wait = info["retry_after"][info["served"]]
                info["failures"], info["served"] = info["failures"] - 1, info["served"] + 1
                info["available_at"] = s["clock"] + wait
                return f"503 Service Unavailable: rate limited, retry after {wait}s."
        return json.dumps({"symbol": sym, "price": s["prices"][sym], "endpoint": endpoint})

    def solution(self):
        s, d = self._state, self.difficulty
        tokens = s["token_pool"]
        syms = list(s["holdings"])
        mode = {sym: s["symbols"][sym]["mode"] for sym in syms}
        limited = next(sym for sym in syms if mode[sym] == "limited")
        waits = s["symbols"][limited]["retry_after"]
        # 1) token, 2) try everything, 3) fix what can be fixed now and back off for the rate limit
        replies = [_call("get_token"), "".join(_call("get_quote", symbol=sym, token=tokens[0]) for sym in syms)]
        fix = [_call("resolve_symbol", symbol=sym) for sym in syms if mode[sym] == "moved"]
        fix += [_call("get_quote", symbol=sym, token=tokens[0], endpoint="backup") for sym in syms if mode[sym] == "down"]
        replies.append("".join(fix) + _call("wait", seconds=waits[0]))
        tok = tokens[1] if d == 3 else tokens[0]  # d3: the token expired while waiting
        retry = [_call("get_token")] if d == 3 else []
        retry += [_call("get_quote", symbol=limited, token=tok)]
        retry += [_call("get_quote", symbol=s["renamed"][sym], token=tok) for sym in syms if mode[sym] == "moved"]
        replies.append("".join(retry))
        if d == 3:  # throttled a second time
            replies.append(_call("wait", seconds=waits[1]) + _call("get_token") +
                           _call("get_quote", symbol=limited, token=tokens[2]))
        return replies + [f"<answer>{self._expected_answer}</answer>"]
