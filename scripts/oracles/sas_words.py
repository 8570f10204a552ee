#!/usr/bin/env python3
"""Checks of the SAS word list (Sources/SecureChannel/SASWords.swift) for words that look or sound alike,
independent of the wallet. Uses the standard library and the `jellyfish` package (scripts/bootstrap pins it).

  sas_words.py check FILE
      FILE holds the list, one word a line, in index order. Checks: exactly 256 words, each lowercase ASCII
      letters; every pair at Levenshtein distance of at least 2; all 4-letter prefixes distinct (a word
      shorter than 4 letters is its own prefix); all Metaphone codes distinct. Prints each offender and
      exits 1, or prints "ok" and exits 0.

  sas_words.py vector HEX
      HEX is a 32-byte SAS hash. Prints the v2 words (secure-sas-v2: the hash's bytes in order, each byte's
      word unless already chosen, until three distinct words; if the bytes run out, the lowest-indexed words
      not yet chosen). Needs the list on standard input, one word a line.
"""
import sys
from itertools import combinations

import jellyfish


def problems(words):
    found = []
    if len(words) != 256:
        found.append(f"{len(words)} words, not 256")
    for word in words:
        if not word or not all("a" <= c <= "z" for c in word):
            found.append(f"{word!r} is not lowercase ASCII letters")
    for a, b in combinations(words, 2):
        distance = jellyfish.levenshtein_distance(a, b)
        if distance < 2:
            found.append(f"edit distance {distance}: {a} {b}")
    seen = {}
    for word in words:
        seen.setdefault(word[:4], []).append(word)
    for prefix, group in sorted(seen.items()):
        if len(group) > 1:
            found.append(f"prefix {prefix}: {' '.join(group)}")
    codes = {}
    for word in words:
        codes.setdefault(jellyfish.metaphone(word), []).append(word)
    for code, group in sorted(codes.items()):
        if len(group) > 1:
            found.append(f"metaphone {code}: {' '.join(group)}")
    return found


def v2_words(digest, words):
    chosen = []
    for byte in digest:
        if byte not in chosen:
            chosen.append(byte)
        if len(chosen) == 3:
            break
    index = 0
    while len(chosen) < 3:
        if index not in chosen:
            chosen.append(index)
        index += 1
    return [words[i] for i in chosen]


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "check":
        with open(sys.argv[2], encoding="ascii") as f:
            words = f.read().split()
        found = problems(words)
        for line in found:
            print(line)
        if found:
            return 1
        print("ok")
        return 0
    if len(sys.argv) == 3 and sys.argv[1] == "vector":
        words = sys.stdin.read().split()
        print(" ".join(v2_words(bytes.fromhex(sys.argv[2]), words)))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
