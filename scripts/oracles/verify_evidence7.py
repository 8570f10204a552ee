#!/usr/bin/env python3
"""Independent verifier of fork evidence type 7, replay mismatch, written from docs/PROTOCOL.md ("Fork
evidence encoding", "Clearing sync") and docs/CLEARING.md section 2.5. It reuses the parsers and the
statement checks of verify_bundle.py (the audit-bundle oracle) and replays the money rules it needs itself:
balances of the asset issuer's assets never negative, a statement recorded once, a reversal only of an
unreversed payment out of the same amount, a confirmation only of an open one. (The Swift verifier applies
every ledger rule; this oracle is the independent cross-check of the vectors.)
Uses only the standard library and the `cryptography` package. Prints "proven CODE: ..." and exits 0, or
"not-proven CODE: ..." and exits 1; a malformed file exits 2.

Usage: verify_evidence7.py EVIDENCE.bin
"""
import hashlib
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verify_bundle import (  # noqa: E402  (the sibling oracle's parsers, written from the same document)
    Reader, leaf_hash, node_hash, parse_entry, parse_order, parse_signed_checkpoint, parse_signed_event,
    parse_signed_statement, statement_problem, transfer_order, verify_signature)

CHAIN_LABEL = b"secure-chain-v1\x00"
MAX_BYTES = 64 * 1024 * 1024


def sha256(data):
    return hashlib.sha256(data).digest()


class Verdict(Exception):
    def __init__(self, proven, code, reason):
        super().__init__(reason)
        self.proven, self.code, self.reason = proven, code, reason


def u32(r):
    return struct.unpack(">I", r.take(4))[0]


def read_events(r):
    """u16 count || each u16 length || signed key event."""
    return [parse_signed_event(r.take(r.u16())) for _ in range(r.u16())]


def read_signed_checkpoint(r):
    start = r.offset
    if r.u8() != 1:
        raise ValueError("signed checkpoint version")
    r.take(r.u16())
    r.take(r.u8())
    return r.data[start:r.offset]


def log_ok(events, wallet):
    """The log verifies from its inception, which hashes to `wallet`."""
    if not events or events[0]["digest"] != wallet or events[0]["previous"] != bytes(32):
        return False
    for i, ev in enumerate(events):
        if ev["sequence"] != i or not verify_signature(ev["key"], b"secure-key-event-v1", ev["body"], ev["signature"]):
            return False
        if i > 0:
            prev = events[i - 1]
            if ev["previous"] != prev["digest"] or sha256(
                    bytes.fromhex("3059301306072a8648ce3d020106082a8648ce3d030107034200") + ev["key"]) != prev["next"]:
                return False
    return True


def in_force(events, key, sequence, position, size):
    """The key was the log's key in force at ledger size `size`."""
    if sequence >= len(events):
        return False
    ev = events[sequence]
    if ev["key"] != key or ev["position"] != position or size <= position:
        return False
    return sequence + 1 == len(events) or size <= events[sequence + 1]["position"]


def merkle_root(hashes):
    """RFC 9162 MTH over leaf hashes."""
    if not hashes:
        return sha256(b"")
    if len(hashes) == 1:
        return hashes[0]
    k = 1
    while k * 2 < len(hashes):
        k *= 2
    return node_hash(merkle_root(hashes[:k]), merkle_root(hashes[k:]))


def parse(data):
    if len(data) > MAX_BYTES:
        raise ValueError("over 64 MiB")
    r = Reader(data)
    if r.u8() != 2 or r.u8() != 7:
        raise ValueError("not fork evidence version 2 of type 7")
    ev = {"log": read_events(r), "checkpoint": read_signed_checkpoint(r), "entries": []}
    for position in range(u32(r)):
        form = r.u8()
        if form == 1:
            leaf = r.take(u32(r))
            ev["entries"].append({"whole": leaf, "position": position})
        elif form == 2:
            ev["entries"].append({"id": r.take(16), "digest": r.take(32), "leaf_hash": r.take(32),
                                  "position": position})
        else:
            raise ValueError("entry form")
    ev["claims"] = []
    for _ in range(r.u16()):
        claim = r.take(r.u16())
        mapping = r.take(u32(r))
        ev["claims"].append((claim, mapping))
    ev["issuer_logs"] = [read_events(r) for _ in range(r.u16())]
    ev["peer_logs"] = []
    for _ in range(r.u16()):
        wallet = r.take(32)
        ev["peer_logs"].append((wallet, read_events(r)))
    ev["transfers"] = [r.take(u32(r)) for _ in range(u32(r))]
    ev["asset_issuer"] = r.take(32)
    if not r.at_end():
        raise ValueError("trailing bytes")
    return ev


