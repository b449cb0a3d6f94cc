"""Price an order in a foreign currency by picking the right tools out of a look-alike toolbox.

skill: Tool Selection
hint: Read every tool description before calling: several tools sound alike but answer a different question (past vs today's rates, national VAT estimate vs regional sales tax, length vs mass). Follow the stated order of operations exactly, since each tool rounds its result.
difficulty: 1-3
turns: single
"""
import json
import math
import random


def _call(name, /, **arguments):
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


PRODUCTS = ["trail camera", "espresso grinder", "drafting table", "rowing machine", "kiln shelf", "sewing machine",
            "telescope mount", "cast-iron skillet", "weather station", "label printer"]
CURRENCIES = ["EUR", "GBP", "JPY", "CHF", "CAD", "USD"]
USD_VALUE = {"EUR": 1.08, "GBP": 1.27, "JPY": 0.0067, "CHF": 1.12, "CAD": 0.73, "USD": 1.0}  # rough anchors
REGIONS = ["Northfold", "Easterby", "Marrow Coast", "Lindvale", "Pike Reach", "Sunder Bay"]
MASS = {"g": 0.001, "kg": 1.0, "lb": 0.45359237, "oz": 0.028349523125}
LENGTH = {"mm": 0.001, "cm": 0.01, "m": 1.0, "in": 0.0254, "ft": 0.3048}


