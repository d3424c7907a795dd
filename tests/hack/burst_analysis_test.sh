#!/usr/bin/env bash
# hack/burst-analysis on a hand-worked timeline (burst_analysis_timeline.csv, static-1's rows;
# static-2's must be ignored): prompt tokens/s 100 100 300 100 100 100 250 250, mean 162.5, max
# 300 = 1.85x. Above 1.5 x 162.5 = 243.75: the run [300] (15 s) and [250 250] (30 s), both within
# a 90 s warm-up. Within 90 s (6 intervals) of intervals 0 and 1 the load reaches 300 = 3x: both
# rise by 1.5x and 2x. No 5-minute window (20 intervals) is complete. A missing column is an
# error naming it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tool="$here/../../hack/burst-analysis"
out=$("$tool" "$here/burst_analysis_timeline.csv" --warmup 90)
echo "$out"
expect() { grep -qF -- "$1" <<<"$out" || { echo "missing: $1"; exit 1; }; }
expect "(static-1's rows): 8 intervals of 15 s, prompt_tokens_per_s"
expect "mean 162.5, median 100.0, max 300.0 (1.85x the mean)"
expect "bursts above 1.5x the mean: 2, lasting 15-30 s (median 22 s); 2 of 2 end within the 90 s warm-up"
expect "rise to >= 1.5x within 90 s: 100%"
expect "rise to >= 2.0x within 90 s: 100%"
expect "5-minute windows: none complete (8 intervals)"
# With a summary (burst_analysis_summary.json): the p90 need per minute 2 2 2 4 2 2 2 2 2 2 (mean
# 2.2) and the target's 3 3 3 5 3 ... (mean 3.2). Two minutes late (90 s warm-up + 30 s, rounded
# up to whole minutes), the follower holds 2 in minute 3, where 4 are needed: short once at +0
# and +1 (mean 2.2, 3.2), never at +2 (4.2), where it stops.
out=$("$tool" "$here/burst_analysis_timeline.csv" --warmup 90 --summary "$here/burst_analysis_summary.json")
echo "$out"
expect "zero-lag oracle (each minute's p90), 10 minutes: need 2-4 replicas, mean 2.2"
expect "static-3: short of the need in 1 of 10 minutes"
expect "static-4: short of the need in 0 of 10 minutes"
expect "the need 2 min late + 0: short in 1 of 10 minutes, mean fleet 2.2"
expect "the need 2 min late + 1: short in 1 of 10 minutes, mean fleet 3.2"
expect "the need 2 min late + 2: short in 0 of 10 minutes, mean fleet 4.2"
expect "zero-lag oracle for the target (the hour's request share), 10 minutes: need 3-5 replicas, mean 3.2"
expect "the need 2 min late + 2: short in 0 of 10 minutes, mean fleet 5.2"
if grep -qF "late + 3:" <<<"$out"; then echo "the follower goes on after a margin that is never short"; exit 1; fi
if err=$("$tool" "$here/burst_analysis_timeline.csv" --column nope 2>&1); then
  echo "a missing column must fail"; exit 1
fi
grep -qF "no column 'nope'" <<<"$err" || { echo "unclear error: $err"; exit 1; }
echo "burst-analysis: ok"
