#!/usr/bin/env python3
"""A long-prompt request trace of our own making, in the Mooncake JSONL format twinscale replays.

Poisson arrivals at RATE req/s for MINUTES minutes; prompts of 10k-100k tokens (log-uniform),
outputs log-normal with a median of 200 tokens (clamped to 16-2000). Two kinds of reuse:
  none           every request's prefix blocks are its own (no prefix-cache hit is possible);
  conversations  a request starts a conversation with probability 1/3; otherwise it is the next
                 turn of an open one: its prompt is the previous turn's prompt and answer plus
                 1k-8k new tokens (kept under 100k), and its hash ids repeat the previous turn's,
                 so a replica holding them serves that prefix from its cache.
Hash ids cover 512 tokens each, as Mooncake's do. Deterministic for a seed.

  hack/long-prompt-trace.py OUT.jsonl [--rate 4] [--minutes 40] [--reuse none|conversations]
      [--seed 1]
"""
import argparse
import json
import math
import random

BLOCK = 512


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--rate", type=float, default=4.0)
    p.add_argument("--minutes", type=float, default=40.0)
    p.add_argument("--reuse", choices=["none", "conversations"], default="none")
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    if not (a.rate > 0 and a.minutes > 0):
        p.error("--rate and --minutes must be positive")
    rng = random.Random(a.seed)
    next_id = 0

    def fresh(n):
        nonlocal next_id
        ids = list(range(next_id, next_id + n))
        next_id += n
        return ids

    open_turns = []  # (prompt tokens, hash ids) of conversations that may continue
    t = 0.0
    end = a.minutes * 60
    n = 0
    with open(a.out, "w") as f:
        while True:
            t += rng.expovariate(a.rate)
            if t >= end:
                break
            out = int(min(2000, max(16, round(math.exp(rng.gauss(math.log(200), 0.8))))))
            if a.reuse == "conversations" and open_turns and rng.random() < 2 / 3:
                k = rng.randrange(len(open_turns))
                prev_prompt, prev_ids, prev_out = open_turns[k]
                prompt = min(100_000, prev_prompt + prev_out + rng.randint(1000, 8000))
                blocks = math.ceil(prompt / BLOCK)
                ids = prev_ids[: min(len(prev_ids), blocks)]
                ids = ids + fresh(blocks - len(ids))
                if prompt >= 100_000:
                    open_turns.pop(k)
                else:
                    open_turns[k] = (prompt, ids, out)
            else:
                prompt = int(round(math.exp(rng.uniform(math.log(10_000), math.log(100_000)))))
                ids = fresh(math.ceil(prompt / BLOCK))
                if a.reuse == "conversations":
                    open_turns.append((prompt, ids, out))
                    if len(open_turns) > 200:
                        open_turns.pop(0)
            f.write(json.dumps({"timestamp": int(t * 1000), "input_length": prompt,
                                "output_length": out, "hash_ids": ids}) + "\n")
            n += 1
    print(f"wrote {n} requests over {a.minutes:g} minutes to {a.out}")


if __name__ == "__main__":
    main()
