"""Book a business trip step by step: traveller lookup, flight, hotel, airport transfer, loyalty number.

skill: API Orchestration
hint: Carry identifiers forward: the traveller ID goes into every booking, the flight's ARRIVAL date (not departure) is the hotel check-in, and booking confirmation codes feed the transfer and loyalty calls. Apply every stated filter before taking the cheapest.
difficulty: 1-3
turns: multi
"""
import datetime
import json
import random


def _call(name, /, **arguments):
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


CITIES = {"LIS": "Lisbon", "OSL": "Oslo", "YUL": "Montreal", "NBO": "Nairobi", "SCL": "Santiago", "HAN": "Hanoi",
          "AKL": "Auckland", "CPH": "Copenhagen"}
PEOPLE = ["Ada Quist", "Bruno Vale", "Chen Liu", "Dara Okafor", "Elin Berg", "Farid Haddad", "Gita Rao"]
HOTEL_WORDS = ["Harbor", "Grand", "Garden", "Central", "Park", "River", "Summit", "Plaza", "Atlas", "Oak"]


def _fmt(moment):  # "YYYY-MM-DD HH:MM" (no strftime/strptime: the sandbox lacks _strptime)
    return moment.isoformat(sep=" ", timespec="minutes")


def _obj(props):
    return {"type": "object", "properties": {k: {"type": t} for k, t in props.items()}, "required": list(props)}


