#!/usr/bin/env python3
"""Writes a rate curve whose days repeat: one day of a ServeGen aggregate-rate curve, its last two
hours blended into its first window so that one day runs into the next without a step, repeated
11 times. Traffic with a daily shape that recurs exactly, for checking that the seasonal forecast
(controller/state/seasonal_forecast.h) pays where the days repeat; the shipped days do not.

  hack/repeat-day-curve.py OUT.csv [CURVE] [DAY_START_HOURS]
      (default: tests/data/traces/servegen_language_m-large_aggregate_rate.csv, day at 240 h)
  twinscale replay --rate-curve OUT.csv --curve-start 240h --curve-span 24h ...
"""
import csv
import sys

out = sys.argv[1]
curve = sys.argv[2] if len(sys.argv) > 2 else "tests/data/traces/servegen_language_m-large_aggregate_rate.csv"
start = float(sys.argv[3]) if len(sys.argv) > 3 else 240
rows = list(csv.DictReader(open(curve)))
window = float(rows[1]["window_start_s"]) - float(rows[0]["window_start_s"])
day = [float(r["aggregate_rate_rps"]) for r in rows
       if start * 3600 <= float(r["window_start_s"]) < start * 3600 + 86400]
blend = int(7200 / window)
n = len(day)
for i in range(n - blend, n):
    w = (i - (n - blend) + 1) / (blend + 1)
    day[i] = (1 - w) * day[i] + w * day[0]
with open(out, "w") as f:
    f.write("window_start_s,aggregate_rate_rps,active_clients\n")
    for d in range(11):
        for i, r in enumerate(day):
            f.write("%d,%.4f,0\n" % ((d * n + i) * window, r))
