"""Restock a warehouse shelf by shelf, following the manager's instructions one at a time."""


class WarehouseRestockEnv(ToolUseBaseEnv):
    def reset(self, seed=None):
        rng = random.Random(seed)
        shelves = ["A", "B", "C", "D"]
        self._state = {
            "stock": {s: rng.randint(0, 3) for s in shelves},
            "orders": [],
            "audited": False,
        }
        self.target = rng.choice(shelves)
        self.amount = rng.randint(4, 9)
        self._tools = {
            "check_stock": {
                "description": "Units on a shelf.",
                "parameters": {
                    "type": "object",
                    "properties": {"shelf": {"type": "string"}},
                    "required": ["shelf"],
                },
            },
            "order_units": {
                "description": "Order units for a shelf.",
                "parameters": {
                    "type": "object",
                    "properties": {"shelf": {"type": "string"}, "units": {"type": "integer"}},
                    "required": ["shelf", "units"],
                },
            },
            "run_audit": {
                "description": "Record a stock audit.",
                "parameters": {"type": "object", "properties": {}},
            },
        }
        self._user_messages = [
            f"Check how many units are on shelf {self.target}.",
            f"Order {self.amount} units for shelf {self.target}.",
            "Run the audit.",
        ]
        self._message_criteria = [
            lambda st: self.target in st.get("checked", []),
            lambda st: [self.target, self.amount] in st["orders"],
            lambda st: st["audited"],
        ]
        self._current_msg = 0
        self._expected_answer = "done"
        return self._user_messages[0] + self._obs_suffix(), {}

    def tool_check_stock(self, shelf):
        self._state.setdefault("checked", []).append(shelf)
        return f"Shelf {shelf}: {self._state['stock'].get(shelf, 0)} units" + self._advance_if_done()

    def tool_order_units(self, shelf, units):
        self._state["orders"].append([shelf, int(units)])
        return f"Ordered {units} for {shelf}" + self._advance_if_done()

    def tool_run_audit(self):
        self._state["audited"] = True
        return "Audit recorded" + self._advance_if_done()

    def solution(self):
        return (
            f"First call check_stock with shelf={self.target}. Then call order_units with "
            f"shelf={self.target} and units={self.amount}. Finally call run_audit. "
            "When every step is complete, reply <answer>done</answer>"
        )
