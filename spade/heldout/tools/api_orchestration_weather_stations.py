"""Chain geocoding, station search, station metadata and readings APIs to report a town's mean daily high.

skill: API Orchestration
hint: Disambiguate the place by region, then walk the nearest stations in distance order and use the first one whose metadata says it is active. Readings come in the station's own unit: take each day's maximum, convert to Fahrenheit if needed, then average.
difficulty: 1-3
turns: single
"""
import datetime
import json
import math
import random


def _call(name, /, **arguments):
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


TOWNS = ["Millbrook", "Ashford", "Clearwater", "Fairview", "Riverton", "Oakdale", "Springvale", "Kingsport"]
REGIONS = ["North Coast", "High Plains", "Lake District", "Red Valley", "East Hills"]


def _km(a, b):
    """Haversine distance between (lat, lon) pairs."""
    la1, lo1, la2, lo2 = map(math.radians, (a[0], a[1], b[0], b[1]))
    h = math.sin((la2 - la1) / 2) ** 2 + math.cos(la1) * math.cos(la2) * math.sin((lo2 - lo1) / 2) ** 2
    return 2 * 6371 * math.asin(math.sqrt(h))


class WeatherStationsEnv(ToolUseBaseEnv):
    DAYS = {1: 2, 2: 3, 3: 4}
    INACTIVE_NEAREST = {1: 0, 2: 1, 3: 2}  # how many of the closest stations are out of service

    def __init__(self, max_turns=20, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.difficulty = difficulty
        super().__init__(max_turns=max_turns)

    def reset(self, seed=None):
        self._rng = rng = random.Random(seed)
        self.turn_count, self._call_history, self._current_msg = 0, [], 0
        d = self.difficulty
        town = rng.choice(TOWNS)
        regions = rng.sample(REGIONS, 2 if d == 3 else 1)  # d3: two towns share the name
        places = [{"name": town, "region": r, "lat": round(rng.uniform(30, 55), 4), "lon": round(rng.uniform(-120, -70), 4)}
                  for r in regions]
        target = places[0]
        stations = {}
        for place in places:
            ids = rng.sample(range(1000, 9999), 6)
            for k, sid in enumerate(ids):
                r = 3 + 9 * k + rng.uniform(0, 8)  # increasing distance rings: a unique order
                ang = rng.uniform(0, 2 * math.pi)
                pos = (round(place["lat"] + r / 111 * math.cos(ang), 4), round(place["lon"] + r / 85 * math.sin(ang), 4))
                stations["WX-%d" % sid] = {"station_id": "WX-%d" % sid, "lat": pos[0], "lon": pos[1],
                                           "status": "active", "unit": rng.choice("CF") if d >= 2 else "F",
                                           "elevation_m": rng.randint(5, 1600)}
        ranked = sorted((s for s in stations.values()), key=lambda s: _km((target["lat"], target["lon"]), (s["lat"], s["lon"])))
        for s in ranked[:self.INACTIVE_NEAREST[d]]:
            s["status"] = rng.choice(["decommissioned", "under maintenance"])
        chosen = ranked[self.INACTIVE_NEAREST[d]]
        if d == 3:
            chosen["unit"] = "C"
        start = datetime.date(2024, 1, 1) + datetime.timedelta(days=rng.randint(120, 240))
        dates = [(start + datetime.timedelta(days=i)).isoformat() for i in range(self.DAYS[d])]
        self._state = {"town": town, "region": target["region"], "places": places, "stations": stations,
                       "chosen": chosen["station_id"], "dates": dates, "seed": rng.randint(0, 10 ** 9)}
        highs = [self._high_f(chosen["station_id"], day) for day in dates]
        self._expected_answer = "%.2f" % (sum(highs) / len(highs))
        s_, n_ = {"type": "string"}, {"type": "number"}
        self._tools = {
            "geocode": {"description": "Places matching a name, with region and coordinates.",
                        "parameters": {"type": "object", "properties": {"place": s_}, "required": ["place"]}},
            "nearest_stations": {"description": "The 5 weather stations closest to a coordinate, nearest first.",
                                 "parameters": {"type": "object", "properties": {"lat": n_, "lon": n_}, "required": ["lat", "lon"]}},
            "station_info": {"description": "Station metadata: status, reporting unit, elevation.",
                             "parameters": {"type": "object", "properties": {"station_id": s_}, "required": ["station_id"]}},
            "get_readings": {"description": "Hourly temperatures of a station for one date (YYYY-MM-DD), in the station's unit.",
                             "parameters": {"type": "object", "properties": {"station_id": s_, "date": s_},
                                            "required": ["station_id", "date"]}},
        }
        obs = (f"Report the mean daily HIGH temperature in degrees Fahrenheit at {town} ({target['region']}) over "
               f"{', '.join(dates)}, using the nearest weather station that is currently ACTIVE. A day's high is the "
               "maximum hourly reading; F = C x 9/5 + 32. Round the mean to 2 decimals.\n"
               "Tools: geocode(place), nearest_stations(lat, lon), station_info(station_id), get_readings(station_id, date).\n"
               'Call tools like <tool_call>{"name": "geocode", "arguments": {"place": "Springfield"}}</tool_call> '
               "(several per reply allowed). Finish with e.g. <answer>71.35</answer>.\n"
               f"You have {self.max_turns} replies. Success: the mean within 0.01 degrees.")
        return obs, {}

    def _hourly(self, sid, day):
        """Deterministic hourly series (station unit, 1 decimal) derived from the episode seed."""
        rng = random.Random("%d/%s/%s" % (self._state["seed"], sid, day))
        peak, low = rng.uniform(62, 94), rng.uniform(8, 20)
        temps_f = [peak - low * (1 - math.cos((h - 15) * math.pi / 12)) / 2 + rng.uniform(-1.5, 1.5) for h in range(24)]
        unit = self._state["stations"][sid]["unit"]
        return [round((t - 32) * 5 / 9 if unit == "C" else t, 1) for t in temps_f]

    def _high_f(self, sid, day):
        high = max(self._hourly(sid, day))
        return high * 9 / 5 + 32 if self._state["stations"][sid]["unit"] == "C" else high

    def tool_geocode(self, place):
        q = str(place).split(",")[0].strip().lower()
        hits = [p for p in self._state["places"] if p["name"].lower() == q]
        return json.dumps(hits) if hits else f"404: no place named '{place}'."

    def tool_nearest_stations(self, lat, lon):
        here = (float(lat), float(lon))
        rows = sorted(({"station_id": s["station_id"], "distance_km": round(_km(here, (s["lat"], s["lon"])), 1)}
                       for s in self._state["stations"].values()), key=lambda r: r["distance_km"])
        return json.dumps(rows[:5])

    def tool_station_info(self, station_id):
        s = self._state["stations"].get(str(station_id).strip().upper())
        return f"404: unknown station '{station_id}'." if s is None else json.dumps(s)

    def tool_get_readings(self, station_id, date):
        sid = str(station_id).strip().upper()
        s = self._state["stations"].get(sid)
        if s is None:
            return f"404: unknown station '{station_id}'."
        if s["status"] != "active":
            return f"503: station {sid} is {s['status']}; no current data."
        if date not in self._state["dates"]:
            return f"404: no archive for {date} (available: {', '.join(self._state['dates'])})."
        return json.dumps({"station_id": sid, "date": date, "unit": s["unit"], "hourly": self._hourly(sid, date)})

    def solution(self):
        st = self._state
        target = st["places"][0]
        here = (target["lat"], target["lon"])
        near = sorted(st["stations"].values(), key=lambda s: _km(here, (s["lat"], s["lon"])))
        checked = near[:near.index(st["stations"][st["chosen"]]) + 1]
        return [_call("geocode", place=st["town"]),
                _call("nearest_stations", lat=target["lat"], lon=target["lon"]),
                "".join(_call("station_info", station_id=s["station_id"]) for s in checked),
                "".join(_call("get_readings", station_id=st["chosen"], date=day) for day in st["dates"]),
                f"<answer>{self._expected_answer}</answer>"]
