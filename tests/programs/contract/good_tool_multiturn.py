"""Move boxes between shelves following instructions revealed one at a time.

skill: Multi-Step Workflows
hint: Finish each instruction before the next one appears; answer done at the end.
"""


class ShelvesEnv(ToolUseBaseEnv):
    def reset(self, seed=None):
        rng = random.Random(seed)
        self.turn_count, self._call_history, self._current_msg = 0, [], 0
        boxes = rng.sample(["red", "blue", "green", "gray", "pink"], 3)
        self._state = {"shelf": {b: "A" for b in boxes}}
        self.plan = [(b, rng.choice("BC")) for b in boxes]
        self._user_messages = [f"Move the {b} box to shelf {s}." for b, s in self.plan]
        self._message_criteria = [
            (lambda st, b=b, s=s: st["shelf"][b] == s) for b, s in self.plan
        ]
        self._expected_answer = "done"
        self._tools = {
            "move": {
                "description": "Move a box to a shelf.",
                "parameters": {
                    "type": "object",
                    "properties": {"box": {"type": "string"}, "shelf": {"type": "string"}},
                    "required": ["box", "shelf"],
                },
            }
        }
        return self._user_messages[0], {}

    def tool_move(self, box, shelf):
        if box not in self._state["shelf"]:
            raise KeyError(box)
        self._state["shelf"][box] = shelf
        return f"{box} is on shelf {shelf}." + self._advance_if_done()

    def solution(self):
        calls = [
            '<tool_call>{"name": "move", "arguments": {"box": "%s", "shelf": "%s"}}</tool_call>'
            % (b, s)
            for b, s in self.plan
        ]
        return calls + ["<answer>done</answer>"]