class PriceToolboxEnv(ToolUseBaseEnv):
    def __init__(self, max_turns=20, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.difficulty = difficulty
        super().__init__(max_turns=max_turns)

    def reset(self, seed=None):
        self._rng = rng = random.Random(seed)
        self.turn_count, self._call_history, self._current_msg = 0, [], 0
        # today's and historical USD values per currency: hidden, seed-specific
        today = {c: (1.0 if c == "USD" else round(v * rng.uniform(0.85, 1.15), 6)) for c, v in USD_VALUE.items()}
        past = {c: (1.0 if c == "USD" else round(v * rng.uniform(0.7, 0.95), 6)) for c, v in USD_VALUE.items()}
        products = {}
        for name in PRODUCTS:
            cur = rng.choice(CURRENCIES[:5])
            unit = rng.choice(["lb", "oz", "g"])
            usd = rng.uniform(40, 600)
            products[name] = {"product": name, "price": round(usd / today[cur], 0 if cur == "JPY" else 2), "currency": cur,
                              "weight": round(rng.uniform(1.5, 30) / MASS[unit], 1), "weight_unit": unit}
        product = rng.choice(PRODUCTS)
        qty, region = rng.randint(2, 9), rng.choice(REGIONS)
        target = rng.choice([c for c in CURRENCIES if c != products[product]["currency"]])
        self._state = {"today": today, "past": past, "products": products, "product": product, "qty": qty,
                       "region": region, "target": target,
                       "tax": {r: round(rng.uniform(0.04, 0.11), 4) for r in REGIONS},
                       "ship": {r: (round(rng.uniform(6, 15), 2), round(rng.uniform(1.1, 3.9), 2)) for r in REGIONS}}
        self._plan = self._compute()
        self._expected_answer = "%.2f" % self._plan[-1]
        num, txt = {"type": "number"}, {"type": "string"}

        def spec(desc, **props):
            return {"description": desc, "parameters": {"type": "object", "properties": props, "required": list(props)}}
        self._tools = {
            "lookup_product": spec("Catalog entry: unit price in its listing currency, unit weight and weight unit.", name=txt),
            "convert_currency": spec("Convert an amount at TODAY's exchange rate (rounded to cents).",
                                     amount=num, from_currency=txt, to_currency=txt),
            "historical_rate": spec("Exchange rate on a PAST date (YYYY-MM-DD); for accounting of old invoices.",
                                    date=txt, from_currency=txt, to_currency=txt),
            "convert_mass": spec("Convert a mass between g, kg, lb, oz (3 decimals).", value=num, from_unit=txt, to_unit=txt),
            "convert_length": spec("Convert a length between mm, cm, m, in, ft.", value=num, from_unit=txt, to_unit=txt),
            "sales_tax": spec("Regional sales tax owed on an amount for a delivery region (rounded to cents, same "
                              "currency as the amount).", region=txt, amount=num),
            "vat_estimate": spec("Rough national VAT estimate for EU countries (not regional sales tax).", country=txt, amount=num),
            "shipping_quote": spec("Shipping cost in USD to a region for a total weight in kg (billed per started kg).",
                                   region=txt, weight_kg=num),
        }
        d, p = self.difficulty, self._state
        steps = [f"the subtotal for {qty} units of the '{product}' in its listing currency"]
        if d >= 2:
            steps.append(f"add the {region} sales tax computed on that subtotal, then convert the sum to {target} at today's rate")
        else:
            steps.append(f"convert it to {target} at today's rate")
        if d == 3:
            conv = "" if target == "USD" else f", converted from USD to {target} at today's rate"
            steps.append(f"add shipping to {region} for the total weight of the {qty} units in kg{conv}")
        tools = "\n".join(f"- {n}({', '.join(t['parameters']['properties'])}): {t['description']}" for n, t in self._tools.items())
        obs = (f"A customer in {region} asks what their order costs in {target}. Compute: " + "; ".join(steps) + ".\n"
               f"Tools:\n{tools}\n"
               'Call tools like <tool_call>{"name": "lookup_product", "arguments": {"name": "label printer"}}</tool_call> '
               "(several per reply allowed). Exchange rates, tax rates and shipping tariffs are only known to the tools. "
               f"Finish with e.g. <answer>123.45</answer>. You have {self.max_turns} replies. Success: the exact amount "
               "to the cent.")
        return obs, {}

    def _compute(self):
        """The intended chain of tool results; the last element is the answer."""
        p = self._state
        item = p["products"][p["product"]]
        subtotal = round(item["price"] * p["qty"], 2)
        tax = self._tax(p["region"], subtotal) if self.difficulty >= 2 else 0.0
        goods = self._convert(subtotal + tax, item["currency"], p["target"])
        kg = round(item["weight"] * p["qty"] * MASS[item["weight_unit"]], 3)
        ship_usd = self._ship(p["region"], kg)
        ship = ship_usd if p["target"] == "USD" else self._convert(ship_usd, "USD", p["target"])
        total = goods + ship if self.difficulty == 3 else goods
        return [subtotal, tax, kg, ship_usd, round(total, 2)]

    def _convert(self, amount, a, b):
        return round(amount * self._state["today"][a] / self._state["today"][b], 2)

    def _tax(self, region, amount):
        return round(amount * self._state["tax"][region], 2)

    def _ship(self, region, kg):
        base, per_kg = self._state["ship"][region]
        return round(base + per_kg * math.ceil(kg - 1e-9), 2)

    @staticmethod
    def _need(value, allowed, what):
        v = str(value).strip()
        match = [a for a in allowed if a.lower() == v.lower()]
        if not match:
            raise ValueError(f"unknown {what} '{value}'; expected one of {', '.join(allowed)}")
        return match[0]

    def tool_lookup_product(self, name):
        key = self._need(name, PRODUCTS, "product")
        return json.dumps(self._state["products"][key])

    def tool_convert_currency(self, amount, from_currency, to_currency):
        a, b = self._need(from_currency, CURRENCIES, "currency"), self._need(to_currency, CURRENCIES, "currency")
        return json.dumps({"amount": float(amount), "from": a, "to": b, "result": self._convert(float(amount), a, b)})

    def tool_historical_rate(self, date, from_currency, to_currency):
        a, b = self._need(from_currency, CURRENCIES, "currency"), self._need(to_currency, CURRENCIES, "currency")
        past = self._state["past"]
        return json.dumps({"date": str(date), "from": a, "to": b, "rate": round(past[a] / past[b], 6)})

    def tool_convert_mass(self, value, from_unit, to_unit):
        a, b = self._need(from_unit, list(MASS), "mass unit"), self._need(to_unit, list(MASS), "mass unit")
        return json.dumps({"result": round(float(value) * MASS[a] / MASS[b], 3), "unit": b})

    def tool_convert_length(self, value, from_unit, to_unit):
        a, b = self._need(from_unit, list(LENGTH), "length unit"), self._need(to_unit, list(LENGTH), "length unit")
        return json.dumps({"result": round(float(value) * LENGTH[a] / LENGTH[b], 3), "unit": b})

    def tool_sales_tax(self, region, amount):
        r = self._need(region, REGIONS, "region")
        return json.dumps({"region": r, "amount": float(amount), "tax": self._tax(r, float(amount))})

    def tool_vat_estimate(self, country, amount):
        return json.dumps({"country": str(country), "vat_estimate": round(float(amount) * 0.2, 2)})

    def tool_shipping_quote(self, region, weight_kg):
        r = self._need(region, REGIONS, "region")
        if not 0 < float(weight_kg) <= 1000:
            raise ValueError("weight_kg must be in (0, 1000]")
        return json.dumps({"region": r, "weight_kg": float(weight_kg), "usd": self._ship(r, float(weight_kg))})

    def solution(self):
        p, d = self._state, self.difficulty
        item = p["products"][p["product"]]
        subtotal, tax, kg, ship_usd, _ = self._plan
        replies = [_call("lookup_product", name=p["product"])]
        if d >= 2:
            replies.append(_call("sales_tax", region=p["region"], amount=subtotal))
        goods = _call("convert_currency", amount=round(subtotal + tax, 2), from_currency=item["currency"], to_currency=p["target"])
        if d == 3:
            replies.append(goods + _call("convert_mass", value=round(item["weight"] * p["qty"], 3),
                                         from_unit=item["weight_unit"], to_unit="kg"))
            replies.append(_call("shipping_quote", region=p["region"], weight_kg=kg))
            if p["target"] != "USD":
                replies.append(_call("convert_currency", amount=ship_usd, from_currency="USD", to_currency=p["target"]))
        else:
            replies.append(goods)
        return replies + [f"<answer>{self._expected_answer}</answer>"]