class TripBookingEnv(ToolUseBaseEnv):
    OPTIONS = {1: 4, 2: 6, 3: 8}  # flights and hotels offered per search

    def __init__(self, max_turns=20, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.difficulty = difficulty
        super().__init__(max_turns=max_turns)

    def reset(self, seed=None):
        self._rng = rng = random.Random(seed)
        self.turn_count, self._call_history, self._current_msg = 0, [], 0
        d, n = self.difficulty, self.OPTIONS[self.difficulty]
        origin, dest = rng.sample(sorted(CITIES), 2)
        day = datetime.date(2025, 1, 1) + datetime.timedelta(days=rng.randint(0, 330))
        names = rng.sample(PEOPLE, 3)
        travellers = {nm: {"traveller_id": "TRV-%04d" % rng.randint(1000, 9999),
                           "loyalty_number": "LY%06d" % rng.randint(0, 999999)} for nm in names}
        flights = {}
        for price, num in zip(rng.sample(range(180, 900, 7), n), rng.sample(range(100, 1000), n)):
            dep = datetime.datetime.combine(day, datetime.time(rng.randint(6, 23), rng.choice((0, 15, 30, 45))))
            stops = rng.choice((0, 1)) if d >= 2 else 0  # d>=2: cheaper one-stop decoys appear
            arr = dep + datetime.timedelta(minutes=rng.randint(120, 540) + 150 * stops)
            fid = "%s%d" % (rng.choice(["TP", "SK", "AC", "KQ", "LA"]), num)
            flights[fid] = {"flight_id": fid, "depart": _fmt(dep),
                            "arrive": _fmt(arr), "stops": stops, "price_usd": price}
        direct = [f for f in flights.values() if f["stops"] == 0]
        if not direct:  # guarantee one non-stop flight
            direct = [next(iter(flights.values()))]
            direct[0]["stops"] = 0
        best = min(direct, key=lambda f: f["price_usd"])
        if d == 3:  # the cheapest non-stop is a red-eye: check-in is the day after departure
            dep = datetime.datetime.fromisoformat(best["depart"]).replace(hour=22, minute=50)
            best["depart"] = _fmt(dep)
            best["arrive"] = _fmt(dep + datetime.timedelta(minutes=rng.randint(200, 480)))
        min_rating, nights = rng.choice((3.5, 4.0, 4.5)), rng.randint(2, 5)
        hotels = {}
        for i, (price, num) in enumerate(zip(rng.sample(range(70, 400, 3), n), rng.sample(range(100, 1000), n))):
            hid = "HTL-%03d" % num
            hotels[hid] = {"hotel_id": hid, "name": "%s %s Hotel" % (rng.choice(HOTEL_WORDS), CITIES[dest]),
                           "rating": 5.0 if i == 0 else rng.choice((2.5, 3.0, 3.5, 4.0, 4.5, 5.0)), "nightly_usd": price}
        best_hotel = min((h for h in hotels.values() if h["rating"] >= min_rating), key=lambda h: h["nightly_usd"])
        traveller = names[0]
        self._state = {"origin": origin, "dest": dest, "day": day.isoformat(), "travellers": travellers,
                       "traveller": traveller, "flights": flights, "best_flight": best["flight_id"],
                       "hotels": hotels, "best_hotel": best_hotel["hotel_id"], "nights": nights,
                       "checkin": best["arrive"][:10], "bookings": {},
                       "codes": ["CNF-%05d" % c for c in rng.sample(range(10000, 99999), 40)]}
        tid = travellers[traveller]["traveller_id"]
        self._user_messages = [
            f"Look up traveller {traveller} and book the cheapest NON-STOP flight from {CITIES[origin]} ({origin}) "
            f"to {CITIES[dest]} ({dest}) departing {day.isoformat()}.",
            f"Book the cheapest hotel in {CITIES[dest]} rated at least {min_rating} stars for {nights} nights, "
            "checking in on the date the flight ARRIVES.",
            "Book an airport transfer that links the flight booking to the hotel booking.",
        ]
        self._message_criteria = [self._flight_ok, self._hotel_ok, self._transfer_ok]
        if d == 3:
            self._user_messages.append("Attach the traveller's loyalty number to the flight booking.")
            self._message_criteria.append(
                lambda s: any(b.get("loyalty") == s["travellers"][s["traveller"]]["loyalty_number"]
                              for b in self._active("flight") if b["item"] == s["best_flight"]))
        self._expected_answer = "done"
        self._tools = {
            "lookup_traveller": {"description": "Find a traveller by full name.", "parameters": _obj({"name": "string"})},
            "search_flights": {"description": "Flights for a route (IATA codes) and departure date YYYY-MM-DD.",
                               "parameters": _obj({"origin": "string", "destination": "string", "date": "string"})},
            "book_flight": {"description": "Book a flight; returns a confirmation code.",
                            "parameters": _obj({"flight_id": "string", "traveller_id": "string"})},
            "search_hotels": {"description": "Hotels in a city for a check-in date and number of nights.",
                              "parameters": _obj({"city": "string", "checkin": "string", "nights": "integer"})},
            "book_hotel": {"description": "Book a hotel; returns a confirmation code.",
                           "parameters": _obj({"hotel_id": "string", "traveller_id": "string",
                                               "checkin": "string", "nights": "integer"})},
            "book_transfer": {"description": "Airport-to-hotel transfer from a flight and a hotel confirmation.",
                              "parameters": _obj({"flight_confirmation": "string", "hotel_confirmation": "string"})},
            "add_loyalty": {"description": "Attach a loyalty number to a flight booking.",
                            "parameters": _obj({"confirmation": "string", "loyalty_number": "string"})},
            "cancel_booking": {"description": "Cancel a booking by confirmation code.",
                               "parameters": _obj({"confirmation": "string"})},
        }
        obs = ("You are a travel-booking agent with API tools: " + ", ".join(
               f"{k}({', '.join(v['parameters']['properties'])})" for k, v in self._tools.items()) + ".\n"
               'Call tools like <tool_call>{"name": "lookup_traveller", "arguments": {"name": "Jane Doe"}}</tool_call> '
               "(several per reply allowed). Instructions arrive one at a time; the next appears in a tool result "
               "once the current one is satisfied. Wrong bookings can be cancelled. When told all instructions are "
               f"complete, reply <answer>done</answer>. You have {self.max_turns} replies.\n\n"
               f"[Instruction 1] {self._user_messages[0]}")
        return obs, {}

    def _active(self, kind):
        return [b for b in self._state["bookings"].values() if b["type"] == kind and b["status"] == "active"]

    def _flight_ok(self, s):
        f = self._active("flight")
        tid = s["travellers"][s["traveller"]]["traveller_id"]
        return len(f) == 1 and f[0]["item"] == s["best_flight"] and f[0]["traveller"] == tid

    def _hotel_ok(self, s):
        h = self._active("hotel")
        return (len(h) == 1 and h[0]["item"] == s["best_hotel"] and h[0]["checkin"] == s["checkin"]
                and h[0]["nights"] == s["nights"] and h[0]["traveller"] == s["travellers"][s["traveller"]]["traveller_id"])

    def _transfer_ok(self, s):
        f, h = self._active("flight"), self._active("hotel")
        return bool(f and h) and any(t["flight"] == f[0]["code"] and t["hotel"] == h[0]["code"]
                                     for t in self._active("transfer"))

    def _book(self, kind, **record):
        s = self._state
        if len(s["bookings"]) >= len(s["codes"]):
            return "429: booking limit reached."
        code = s["codes"][len(s["bookings"])]
        s["bookings"][code] = dict(type=kind, code=code, status="active", **record)
        return f"Booked {kind}: confirmation {code}." + self._advance_if_done()

    def _tid_ok(self, traveller_id):
        return any(t["traveller_id"] == traveller_id for t in self._state["travellers"].values())

    # ---- tools ---------------------------------------------------------------------------------
    def tool_lookup_traveller(self, name):
        matches = [dict(name=nm, **t) for nm, t in self._state["travellers"].items()
                   if str(name).strip().lower() in nm.lower()]
        return (json.dumps(matches) if matches else f"No traveller matching '{name}'.") + self._advance_if_done()

    def tool_search_flights(self, origin, destination, date):
        s = self._state
        if (str(origin).upper(), str(destination).upper(), str(date)) != (s["origin"], s["dest"], s["day"]):
            return f"No flights found for {origin}->{destination} on {date}." + self._advance_if_done()
        return json.dumps(sorted(s["flights"].values(), key=lambda f: f["depart"])) + self._advance_if_done()

    def tool_book_flight(self, flight_id, traveller_id):
        if flight_id not in self._state["flights"]:
            return f"400: unknown flight '{flight_id}'." + self._advance_if_done()
        if not self._tid_ok(traveller_id):
            return f"400: unknown traveller_id '{traveller_id}'." + self._advance_if_done()
        return self._book("flight", item=flight_id, traveller=traveller_id, loyalty=None)

    def tool_search_hotels(self, city, checkin, nights):
        if str(city).strip().lower() not in (self._state["dest"].lower(), CITIES[self._state["dest"]].lower()):
            return f"No hotel inventory for '{city}'." + self._advance_if_done()
        datetime.date.fromisoformat(str(checkin))  # raises on a malformed date
        rows = [dict(h, total_usd=h["nightly_usd"] * int(nights)) for h in self._state["hotels"].values()]
        return json.dumps(sorted(rows, key=lambda h: h["hotel_id"])) + self._advance_if_done()

    def tool_book_hotel(self, hotel_id, traveller_id, checkin, nights):
        if hotel_id not in self._state["hotels"] or not self._tid_ok(traveller_id):
            return "400: unknown hotel_id or traveller_id." + self._advance_if_done()
        datetime.date.fromisoformat(str(checkin))
        return self._book("hotel", item=hotel_id, traveller=traveller_id, checkin=str(checkin), nights=int(nights))

    def tool_book_transfer(self, flight_confirmation, hotel_confirmation):
        b = self._state["bookings"]
        f, h = b.get(flight_confirmation), b.get(hotel_confirmation)
        if not (f and f["type"] == "flight" and f["status"] == "active"):
            return "400: flight_confirmation is not an active flight booking." + self._advance_if_done()
        if not (h and h["type"] == "hotel" and h["status"] == "active"):
            return "400: hotel_confirmation is not an active hotel booking." + self._advance_if_done()
        return self._book("transfer", flight=flight_confirmation, hotel=hotel_confirmation)

    def tool_add_loyalty(self, confirmation, loyalty_number):
        b = self._state["bookings"].get(confirmation)
        if not (b and b["type"] == "flight" and b["status"] == "active"):
            return "400: not an active flight booking." + self._advance_if_done()
        b["loyalty"] = str(loyalty_number)
        return f"Loyalty number {loyalty_number} attached to {confirmation}." + self._advance_if_done()

    def tool_cancel_booking(self, confirmation):
        b = self._state["bookings"].get(confirmation)
        if not b or b["status"] != "active":
            return "404: no active booking with that code." + self._advance_if_done()
        b["status"] = "cancelled"
        return f"Cancelled {confirmation}." + self._advance_if_done()

    def solution(self):
        s = self._state
        t = s["travellers"][s["traveller"]]
        codes = s["codes"]  # bookings take codes in order: flight, hotel, transfer
        replies = [_call("lookup_traveller", name=s["traveller"]) +
                   _call("search_flights", origin=s["origin"], destination=s["dest"], date=s["day"]),
                   _call("book_flight", flight_id=s["best_flight"], traveller_id=t["traveller_id"]),
                   _call("search_hotels", city=CITIES[s["dest"]], checkin=s["checkin"], nights=s["nights"]),
                   _call("book_hotel", hotel_id=s["best_hotel"], traveller_id=t["traveller_id"],
                         checkin=s["checkin"], nights=s["nights"]),
                   _call("book_transfer", flight_confirmation=codes[0], hotel_confirmation=codes[1])]
        if self.difficulty == 3:
            replies.append(_call("add_loyalty", confirmation=codes[0], loyalty_number=t["loyalty_number"]))
        return replies + ["<answer>done</answer>"]
