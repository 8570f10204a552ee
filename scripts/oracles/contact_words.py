#!/usr/bin/env python3
"""Contact verification words (secure-contact-words-v1, docs/PROTOCOL.md "Contact verification words"),
computed independently of the wallet from the document alone. Standard library only.

  contact_words.py words
      Reads one JSON object on standard input:
        {"list": [7776 words in index order],
         "cases": [{"commitment": HEX, "initiatorContribution": HEX, "responderContribution": HEX}, ...]}
      and prints one JSON array, one object per case:
        {"encodingSHA256": HEX, "streamPrefix": HEX (the first 16 bytes), "indices": [5 ints],
         "words": [5 words]}

  contact_words.py probability
      Prints log2 of the chance that the first 64 bytes of the stream give fewer than five words, exactly
      (a Markov chain over the number of distinct words drawn so far).
"""
import hashlib
import json
import math
import sys
from fractions import Fraction

LABEL = b"secure-contact-words-v1"
LIST_COUNT = 7776
WORD_COUNT = 5


def encoding(case):
    out = bytearray(LABEL + b"\x00")
    for name in ("commitment", "initiatorContribution", "responderContribution"):
        field = bytes.fromhex(case[name])
        if len(field) > 4132:
            raise ValueError(f"{name} is longer than 4,132 bytes")
        out += len(field).to_bytes(2, "big") + field
    return bytes(out)


def indices(encoded):
    # The stream is unbounded in principle; 4,096 bytes is far more than any input needs.
    stream = hashlib.shake_256(encoded).digest(4096)
    chosen = []
    for offset in range(0, len(stream), 2):
        draw = int.from_bytes(stream[offset:offset + 2], "big") % 8192  # the low 13 bits
        if draw < LIST_COUNT and draw not in chosen:
            chosen.append(draw)
            if len(chosen) == WORD_COUNT:
                return stream, chosen
    raise RuntimeError("the stream ran out")


def run_out_probability(draws=32):
    # state k = distinct words drawn so far; a draw adds one with probability (7776 - k) / 8192.
    states = {0: Fraction(1)}
    for _ in range(draws):
        following = {}
        for k, p in states.items():
            if k == WORD_COUNT:
                following[k] = following.get(k, 0) + p
                continue
            advance = Fraction(LIST_COUNT - k, 8192)
            following[k + 1] = following.get(k + 1, 0) + p * advance
            following[k] = following.get(k, 0) + p * (1 - advance)
        states = following
    short = sum(p for k, p in states.items() if k < WORD_COUNT)
    return math.log2(short.numerator) - math.log2(short.denominator)


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "words":
        request = json.load(sys.stdin)
        words = request["list"]
        if len(words) != LIST_COUNT:
            raise ValueError(f"{len(words)} words, not {LIST_COUNT}")
        results = []
        for case in request["cases"]:
            encoded = encoding(case)
            stream, chosen = indices(encoded)
            results.append({
                "encodingSHA256": hashlib.sha256(encoded).hexdigest(),
                "streamPrefix": stream[:16].hex(),
                "indices": chosen,
                "words": [words[i] for i in chosen],
            })
        print(json.dumps(results))
        return 0
    if len(sys.argv) == 2 and sys.argv[1] == "probability":
        print(f"{run_out_probability():.2f}")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
