#!/usr/bin/env python3
"""Independent verifier of a `secure audit export` bundle, written from docs/PROTOCOL.md alone
("Audit bundles", "Key events", "Checkpoint encoding", "Ledger entry encoding", "Merkle tree and proofs",
"Vouchers", "Transfers, receipts and refusals"). With `statementSources`, it also checks the signed
statement inside each entry of the range: signatures, the signer's key in the signer's key-event log, the
recipient, issuer trust, amounts and statement references. (The Swift verifier checks more: each key's
date against its log, and every field of a transfer; this oracle is the independent cross-check.)
Uses only the standard library and the `cryptography` package. Prints OK and exits 0, or prints each
problem and exits 1.

Usage: verify_bundle.py BUNDLE.json
"""
import hashlib
import json
import struct
import sys

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

P256_ORDER = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
SPKI_PREFIX = bytes.fromhex("3059301306072a8648ce3d020106082a8648ce3d030107034200")


def sha256(data):
    return hashlib.sha256(data).digest()


def verify_signature(point, label, payload, der):
    """ECDSA P-256 over SHA-256(label || 0x00 || payload); high-s signatures are refused."""
    _, s = decode_dss_signature(der)
    if s > P256_ORDER // 2:
        return False
    key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), point)
    try:
        key.verify(der, label + b"\x00" + payload, ec.ECDSA(hashes.SHA256()))
        return True
    except InvalidSignature:
        return False


class Reader:
    def __init__(self, data):
        self.data, self.offset = data, 0

    def take(self, count):
        if self.offset + count > len(self.data):
            raise ValueError("truncated")
        chunk = self.data[self.offset:self.offset + count]
        self.offset += count
        return chunk

    def u8(self):
        return self.take(1)[0]

    def u16(self):
        return struct.unpack(">H", self.take(2))[0]

    def u64(self):
        return struct.unpack(">Q", self.take(8))[0]

    def at_end(self):
        return self.offset == len(self.data)


def parse_signed_event(data):
    """SignedKeyEvent = u16 len || event || u8 len || DER [|| u8 len || DER countersignature]."""
    r = Reader(data)
    body = r.take(r.u16())
    signature = r.take(r.u8())
    countersignature = None if r.at_end() else r.take(r.u8())
    if not r.at_end():
        raise ValueError("trailing bytes after a signed key event")
    e = Reader(body)
    if len(body) >= 2 and body[1] == 3:
        return parse_clearing_delegation(e, body, signature, countersignature)
    event = {"version": e.u8(), "kind": e.u8(), "sequence": e.u64(), "previous": e.take(32), "key": e.take(65),
             "next": e.take(32), "agreement": e.take(65), "position": e.u64()}
    if event["version"] in (2, 3):  # version 2 adds the key's origin (code, evidence) and the recovery commitment
        event.update(origin=e.u8(), originEvidence=e.take(32), recoveryCommitment=e.take(32))
        zero = event["originEvidence"] == bytes(32)
        if event["origin"] not in (0, 1, 2) or zero != (event["origin"] != 2):
            raise ValueError("key event origin %d with the wrong evidence" % event["origin"])
        if event["version"] == 3:  # version 3 adds the contact key digest (32 zero bytes: none)
            event.update(contactKey=e.take(32))
    elif event["version"] != 1:
        raise ValueError("key event version %d" % event["version"])
    if not e.at_end():
        raise ValueError("trailing bytes after a key event")
    event.update(body=body, signature=signature, countersignature=countersignature, digest=sha256(body))
    return event


def parse_signed_checkpoint(data):
    """SignedCheckpoint = version u8 || u16 len || checkpoint || u8 len || DER; the snapshot is not needed."""
    r = Reader(data)
    if r.u8() != 1:
        raise ValueError("signed checkpoint version")
    body = r.take(r.u16())
    signature = r.take(r.u8())
    if not r.at_end():
        raise ValueError("trailing bytes after a signed checkpoint")
    c = Reader(body)
    if c.u8() != 2:  # version 2 ends with the index commitment D, which a bundle's verifier does not need
        raise ValueError("checkpoint version")
    return {"wallet": c.take(32), "key": c.take(65), "sequence": c.u64(), "event_position": c.u64(), "size": c.u64(),
            "root": c.take(32), "head": c.take(32), "body": body, "signature": signature}


