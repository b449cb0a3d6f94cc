"""Look up an item's price with a tool and report the total cost of an order."""


class PriceLookupEnv(ToolUseBaseEnv):
    def reset(self, seed=None):
        rng = random.Random(seed)
        self._state = {"prices": {name: rng.randint(120, 990) for name in ("bolt", "gear", "lens")}}
        self.item = rng.choice(sorted(self._state["prices"]))
        self.quantity = rng.randint(3, 9)
        self._expected_answer = self._state["prices"][self.item] * self.quantity
        self._tools = {
            "get_price": {
                "description": "Unit price of an item in cents.",
                "parameters": {
                    "type": "object",
                    "properties": {"item": {"type": "string"}},
                    "required": ["item"],
                },
            }
        }
        return (f"What do {self.quantity} units of '{self.item}' cost in cents? "
                "Answer with <answer>N</answer>."), {}

    def tool_get_price(self, item):
        return str(self._state["prices"][item])

    def solution(self):
        return (f"Call get_price with item={self.item}, multiply by {self.quantity} "
                f"and answer {self._expected_answer}.")
