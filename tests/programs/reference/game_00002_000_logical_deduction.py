"""Deduce the hidden code digit by digit from ordered clues, within three guesses."""

random.seed(0)  # the reference ran top-level statements; this one is harmless
print("loading a deduction game")
PRIMES: FrozenSet[int] = frozenset({2, 3, 5, 7})


def _merge(parts: Iterable[Sequence[int]]) -> List[int]:
    heap: List[int] = []
    for value in chain.from_iterable(parts):
        heappush(heap, value)
    return [heappop(heap) for _ in range(len(heap))]


class CodeDeductionEnv:
    def __init__(self, max_turns=3, difficulty=1):
        self.max_turns = max_turns
        self.difficulty = difficulty

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.code = rng.randint(10, 99)
        self.turn = 0
        clues: Mapping[str, int] = {"tens": self.code // 10, "ones": self.code % 10}
        total = int(numpy.sum(np.array(_merge([[clues["tens"]], [clues["ones"]]]))))
        self.obs = (
            f"A two-digit code. Its digits sum to {total}; the tens digit is "
            f"{'prime' if clues['tens'] in PRIMES else 'not prime'} and the ones digit is "
            f"{clues['ones']}. Guess with \\boxed{{NN}}. You have {self.max_turns} guesses."
        )
        return self.obs, {}

    def step(self, action):
        self.turn += 1
        match = re.search(r"\\boxed\{\s*(\d+)\s*\}", action)
        if match and int(match.group(1)) == self.code:
            return "Correct!", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return "Out of guesses.", 0.0, True, False, {}
        return "Wrong, guess again.", 0.0, False, False, {}

    def solution(self):
        return f"\\boxed{{{self.code}}}"
