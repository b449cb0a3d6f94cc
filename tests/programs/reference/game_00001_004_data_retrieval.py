"""Report which team members are on call this week, in any order."""


class OnCallRosterEnv(ToolUseBaseEnv):
    def __init__(self, max_turns=8, **kwargs):
        self.region = kwargs.get("region", "emea")
        super().__init__(max_turns=max_turns, **kwargs)

    def reset(self, seed=None):
        rng = random.Random(seed)
        people = ["ana", "bo", "cy", "dee", "eli", "fay"]
        self._state = {"roster": {p: rng.random() < 0.4 for p in people}}
        if not any(self._state["roster"].values()):
            self._state["roster"]["cy"] = True
        self._expected_answer = sorted(p for p, on in self._state["roster"].items() if on)
        self._tools = {
            "list_people": {
                "description": "Everyone in the team.",
                "parameters": {"type": "object", "properties": {}},
            },
        }
        return (
            f"Region {self.region}: who is on call this week? Answer with the names separated "
            "by commas, e.g. <answer>ana, bo</answer>. Use is_on_call(name) to check a person."
        ), {}

    def tool_list_people(self):
        return ", ".join(sorted(self._state["roster"]))

    # not declared in _tools: the reference still runs any tool_<name> method
    def tool_is_on_call(self, name):
        return "yes" if self._state["roster"].get(name) else "no"

    def _check_answer(self, answer):
        given = sorted(part.strip().lower() for part in answer.split(",") if part.strip())
        return given == self._expected_answer

    def solution(self):
        names = list(reversed(self._expected_answer))
        return f"<answer>{', '.join(names)}</answer>"
