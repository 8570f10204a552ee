#!/usr/bin/env python3
"""Times OpenSSL's ML-KEM through Python cryptography, for `secure-bench kem`.

Prints one JSON object: {"openssl": "<version>", "results": {"768": {"keygen": µs, "encaps": µs,
"decaps": µs, "parse": µs}, "1024": {...}}}. Each figure is the median over repeats of timeit, minus
the median cost of calling an empty Python function with the same number of arguments, so it
approximates the C work alone. keygen is seed -> key object -> encapsulation key bytes; encaps and
decaps run on loaded key objects; parse loads an encapsulation key from bytes.
"""
import json
import os
import statistics
import sys
import timeit

from cryptography.hazmat.backends.openssl.backend import backend
from cryptography.hazmat.primitives.asymmetric import mlkem

REPEATS = 31
TARGET_SECONDS_PER_REPEAT = float(os.environ.get("SECURE_BENCH_REPEAT_SECONDS", "0.01"))


def median_microseconds(function) -> float:
    timer = timeit.Timer(function)
    calibration = 20
    per_call = max(timer.timeit(number=calibration) / calibration, 1e-8)
    number = max(1, int(TARGET_SECONDS_PER_REPEAT / per_call))
    samples = timer.repeat(repeat=REPEATS, number=number)
    return statistics.median(samples) / number * 1e6


def empty(*_arguments):
    return None


def measure(private_key_type, public_key_type) -> dict:
    seed = os.urandom(64)
    key = private_key_type.from_seed_bytes(seed)
    public_key = key.public_key()
    encoded = public_key.public_bytes_raw()
    _, ciphertext = public_key.encapsulate()
    overhead_zero = median_microseconds(lambda: empty())
    overhead_one = median_microseconds(lambda: empty(seed))
    figures = {
        "keygen": median_microseconds(lambda: private_key_type.from_seed_bytes(seed).public_key().public_bytes_raw())
        - overhead_one,
        "encaps": median_microseconds(lambda: public_key.encapsulate()) - overhead_zero,
        "decaps": median_microseconds(lambda: key.decapsulate(ciphertext)) - overhead_one,
        "parse": median_microseconds(lambda: public_key_type.from_public_bytes(encoded)) - overhead_one,
    }
    return {name: round(value, 3) for name, value in figures.items()}


def main() -> int:
    results = {
        "768": measure(mlkem.MLKEM768PrivateKey, mlkem.MLKEM768PublicKey),
        "1024": measure(mlkem.MLKEM1024PrivateKey, mlkem.MLKEM1024PublicKey),
    }
    json.dump({"openssl": backend.openssl_version_text(), "results": results}, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