def parse_claim(signed):
    payload, signature = parse_signed_statement(signed)
    r = Reader(payload)
    if r.u8() != 1:
        raise ValueError("claim version")
    claim = {"wallet": r.take(32), "key": r.take(65), "sequence": r.u64(), "event_position": r.u64(),
             "size": r.u64(), "issuer": r.take(32), "from": r.u64(), "to": r.u64(), "digest": r.take(32),
             "session": r.take(16)}
    if not r.at_end():
        raise ValueError("trailing bytes after a claim")
    claim["valid"] = verify_signature(claim["key"], b"secure-sync-claim-v1", payload, signature)
    return claim


def parse_map(data):
    r = Reader(data)
    items = [(r.u64(), r.u8()) for _ in range(u32(r))]
    if not r.at_end():
        raise ValueError("trailing bytes after a map")
    return items, sha256(b"".join(struct.pack(">QB", p, c) for p, c in items))


def step1(ev):
    c = parse_signed_checkpoint(ev["checkpoint"])
    events = ev["log"]
    if not log_ok(events, c["wallet"]):
        raise Verdict(False, "wrong-log", "the log is not the checkpoint's wallet's")
    if not verify_signature(c["key"], b"secure-checkpoint-v1", c["body"], c["signature"]):
        raise Verdict(False, "bad-signature", "the checkpoint's signature does not verify")
    if not in_force(events, c["key"], c["sequence"], c["event_position"], c["size"]):
        raise Verdict(False, "key-not-in-force", "the checkpoint's key is not in force at its size")
    return c


def step2(ev, c):
    opaque = [e["position"] for e in ev["entries"] if "whole" not in e]
    if not ev["claims"] and not opaque:
        return
    start, covered = 0, []
    for claim_bytes, map_bytes in ev["claims"]:
        claim = parse_claim(claim_bytes)
        items, digest = parse_map(map_bytes)
        if not claim["valid"] or claim["wallet"] != c["wallet"] or claim["issuer"] != ev["asset_issuer"] \
                or not in_force(ev["log"], claim["key"], claim["sequence"], claim["event_position"], claim["size"]):
            raise Verdict(False, "claim-missing", "a claim is not the wallet's for this issuer")
        if claim["from"] != start or digest != claim["digest"] \
                or any(not claim["from"] <= p < claim["to"] for p, _ in items):
            raise Verdict(False, "claim-missing", "the claims do not chain or a map is not its claim's")
        covered += [p for p, _ in items]
        start = claim["to"]
    if start != c["size"] or covered != opaque:
        raise Verdict(False, "claim-missing", "the claims do not cover exactly the opaque entries")


def step3(ev, c):
    if len(ev["entries"]) != c["size"]:
        raise Verdict(False, "not-committed", "the entry count is not the checkpoint's size")
    head, hashes = bytes(32), []
    for e in ev["entries"]:
        if "whole" in e:
            leaf = e["whole"]
            entry = parse_entry(leaf)
            if entry["position"] != e["position"] or leaf[-32:] != head:
                raise Verdict(False, "not-committed", "entry %d is out of place or does not link" % e["position"])
            digest, ident, hashed = sha256(leaf), entry["id"], leaf_hash(leaf)
        else:
            digest, ident, hashed = e["digest"], e["id"], e["leaf_hash"]
        head = sha256(CHAIN_LABEL + head + struct.pack(">Q", e["position"]) + digest + ident)
        hashes.append(hashed)
    if head != c["head"] or merkle_root(hashes) != c["root"]:
        raise Verdict(False, "not-committed", "the entries do not give the checkpoint's head and root")


def snapshot_balances(c, issuer):
    """The checkpoint's nonzero balances of `issuer`'s assets: after root, head and time, u8 count of asset
    amounts (issuer 32 || currency 4 || units 8)."""
    r = Reader(c["body"])
    r.take(1 + 32 + 65 + 8 + 8 + 8 + 32 + 32 + 8)
    balances = {}
    for _ in range(r.u8()):
        owner, currency, units = r.take(32), r.take(4), struct.unpack(">q", r.take(8))[0]
        if owner == issuer and units:
            balances[currency] = units
    return balances


