#!/usr/bin/env python3
"""Contact records (docs/PROTOCOL.md, "Contact records"), encoded, decoded and hashed independently of the
wallet, from the document alone. Standard library only.

  contact_record.py
      Reads one JSON array on standard input, one case per record:
        {"walletID": HEX, "log": HEX (the key-event log as a wallet card encodes it), "contactKey": HEX,
         "name": STRING, "addedAt": INT, "verification": INT, "rangingSource": INT, "medianMillimetres": INT,
         "trustedIssuers": [HEX, ...] (any order), "encoded": HEX (what the wallet wrote)}
      and prints one JSON array, one object per case:
        {"encoded": HEX (this oracle's encoding), "digest": HEX (its SHA-256),
         "decoded": {the fields read back from the wallet's "encoded"}}
"""
import hashlib
import json
import sys

VERSION = 1
CONTACT_KEY_BYTES = 1568
NAME_BYTES_MAX = 64
ISSUERS_MAX = 32


def encode(case):
    name = case["name"].encode("utf-8")
    if not 1 <= len(name) <= NAME_BYTES_MAX:
        raise ValueError("name length")
    key = bytes.fromhex(case["contactKey"])
    if len(key) != CONTACT_KEY_BYTES:
        raise ValueError("contact key length")
    issuers = sorted(set(bytes.fromhex(i) for i in case["trustedIssuers"]))
    if len(issuers) > ISSUERS_MAX:
        raise ValueError("too many issuers")
    out = bytearray([VERSION])
    out += bytes.fromhex(case["walletID"])
    out += bytes.fromhex(case["log"])
    out += key
    out += bytes([len(name)]) + name
    out += case["addedAt"].to_bytes(8, "big", signed=True)
    out += bytes([case["verification"], case["rangingSource"]])
    out += case["medianMillimetres"].to_bytes(4, "big")
    out += bytes([len(issuers)]) + b"".join(issuers)
    return bytes(out)


def decode(data):
    at = 0

    def take(count):
        nonlocal at
        if at + count > len(data):
            raise ValueError("truncated")
        piece = data[at : at + count]
        at += count
        return piece

    if take(1)[0] != VERSION:
        raise ValueError("version")
    wallet = take(32)
    log_start = at
    events = int.from_bytes(take(2), "big")
    for _ in range(events):
        take(int.from_bytes(take(2), "big"))
    log = data[log_start:at]
    key = take(CONTACT_KEY_BYTES)
    name = take(take(1)[0]).decode("utf-8")
    added = int.from_bytes(take(8), "big", signed=True)
    verification, source = take(1)[0], take(1)[0]
    median = int.from_bytes(take(4), "big")
    issuers = [take(32).hex() for _ in range(take(1)[0])]
    if at != len(data):
        raise ValueError("trailing bytes")
    return {
        "walletID": wallet.hex(), "log": log.hex(), "logEventCount": events, "contactKey": key.hex(),
        "name": name, "addedAt": added, "verification": verification, "rangingSource": source,
        "medianMillimetres": median, "trustedIssuers": issuers,
    }


def main():
    cases = json.load(sys.stdin)
    results = []
    for case in cases:
        encoded = encode(case)
        results.append({
            "encoded": encoded.hex(), "digest": hashlib.sha256(encoded).hexdigest(),
            "decoded": decode(bytes.fromhex(case["encoded"])),
        })
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
