#!/usr/bin/env python3
"""Writes a synthetic folded-stacks file: N samples (one line each, count 1, shuffled) over
S distinct stacks drawn from a random call graph with some recursion.

Usage: gen-folded.py OUT [--samples 1000000] [--stacks 100000] [--seed 1]"""
import argparse
import random


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('out')
    ap.add_argument('--samples', type=int, default=1_000_000)
    ap.add_argument('--stacks', type=int, default=100_000)
    ap.add_argument('--seed', type=int, default=1)
    a = ap.parse_args()
    rnd = random.Random(a.seed)

    n_functions = 5000
    names = ['%s_%s_%d' % (rnd.choice(['db', 'net', 'ui', 'core', 'util', 'io']),
                           rnd.choice(['read', 'write', 'parse', 'sort', 'hash', 'walk', 'emit']), i)
             for i in range(n_functions)]
    callees = [[rnd.randrange(n_functions) for _ in range(rnd.randint(1, 6))] for _ in range(n_functions)]
    for f in rnd.sample(range(n_functions), 300):        # some direct recursion
        callees[f].append(f)

    stacks = set()
    while len(stacks) < a.stacks:
        depth = rnd.randint(3, 40)
        f, frames = rnd.randrange(50), ['main']
        for _ in range(depth):
            frames.append(names[f])
            f = rnd.choice(callees[f])
        stacks.add(';'.join(frames))
    stacks = sorted(stacks)
    weights = [1.0 / (i + 1) ** 0.8 for i in range(len(stacks))]    # a few hot stacks, a long tail
    rnd.shuffle(weights)
    # Every stack at least once, the rest by weight.
    chosen = list(range(len(stacks))) + rnd.choices(range(len(stacks)), weights, k=a.samples - len(stacks))
    rnd.shuffle(chosen)
    with open(a.out, 'w') as f:
        for i in chosen:
            f.write(stacks[i])
            f.write(' 1\n')


if __name__ == '__main__':
    main()