def step4(ev, c):
    issuer = ev["asset_issuer"]
    sources = {"trustedIssuers": [issuer.hex()]}
    sent = {}
    for data in ev["transfers"]:
        sent[parse_order(transfer_order(parse_signed_statement(data)[0]))["transfer"]] = data
    logs = {events[0]["digest"]: events for events in ev["issuer_logs"] if events}
    for wallet, events in ev["peer_logs"]:
        logs[wallet] = events
    sources["peerKeyEvents"] = [{"walletID": w.hex(), "events": [raw_event(e).hex() for e in evs]}
                                for w, evs in logs.items()]
    balances, recorded, payments, missing = {}, set(), {}, None
    for e in ev["entries"]:
        if "whole" not in e:
            continue
        entry = parse_entry(e["whole"])
        problem = rule_problem(entry, balances, recorded, payments, issuer)
        if problem:
            raise Verdict(True, "rule-broken", "entry %d: %s" % (e["position"], problem))
        problem = statement_problem(entry, c["wallet"], sources, sent)
        if problem and problem.startswith("no "):
            missing = missing or "entry %d: %s" % (e["position"], problem)
        elif problem:
            raise Verdict(True, "statement-invalid", "entry %d: %s" % (e["position"], problem))
    replayed = {asset[32:]: units for asset, units in balances.items() if units and asset[:32] == issuer}
    if replayed != snapshot_balances(c, issuer):
        raise Verdict(True, "balance-mismatch", "the replayed balances of the issuer are not the checkpoint's")
    if missing:
        raise Verdict(False, "missing-source", missing)
    raise Verdict(False, "no-conflict", "the replay leads to the checkpoint")


def raw_event(ev):
    """The signed key event's bytes again (u16 body length || body || u8 length || DER [|| countersignature])."""
    out = struct.pack(">H", len(ev["body"])) + ev["body"] + bytes([len(ev["signature"])]) + ev["signature"]
    if ev["countersignature"] is not None:
        out += bytes([len(ev["countersignature"])]) + ev["countersignature"]
    return out


def rule_problem(entry, balances, recorded, payments, issuer):
    """The money rules of the replay, per asset (issuer || currency) (kinds: 1 deposit, 2 payment out, 3
    payment in, 4 reversal, 10 confirmation, 12 mint, 13 redemption)."""
    kind, amount, statement = entry["kind"], entry["amount"], entry["statement"]
    if kind not in (1, 2, 3, 4, 10, 12, 13):
        return None
    key = statement[:48]
    if key in recorded:
        return "a statement recorded twice"
    if kind == 10:
        payment = payments.get(statement[32:48])
        if payment is None or payment["reversed"] or payment["confirmed"]:
            return "a confirmation of no open payment out"
        payment["confirmed"] = True
        recorded.add(key)
        return None
    asset, units = amount[:36], struct.unpack(">q", amount[36:44])[0]
    if kind == 4:
        payment = payments.get(statement[32:48])
        if payment is None or payment["reversed"] or payment["confirmed"] or payment["amount"] != amount:
            return "a reversal of no unreversed payment out of that amount"
        payment["reversed"] = True
    if kind in (2, 13):
        if balances.get(asset, 0) < units:
            return "a balance below zero"
        balances[asset] = balances.get(asset, 0) - units
        if kind == 2:
            payments[statement[32:48]] = {"amount": amount, "reversed": False, "confirmed": False}
    else:
        balances[asset] = balances.get(asset, 0) + units
    recorded.add(key)
    return None


def verify(data):
    ev = parse(data)
    c = step1(ev)
    step2(ev, c)
    step3(ev, c)
    step4(ev, c)


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    with open(sys.argv[1], "rb") as handle:
        data = handle.read()
    try:
        verify(data)
    except Verdict as verdict:
        print("%s %s: %s" % ("proven" if verdict.proven else "not-proven", verdict.code, verdict.reason))
        return 0 if verdict.proven else 1
    except (ValueError, KeyError, IndexError, struct.error) as error:
        print("malformed: %s" % error)
        return 2
    return 2


if __name__ == "__main__":
    sys.exit(main())