def leaf_hash(leaf):
    return sha256(b"\x00" + leaf)


def node_hash(left, right):
    return sha256(b"\x01" + left + right)


def inclusion_ok(leaf, index, size, proof, root, hashed=None):
    """RFC 9162 section 2.1.3.2; `hashed` is the leaf hash of an entry carried without its content."""
    if index >= size:
        return False
    fn, sn, r = index, size - 1, hashed if hashed is not None else leaf_hash(leaf)
    for p in proof:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while fn & 1 == 0 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == root


def consistency_ok(m, n, old_root, new_root, proof):
    """RFC 9162 section 2.1.4.2, with the documented cases for equal sizes."""
    if m > n:
        return False
    if m == n:
        return not proof and old_root == new_root
    if not proof:
        return False
    path = [old_root] + proof if m & (m - 1) == 0 else list(proof)
    fn, sn = m - 1, n - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            while fn & 1 == 0 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    return sn == 0 and fr == old_root and sr == new_root


def entry_position_and_tail(leaf):
    """An entry's position (after the version byte) and its previous link (the last 32 bytes)."""
    return struct.unpack(">Q", leaf[1:9])[0], leaf[-32:]


def fingerprint(point):
    return sha256(SPKI_PREFIX + point)


def parse_entry(leaf):
    """The fields of a ledger entry encoding, version 2 ("Ledger entry encoding")."""
    r = Reader(leaf)
    if r.u8() != 2:
        raise ValueError("entry version")
    entry = {"position": r.u64(), "id": r.take(16), "kind": r.u8(), "flags": r.u8()}
    entry["amount"] = r.take(44) if r.u8() == 1 else None  # asset: issuer id (32) || currency (4) || units (8)
    entry["category"] = r.take(r.u8())
    entry["counterparty"] = r.take(r.u8())
    entry["note"] = r.take(r.u16())
    entry["time"] = r.take(8)
    entry["statement"] = r.take(80) if r.u8() == 1 else None
    entry["payload"] = r.take(struct.unpack(">I", r.take(4))[0])
    r.take(32)
    if not r.at_end():
        raise ValueError("trailing bytes after an entry")
    return entry


def parse_signed_statement(data):
    """version u8 (1) || u32 length || payload || u8 length || DER signature."""
    r = Reader(data)
    if r.u8() != 1:
        raise ValueError("signed statement version")
    payload = r.take(struct.unpack(">I", r.take(4))[0])
    signature = r.take(r.u8())
    if not r.at_end():
        raise ValueError("trailing bytes after a signed statement")
    return payload, signature


def parse_answer(payload):
    """A receipt's or refusal's head (version 3): transfer id, transfer digest, payer, payee, payee key, key
    date (24 bytes), asset amount (44)."""
    r = Reader(payload)
    if r.u8() != 3:
        raise ValueError("receipt or refusal version")
    return {"transfer": r.take(16), "digest": r.take(32), "payer": r.take(32), "payee": r.take(32),
            "key": r.take(65), "date": r.take(24), "amount": r.take(44)}


def parse_order(data):
    r = Reader(data)
    if r.u8() != 2:
        raise ValueError("order version")
    return {"transfer": r.take(16), "payer": r.take(32), "key": r.take(65), "payee": r.take(32),
            "amount": r.take(44)}


def transfer_order(payload):
    """The order bytes at the head of a transfer payload (version 1, u16 length, order)."""
    r = Reader(payload)
    if r.u8() != 1:
        raise ValueError("transfer version")
    return r.take(r.u16())


