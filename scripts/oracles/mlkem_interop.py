#!/usr/bin/env python3
"""ML-KEM oracle for the Swift interoperability test: OpenSSL's ML-KEM through Python cryptography.

Usage: mlkem_interop.py PARAMETER_SET INPUT OUTPUT
  PARAMETER_SET  768 or 1024 (what cryptography 50.0.2 offers)
  INPUT          one line per case: "<seed d||z hex> <ciphertext made by Swift for that key, hex>"
  OUTPUT         one line per case: "<ek hex> <ciphertext made here hex> <its shared secret hex>
                 <shared secret of Swift's ciphertext, decapsulated here, hex>"

The oracle computes and reports; it judges nothing. The Swift test compares.
"""
import sys

from cryptography.hazmat.primitives.asymmetric import mlkem

KEYS = {"768": mlkem.MLKEM768PrivateKey, "1024": mlkem.MLKEM1024PrivateKey}


def main() -> int:
    if len(sys.argv) != 4 or sys.argv[1] not in KEYS:
        print(__doc__, file=sys.stderr)
        return 2
    private_key_type = KEYS[sys.argv[1]]
    with open(sys.argv[2]) as source, open(sys.argv[3], "w") as sink:
        for number, line in enumerate(source):
            fields = line.split()
            if len(fields) != 2:
                print(f"input line {number + 1}: expected 2 fields, got {len(fields)}", file=sys.stderr)
                return 1
            key = private_key_type.from_seed_bytes(bytes.fromhex(fields[0]))
            public_key = key.public_key()
            secret, ciphertext = public_key.encapsulate()
            theirs = key.decapsulate(bytes.fromhex(fields[1]))
            sink.write(f"{public_key.public_bytes_raw().hex()} {ciphertext.hex()} {secret.hex()} {theirs.hex()}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
