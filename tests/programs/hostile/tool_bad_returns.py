"""A tool-use environment whose execute_tool() breaks its contract, chosen by `how`:
returncode True ("bool_returncode", the default), returncode 1.0 ("float_returncode"),
returncode 2, a non-string output, and a missing output.

threat: wrong-type returns from tools
expected: call_tool raises SandboxError(kind="invalid") for each (returncode must be the int 0
  or 1, output a str)
safety: harmless
"""


class ToolBadReturnsEnv(ToolUseBaseEnv):
    def __init__(self, max_turns=10, how="bool_returncode"):
        self.how = how
        super().__init__(max_turns=max_turns)

    def reset(self, seed=None):
        self.turn_count = 0
        self._tools = {"lookup": {"description": "Look a key up.",
                                  "parameters": {"type": "object",
                                                 "properties": {"key": {"type": "string"}}}}}
        self._state = {"a": "1"}
        self._expected_answer = "1"
        return "Find the value of key a. Tools: lookup.", {}

    def tool_lookup(self, key):
        return self._state.get(key, "missing")

    def execute_tool(self, name, args):
        result = super().execute_tool(name, args)
        if self.how == "bool_returncode":
            result["returncode"] = result["returncode"] == 0
        elif self.how == "float_returncode":
            result["returncode"] = float(result["returncode"])
        elif self.how == "returncode_2":
            result["returncode"] = 2
        elif self.how == "output_int":
            result["output"] = 42
        elif self.how == "no_output":
            del result["output"]
        return result