def parse_clearing_delegation(e, body, signature, countersignature):
    """Kind 3, version 3 only (PROTOCOL.md, "Key events"): the issuer key in force signs it and the clearing key
    countersigns it under secure-clearing-delegation-v1; it puts no key in force."""
    event = {"version": e.u8(), "kind": e.u8(), "sequence": e.u64(), "previous": e.take(32), "key": e.take(65),
             "clearingKey": e.take(65), "origin": e.u8(), "originEvidence": e.take(32), "tlsKey": e.take(32)}
    url = e.take(e.u8())
    event.update(url=url, position=e.u64())
    if not e.at_end() or event["version"] != 3 or event["sequence"] == 0:
        raise ValueError("a malformed clearing delegation")
    if not 8 <= len(url) <= 200 or not url.startswith(b"https://") or b"#" in url \
            or any(not 0x21 <= b <= 0x7E for b in url):
        raise ValueError("a clearing delegation with a bad URL")
    if countersignature is None or not verify_signature(
            event["clearingKey"], b"secure-clearing-delegation-v1", body, countersignature):
        raise ValueError("a clearing delegation not countersigned by its clearing key")
    event.update(body=body, signature=signature, countersignature=countersignature, digest=sha256(body))
    return event


def peer_keys(sources, wallet):
    """The signing keys of a peer's key-event log, if the log's inception is that wallet's and each event
    is signed by the key it puts in force and chains to the one before; else None."""
    for peer in sources["peerKeyEvents"]:
        if bytes.fromhex(peer["walletID"]) != wallet:
            continue
        events = [parse_signed_event(bytes.fromhex(e)) for e in peer["events"]]
        if not events or events[0]["digest"] != wallet:
            return None
        bearing = None  # the last key-bearing event: a clearing delegation (kind 3) changes no key
        for i, ev in enumerate(events):
            if not verify_signature(ev["key"], b"secure-key-event-v1", ev["body"], ev["signature"]):
                return None
            if i > 0 and ev["previous"] != events[i - 1]["digest"]:
                return None
            if ev["kind"] == 3:
                if events[0]["kind"] != 2 or ev["key"] != bearing["key"]:
                    return None
                continue
            if i > 0 and fingerprint(ev["key"]) != bearing["next"]:
                return None
            bearing = ev
        return {ev["key"] for ev in events if ev["kind"] != 3}
    return None


def statement_problem(entry, wallet, sources, sent):
    """Why the statement inside an entry does not hold, or None (kinds 1, 2, 3, 4, 10 and 13)."""
    kind, payload = entry["kind"], entry["payload"]
    if kind not in (1, 2, 3, 4, 10, 13):
        return None
    if kind == 2:
        transfer = sent.get(parse_order(payload)["transfer"])
        if transfer is None:
            return "no signed transfer is held for it"
        body, signature = parse_signed_statement(transfer)
        if transfer_order(body) != payload or not verify_signature(
                parse_order(payload)["key"], b"secure-transfer-v1", body, signature):
            return "the signed transfer held for it is not its order's"
        return None
    body, signature = parse_signed_statement(payload)
    if kind == 1:
        r = Reader(body)
        if r.u8() != 2:
            return "its payload is not a voucher (version 2)"
        issuer, key, _date, recipient, amount, voucher = (
            r.take(32), r.take(65), r.take(24), r.take(32), r.take(12), r.take(16))
        keys = peer_keys(sources, issuer)
        signer, label, ident, checks = key, b"secure-voucher-v2", voucher, [
            (issuer.hex() in sources["trustedIssuers"], "its issuer is not trusted"),
            (keys is not None, "no key-event log of its issuer is held"),
            (keys is not None and key in keys, "its issuer key is not in the issuer's log"),
            (recipient == wallet, "its voucher is for another wallet"),
            (issuer + amount == entry["amount"], "its amount is not the voucher's"),
            (entry["counterparty"] == issuer, "its counterparty is not the issuer")]
        if entry["statement"] != issuer + voucher + sha256(body):
            return "its statement reference is not its statement's"
        if not verify_signature(signer, label, body, signature):
            return "its signature does not verify"
        for ok, problem in checks:
            if not ok:
                return problem
        return None
    elif kind in (3, 13):
        order = parse_order(transfer_order(body))
        keys = peer_keys(sources, order["payer"])
        signer, label, ident, checks = order["key"], b"secure-transfer-v1", order["transfer"], [
            (keys is not None, "no key-event log of its payer is held"),
            (keys is not None and order["key"] in keys, "its payer key is not in the payer's log"),
            (order["payee"] == wallet, "its transfer is for another wallet"),
            (order["amount"] == entry["amount"], "its amount is not the transfer's"),
            (entry["counterparty"] == order["payer"], "its counterparty is not the payer")]
    else:
        answer = parse_answer(body)
        keys = peer_keys(sources, answer["payee"])
        transfer = sent.get(answer["transfer"])
        sent_order = parse_order(transfer_order(parse_signed_statement(transfer)[0])) if transfer else None
        signer, ident = answer["key"], answer["transfer"]
        label = b"secure-refusal-v1" if kind == 4 else b"secure-receipt-v1"
        checks = [
            (transfer is not None, "no signed transfer of this wallet under its id is held"),
            (transfer is not None and answer["digest"] == sha256(parse_signed_statement(transfer)[0]),
             "it answers another transfer"),
            (sent_order is not None and sent_order["payee"] == answer["payee"] and answer["payer"] == wallet,
             "it is not by the payee of this wallet's transfer"),
            (keys is not None, "no key-event log of its payee is held"),
            (keys is not None and answer["key"] in keys, "its payee key is not in the payee's log"),
            (kind == 10 or answer["amount"] == entry["amount"], "its amount is not the transfer's")]
    if not verify_signature(signer, label, body, signature):
        return "its signature does not verify"
    if entry["statement"] != fingerprint(signer) + ident + sha256(body):
        return "its statement reference is not its statement's"
    for ok, problem in checks:
        if not ok:
            return problem
    return None


