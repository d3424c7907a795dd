#!/usr/bin/env python3
"""The twin's error split by what the fleet did during each judged span.

A decision's twin_check (decisions.jsonl, controller/replay/decision_log.h) compares what the twin
forecast for the fleet the decision left with what the truth served over [time_s + judge_from_s,
time_s + horizon_s). Later decisions may change that fleet before the span ends, and they do so
for a reason: a scale-up inside the span follows arrivals above the forecast, which the twin was
not asked about. This splits the counted decisions by the later decisions inside their span:
  same  the fleet stayed at the decision's size: the twin's own error on the question it was asked
  down  only scale-ins followed (the truth ran fewer replicas than forecast for part of the span)
  up    only scale-ups followed (the arrivals outran the forecast, and the policy answered)
  both  both
and prints each part's count, bias and mean absolute error of the attainment (points;
bias = forecast - served, positive: optimistic).

  hack/twin-error-by-fleet-change.py RUN_DIR/decisions.jsonl...
"""
import json
import sys


def split(path):
    decisions = sorted((json.loads(line) for line in open(path)), key=lambda d: d["time_s"])
    parts = {"same": [], "down": [], "up": [], "both": []}
    for i, d in enumerate(decisions):
        check = d.get("twin_check")
        if not check or not check.get("counted"):
            continue
        predicted = check["predicted"].get("attainment")
        observed = check["observed"].get("attainment")
        if predicted is None or observed is None:
            continue
        end = d["time_s"] + check["horizon_s"]
        size = d["replicas"]
        low = high = size
        for later in decisions[i + 1:]:
            if later["time_s"] >= end:
                break
            low, high = min(low, later["replicas"]), max(high, later["replicas"])
        part = "same" if low == high == size else "down" if high == size else "up" if low == size else "both"
        parts[part].append(100 * (predicted - observed))
    return parts


def main(paths):
    if not paths:
        print("usage: " + __doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    for path in paths:
        print(path)
        for part, errors in split(path).items():
            if errors:
                bias = sum(errors) / len(errors)
                mae = sum(abs(e) for e in errors) / len(errors)
                print(f"  {part:5s} {len(errors):5d} decisions  bias {bias:+.2f}  MAE {mae:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
