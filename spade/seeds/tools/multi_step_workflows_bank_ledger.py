"""Run a day of bank back-office work: transfer, pay an invoice, dispute a duplicate, keep a buffer, report.

skill: Multi-Step Workflows
hint: Resolve account IDs first and keep a running balance for checking and savings after every step, because later steps depend on earlier results. Money amounts are exact to the cent. Re-read balances before computing a shortfall or filing the report.
difficulty: 1-3
turns: multi
"""
import json
import random


def _call(name, /, **arguments):
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


OWNERS = ["Ines Marlow", "Kofi Asante", "Mirela Popa", "Dev Sharma", "Hanna Oja", "Tomas Reyes"]
VENDORS = ["Bright Office Supply", "Northwind Cleaning", "Kestrel IT Services", "Oakline Printing"]
MERCHANTS = ["Cafe Lumen", "RailPass", "FreshMart", "CloudBox", "Petro 24", "Bookly", "GymCo"]


def _usd(cents):
    return "%.2f" % (cents / 100)


class BankLedgerEnv(ToolUseBaseEnv):
    STEPS = {1: ["move", "invoice", "report"], 2: ["move", "invoice", "buffer", "report"],
             3: ["move", "invoice", "dispute", "buffer", "report"]}

    def __init__(self, max_turns=20, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.difficulty = difficulty
        super().__init__(max_turns=max_turns)

    def reset(self, seed=None):
        self._rng = rng = random.Random(seed)
        self.turn_count, self._call_history, self._current_msg = 0, [], 0
        d = self.difficulty
        owner, vendor = rng.choice(OWNERS), rng.choice(VENDORS)
        ids = iter("AC-%04d" % n for n in rng.sample(range(1000, 9999), 6))
        accounts = {}
        for who, kind, lo, hi in [(owner, "checking", 250000, 450000), (owner, "savings", 500000, 2000000),
                                  (owner, "business checking", 100000, 900000), (vendor, "merchant", 0, 50000)]:
            if kind == "business checking" and d < 3:
                continue  # d3 adds a look-alike account
            accounts[next(ids)] = {"owner": who, "type": kind, "balance": rng.randint(lo, hi)}
        chk, sav = list(accounts)[:2]
        vend = list(accounts)[-1]
        txns, day = {}, 1
        for tid in rng.sample(range(10000, 49999), 8):  # card history on checking (informational)
            day += rng.randint(0, 2)
            txns["TX-%d" % tid] = {"txn_id": "TX-%d" % tid, "account": chk, "date": "2025-05-%02d" % day,
                                   "amount": -rng.randint(300, 9000), "counterparty": rng.choice(MERCHANTS), "status": "posted"}
        order = sorted(txns)
        first, later = txns[order[2]], txns[order[5]]  # make a duplicate pair: same merchant, amount and day
        later.update(amount=first["amount"], counterparty=first["counterparty"], date=first["date"])
        if d < 3:
            later["amount"] -= 111  # no duplicate below d3
        dup_later = max((first, later), key=lambda t: t["txn_id"])["txn_id"]
        invoice = {"invoice_id": "INV-%d" % rng.randint(1000, 9999), "vendor": vendor, "pay_to": vend,
                   "amount": rng.randint(30000, 120000)}
        move = rng.randint(200, 900) * 100 + rng.choice((0, 25, 50, 75))
        self._state = {"owner": owner, "accounts": accounts, "txns": txns, "invoice": invoice, "transfers": [],
                       "report": None, "next_txn": 50000, "chk": chk, "sav": sav, "move": move, "dup": dup_later}
        # simulate the intended day to fix the buffer minimum so that a shortfall always exists
        bal = {a: v["balance"] for a, v in accounts.items()}
        bal[chk] -= move + invoice["amount"]
        bal[sav] += move
        if d == 3:
            bal[chk] -= txns[dup_later]["amount"]  # the dispute credits the duplicate back
        minimum = bal[chk] + rng.randint(50, 400) * 100 + rng.randint(0, 99)
        self._state.update(minimum=minimum, shortfall=minimum - bal[chk])
        text = {
            "move": (f"Move ${_usd(move)} from {owner}'s personal checking account to their savings account.",
                     lambda s: any(t["from"] == chk and t["to"] == sav and t["amount"] == move for t in s["transfers"])),
            "invoice": (f"Pay invoice {invoice['invoice_id']} in full from the personal checking account, with the "
                        "invoice ID in the memo.",
                        lambda s: any(t["from"] == chk and t["to"] == vend and t["amount"] == invoice["amount"]
                                      and invoice["invoice_id"].lower() in t["memo"].lower() for t in s["transfers"])),
            "dispute": ("A card charge on the personal checking account was duplicated (same merchant, amount and date). "
                        "Dispute the later of the two (the higher transaction ID).",
                        lambda s: s["txns"][dup_later]["status"] == "disputed" and sum(
                            t["status"] == "disputed" for t in s["txns"].values()) == 1),
            "buffer": (f"Personal checking must hold at least ${_usd(minimum)}. Top it up from savings by exactly the "
                       "shortfall.", lambda s: s["accounts"][chk]["balance"] == minimum),
            "report": ("File the end-of-day report with the current personal checking and savings balances.",
                       lambda s: s["report"] == (s["accounts"][chk]["balance"], s["accounts"][sav]["balance"])),
        }
        self._user_messages = [text[k][0] for k in self.STEPS[d]]
        self._message_criteria = [text[k][1] for k in self.STEPS[d]]
        self._expected_answer = "done"
        s_, n_ = {"type": "string"}, {"type": "number"}

        def spec(desc, req, **props):
            return {"description": desc, "parameters": {"type": "object", "properties": props, "required": req}}
        self._tools = {
            "list_accounts": spec("Accounts of an owner (id, type, balance).", ["owner"], owner=s_),
            "get_balance": spec("Current balance of an account.", ["account_id"], account_id=s_),
            "get_transactions": spec("Transactions of an account, newest first.", ["account_id"], account_id=s_),
            "get_invoice": spec("Invoice details: vendor, amount, pay_to account.", ["invoice_id"], invoice_id=s_),
            "transfer": spec("Move money between accounts (fails on insufficient funds).", ["from_account", "to_account", "amount"],
                             from_account=s_, to_account=s_, amount=n_, memo=s_),
            "dispute_transaction": spec("Dispute a card charge; its amount is credited back provisionally.",
                                        ["transaction_id"], transaction_id=s_),
            "submit_report": spec("File the end-of-day report.", ["checking_balance", "savings_balance"],
                                  checking_balance=n_, savings_balance=n_),
        }
        obs = ("You are a bank back-office assistant. Amounts are in USD with cents.\nTools: " + ", ".join(
               f"{n}({', '.join(t['parameters']['properties'])})" for n, t in self._tools.items()) + ".\n"
               'Call tools like <tool_call>{"name": "list_accounts", "arguments": {"owner": "Jane Doe"}}</tool_call> '
               "(several per reply allowed). Instructions come one at a time; the next appears in a tool result once the "
               f"current one is satisfied. When told all are complete, reply <answer>done</answer>. You have "
               f"{self.max_turns} replies.\n\n[Instruction 1] {self._user_messages[0]}")
        return obs, {}

    def _acct(self, account_id):
        if account_id not in self._state["accounts"]:
            raise ValueError(f"unknown account '{account_id}'")
        return self._state["accounts"][account_id]

    def _post(self, account, amount, counterparty):
        tid = "TX-%d" % self._state["next_txn"]
        self._state["next_txn"] += 1
        self._state["txns"][tid] = {"txn_id": tid, "account": account, "date": "2025-05-31", "amount": amount,
                                    "counterparty": counterparty, "status": "posted"}

    def tool_list_accounts(self, owner):
        rows = [{"account_id": a, "type": v["type"], "balance": _usd(v["balance"])}
                for a, v in self._state["accounts"].items() if v["owner"].lower() == str(owner).strip().lower()]
        return (json.dumps(rows) if rows else f"No accounts for '{owner}'.") + self._advance_if_done()

    def tool_get_balance(self, account_id):
        return json.dumps({"account_id": account_id, "balance": _usd(self._acct(account_id)["balance"])}) + self._advance_if_done()

    def tool_get_transactions(self, account_id):
        self._acct(account_id)
        rows = sorted((dict(t, amount=_usd(t["amount"])) for t in self._state["txns"].values() if t["account"] == account_id),
                      key=lambda t: (t["date"], t["txn_id"]), reverse=True)
        return json.dumps(rows) + self._advance_if_done()

    def tool_get_invoice(self, invoice_id):
        inv = self._state["invoice"]
        if str(invoice_id).strip().upper() != inv["invoice_id"]:
            return f"No invoice '{invoice_id}'." + self._advance_if_done()
        return json.dumps(dict(inv, amount=_usd(inv["amount"]))) + self._advance_if_done()

    def tool_transfer(self, from_account, to_account, amount, memo=""):
        src, dst, cents = self._acct(from_account), self._acct(to_account), round(float(amount) * 100)
        if from_account == to_account or cents <= 0:
            return "Error: need two different accounts and a positive amount." + self._advance_if_done()
        if src["balance"] < cents:
            return f"Error: insufficient funds in {from_account} (balance {_usd(src['balance'])})." + self._advance_if_done()
        src["balance"] -= cents
        dst["balance"] += cents
        self._state["transfers"].append({"from": from_account, "to": to_account, "amount": cents, "memo": str(memo)})
        self._post(from_account, -cents, to_account)
        self._post(to_account, cents, from_account)
        return (f"Transferred ${_usd(cents)} {from_account} -> {to_account}. New balance of {from_account}: "
                f"{_usd(src['balance'])}." + self._advance_if_done())

    def tool_dispute_transaction(self, transaction_id):
        t = self._state["txns"].get(transaction_id)
        if t is None or t["amount"] >= 0 or t["status"] != "posted":
            return "Error: only posted card charges can be disputed." + self._advance_if_done()
        t["status"] = "disputed"
        self._acct(t["account"])["balance"] -= t["amount"]
        return f"Disputed {transaction_id}; ${_usd(-t['amount'])} credited provisionally." + self._advance_if_done()

    def tool_submit_report(self, checking_balance, savings_balance):
        self._state["report"] = (round(float(checking_balance) * 100), round(float(savings_balance) * 100))
        return "Report filed." + self._advance_if_done()

    def solution(self):
        s = self._state
        chk, sav, inv = s["chk"], s["sav"], s["invoice"]
        final = {a: v["balance"] for a, v in s["accounts"].items()}
        plan = {
            "move": [_call("transfer", from_account=chk, to_account=sav, amount=s["move"] / 100, memo="to savings")],
            "invoice": [_call("get_invoice", invoice_id=inv["invoice_id"]),
                        _call("transfer", from_account=chk, to_account=inv["pay_to"], amount=inv["amount"] / 100,
                              memo=inv["invoice_id"])],
            "dispute": [_call("get_transactions", account_id=chk), _call("dispute_transaction", transaction_id=s["dup"])],
            "buffer": [_call("get_balance", account_id=chk),
                       _call("transfer", from_account=sav, to_account=chk, amount=s["shortfall"] / 100, memo="buffer")],
        }
        replies = [_call("list_accounts", owner=s["owner"])]
        for step in self.STEPS[self.difficulty][:-1]:
            replies += plan[step]
        # final balances, as tracked along the way
        final[chk] -= s["move"] + inv["amount"]
        final[sav] += s["move"]
        if self.difficulty == 3:
            final[chk] -= s["txns"][s["dup"]]["amount"]
        if self.difficulty >= 2:
            final[chk] += s["shortfall"]
            final[sav] -= s["shortfall"]
        replies.append(_call("get_balance", account_id=chk) + _call("get_balance", account_id=sav))
        replies.append(_call("submit_report", checking_balance=final[chk] / 100, savings_balance=final[sav] / 100))
        return replies + ["<answer>done</answer>"]
