#!/usr/bin/env python3
"""How well the days before forecast a ServeGen request-rate day, against the rate's level alone.

For every 2 minutes of a day (curve time) it forecasts the mean rate over the span a decision
judges (replay's --time-scale 0.125: 45 s to 105 s ahead of played time, 6 to 14 minutes of the
curve) in two ways, and reports each one's mean absolute relative error and bias against the
curve itself:
  level     the mean rate over the last 40 minutes of the curve (the snapshot's 5-minute level
            at 8x), and over the last 8 minutes (its shortest, 4 intervals of 15 s);
  seasonal  the 8-minute level times how the rate moved on the days before
            (controller/state/seasonal_forecast.h), from a window centred on the level's to the
            span ahead, both read `smoothing` wide, summed over up to 7 past days.
The curve is the truth here (no Poisson noise): this isolates the forecast from the fleet.

  hack/forecast-error.py [CURVE START_HOURS]...   default: the four days of hack/daily-results.sh
  hack/forecast-error.py /tmp/repeat.csv 240
"""
import bisect
import csv
import sys

DAY = 86400
JUDGED_FROM, HORIZON = 45 * 8, 105 * 8  # curve seconds
SHORT, LONG = 8 * 60, 40 * 60


def load(path):
    rows = list(csv.DictReader(open(path)))
    window = float(rows[1]["window_start_s"]) - float(rows[0]["window_start_s"])
    xs = [float(r["window_start_s"]) + window / 2 for r in rows]  # the rate at window centres
    ys = [float(r["aggregate_rate_rps"]) for r in rows]
    return xs, ys


def rate(curve, t):
    xs, ys = curve
    if t <= xs[0]:
        return ys[0]
    if t >= xs[-1]:
        return ys[-1]
    i = bisect.bisect_right(xs, t) - 1
    f = (t - xs[i]) / (xs[i + 1] - xs[i])
    return ys[i] + f * (ys[i + 1] - ys[i])


def mean(curve, a, b):
    n = max(1, int((b - a) / 60))
    return sum(rate(curve, a + (k + 0.5) * (b - a) / n) for k in range(n)) / n


def seasonal(curve, t, smoothing):
    num = den = 0.0
    for p in range(1, 8):
        tp = t - p * DAY
        if tp - SHORT / 2 - smoothing / 2 < 0:
            break
        den += mean(curve, tp - SHORT / 2 - smoothing / 2, tp - SHORT / 2 + smoothing / 2)
        centre = tp + (JUDGED_FROM + HORIZON) / 2
        half = max(smoothing, HORIZON - JUDGED_FROM) / 2
        num += mean(curve, centre - half, centre + half)
    return mean(curve, t - SHORT, t) * num / den if den > 0 else None


def main(args):
    cases = [(args[i], float(args[i + 1])) for i in range(0, len(args) - 1, 2)] or [
        ("tests/data/traces/servegen_language_m-large_aggregate_rate.csv", 240),
        ("tests/data/traces/servegen_language_m-large_aggregate_rate.csv", 48),
        ("tests/data/traces/servegen_language_m-mid_aggregate_rate.csv", 96),
        ("tests/data/traces/servegen_language_m-mid_aggregate_rate.csv", 24),
    ]
    print("%-48s %6s  %-15s %-15s %-15s %-15s" % ("day (curve, start)", "days", "level 40 min",
                                                   "level 8 min", "season 15 min", "season 60 min"))
    for path, start in cases:
        curve = load(path)
        s0 = int(start * 3600)
        sums = {}
        days = min(7, s0 // DAY)
        for t in range(s0, s0 + DAY, 120):
            truth = mean(curve, t + JUDGED_FROM, t + HORIZON)
            forecasts = {"long": mean(curve, t - LONG, t), "short": mean(curve, t - SHORT, t)}
            for sm in (900, 3600):
                forecasts[sm] = seasonal(curve, t, sm)
            for k, f in forecasts.items():
                if f is None:
                    continue
                e = sums.setdefault(k, [0.0, 0.0, 0])
                e[0] += abs(f / truth - 1)
                e[1] += f / truth - 1
                e[2] += 1
        cells = []
        for k in ("long", "short", 900, 3600):
            e = sums.get(k)
            cells.append("%5.1f%% (%+4.1f%%)" % (100 * e[0] / e[2], 100 * e[1] / e[2]) if e else "-")
        print("%-48s %6d  %-15s %-15s %-15s %-15s" % ("%s %gh" % (path.split("/")[-1], start), days,
                                                       *cells))


if __name__ == "__main__":
    main(sys.argv[1:])