def verify_statements(bundle, wallet):
    sources = bundle["statementSources"]
    sent = {}
    for text in sources["sentTransfers"]:
        data = bytes.fromhex(text)
        sent[parse_order(transfer_order(parse_signed_statement(data)[0]))["transfer"]] = data
    problems, answered = [], {}
    for e in bundle["entries"]:
        if "entry" not in e:
            continue  # a contact settings entry, carried without content: no statement
        entry = parse_entry(bytes.fromhex(e["entry"]))
        problem = statement_problem(entry, wallet, sources, sent)
        if problem:
            problems.append(f"entry {entry['position']}: {problem}")
        if entry["kind"] in (4, 10):
            transfer = entry["statement"][32:48]
            if answered.setdefault(transfer, entry["kind"]) != entry["kind"]:
                problems.append(f"entry {entry['position']}: a payment both reversed and confirmed")
    return problems


def verify(bundle):
    problems = []
    if bundle.get("format") not in ("secure-audit-bundle-v1", "secure-audit-bundle-v2"):
        return ["unknown format"]
    wallet = bytes.fromhex(bundle["walletID"])
    events = [parse_signed_event(bytes.fromhex(e["event"])) for e in bundle["keyEvents"]]
    # The key-event log: inception, then each rotation chained to it under pre-rotation.
    for i, ev in enumerate(events):
        if ev["sequence"] != i or ev["kind"] != (0 if i == 0 else 1):
            problems.append(f"event {i}: wrong sequence or kind")
        if not verify_signature(ev["key"], b"secure-key-event-v1", ev["body"], ev["signature"]):
            problems.append(f"event {i}: not signed by the key it puts in force")
        if i == 0:
            if ev["digest"] != wallet or ev["previous"] != bytes(32) or ev["position"] != 0:
                problems.append("the inception is not this wallet's")
            continue
        prev = events[i - 1]
        if ev["previous"] != prev["digest"]:
            problems.append(f"event {i}: does not name the previous event's digest")
        if sha256(SPKI_PREFIX + ev["key"]) != prev["next"]:
            problems.append(f"event {i}: puts in force a key the previous event did not commit to")
        if ev["position"] <= prev["position"]:
            problems.append(f"event {i}: ledger position does not move forward")
        if ev.get("contactKey", bytes(32)) != bytes(32) and ev.get("contactKey") == prev.get("contactKey"):
            problems.append(f"event {i}: puts in force the contact key the previous event put in force")
        if ev["countersignature"] is not None and not verify_signature(
                prev["key"], b"secure-key-event-countersignature-v1", ev["body"], ev["countersignature"]):
            problems.append(f"event {i}: countersignature is not the previous key's")
    keys = [k["spki"] for k in bundle["publicKeys"]]
    if keys != [(SPKI_PREFIX + ev["key"]).hex() for ev in events]:
        problems.append("the public keys are not the log's signing keys")

    def check_checkpoint(name, signed):
        c = parse_signed_checkpoint(signed)
        s = c["sequence"]
        if c["wallet"] != wallet or s >= len(events):
            problems.append(f"{name}: another wallet, or a key sequence the log lacks")
            return c
        ev = events[s]
        if c["key"] != ev["key"] or c["event_position"] != ev["position"] or c["size"] <= ev["position"]:
            problems.append(f"{name}: not dated by the key event it names")
        if s + 1 < len(events) and c["size"] > events[s + 1]["position"]:
            problems.append(f"{name}: signed by key {s} after its retirement")
        if not verify_signature(c["key"], b"secure-checkpoint-v1", c["body"], c["signature"]):
            problems.append(f"{name}: signature does not verify")
        return c

    end = check_checkpoint("range checkpoint", bytes.fromhex(bundle["rangeCheckpoint"]))
    top = check_checkpoint("latest checkpoint", bytes.fromhex(bundle["latestCheckpoint"]))
    # Each key event is recorded in the ledger at its position, as the payload of that entry.
    for ev, e in zip(events, bundle["keyEvents"]):
        leaf = bytes.fromhex(e["entry"])
        payload = bytes.fromhex(e["event"])
        position, _ = entry_position_and_tail(leaf)
        if position != ev["position"] or leaf[-32 - len(payload) - 4:-32] != struct.pack(">I", len(payload)) + payload:
            problems.append(f"event {ev['sequence']}: its entry does not record it at its position")
        if not inclusion_ok(leaf, position, top["size"], [bytes.fromhex(h) for h in e["proof"]], top["root"]):
            problems.append(f"event {ev['sequence']}: its entry is not in the latest checkpoint")
    # The range: consecutive positions, each proven in the range checkpoint, ending at its size.
    start = bundle["from"]
    if start + len(bundle["entries"]) != end["size"] or bundle["to"] != end["size"]:
        problems.append("the range does not end at the range checkpoint")
    for offset, e in enumerate(bundle["entries"]):
        proof = [bytes.fromhex(h) for h in e["proof"]]
        if "entry" not in e:
            # Version 2: a contact settings entry as (position, id, digest, leaf hash, previous link) only.
            if bundle["format"] != "secure-audit-bundle-v2" or len(bytes.fromhex(e["leafHash"])) != 32:
                problems.append(f"entry {start + offset}: neither whole nor a valid opaque entry")
                continue
            position = e["position"]
            if position != start + offset:
                problems.append(f"entry {start + offset}: out of place")
            if not inclusion_ok(None, position, end["size"], proof, end["root"], bytes.fromhex(e["leafHash"])):
                problems.append(f"entry {position}: not in the range checkpoint")
            continue
        leaf = bytes.fromhex(e["entry"])
        position, _ = entry_position_and_tail(leaf)
        if position != start + offset or e["position"] != position:
            problems.append(f"entry {start + offset}: out of place")
        if not inclusion_ok(leaf, position, end["size"], proof, end["root"]):
            problems.append(f"entry {position}: not in the range checkpoint")
    if not consistency_ok(end["size"], top["size"], end["root"], top["root"],
                          [bytes.fromhex(h) for h in bundle["consistencyProof"]]):
        problems.append("the latest checkpoint does not extend the range checkpoint")
    if "statementSources" in bundle:
        problems += verify_statements(bundle, wallet)
    return problems


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    with open(sys.argv[1], encoding="utf-8") as handle:
        bundle = json.load(handle)
    try:
        problems = verify(bundle)
    except (ValueError, KeyError, IndexError) as error:
        problems = [f"malformed bundle: {error}"]
    for problem in problems:
        print("INVALID:", problem)
    if not problems:
        print(f"OK: {len(bundle['keyEvents'])} key events, entries {bundle['from']}..{bundle['to'] - 1}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
