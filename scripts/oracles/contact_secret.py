#!/usr/bin/env python3
"""The contact secret of an exchange (docs/PROTOCOL.md, "Contacts → The exchange", "Contact secret"), computed
independently of the wallet from the document alone: hashlib and hmac for SHA-256 and HMAC-SHA256,
cryptography's HKDF and ML-KEM-1024 (OpenSSL) for the keys and the decapsulations.

  contact_secret.py
      Reads one JSON object on standard input, every value hex:
        {"channelBinding", "nonce", "initiatorWalletID", "responderWalletID",
         "initiatorSeed", "responderSeed"          (each side's ML-KEM-1024 seed d || z, 64 bytes),
         "initiatorCiphertext"                     (made by the initiator, to the responder's key),
         "responderCiphertext"                     (made by the responder, to the initiator's key),
         "probeBinding"                            (the channel binding of a later `pay --to` channel)}
      and prints one JSON object: the SHA-256 of both encapsulation keys and both ciphertexts, both shared
      secrets (each decapsulated here by the side that receives it), the transcript digest, the contact
      secret, both key confirmations, the discovery key, the file key, the probe and the answer.

The oracle computes and reports; it judges nothing. The Swift test (ContactExchangeTests) compares.
"""
import hashlib
import hmac
import json
import sys

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import mlkem
from cryptography.hazmat.primitives.kdf.hkdf import HKDF


def label(text):
    """A domain-separation label: its UTF-8 bytes and a terminating zero byte."""
    return text.encode() + b"\x00"


def hkdf(key, salt, info):
    # An empty salt is HKDF's default of 32 zero bytes (RFC 5869, 2.2); HMAC pads an empty key to the same.
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=salt or None, info=info).derive(key)


def mac(key, message):
    return hmac.new(key, message, hashlib.sha256).digest()


def main():
    request = {name: bytes.fromhex(value) for name, value in json.load(sys.stdin).items()}
    binding = request["channelBinding"]
    if len(binding) > 255:
        raise ValueError("a channel binding is at most 255 bytes (u8 length)")
    initiator_key = mlkem.MLKEM1024PrivateKey.from_seed_bytes(request["initiatorSeed"])
    responder_key = mlkem.MLKEM1024PrivateKey.from_seed_bytes(request["responderSeed"])
    initiator_ek = initiator_key.public_key().public_bytes_raw()
    responder_ek = responder_key.public_key().public_bytes_raw()
    # ss_I: the initiator made ct_I to the responder's key, so the responder opens it; ss_R the other way.
    shared_initiator = responder_key.decapsulate(request["initiatorCiphertext"])
    shared_responder = initiator_key.decapsulate(request["responderCiphertext"])

    transcript = hashlib.sha256(
        label("secure-contact-transcript-v1")
        + bytes([len(binding)]) + binding
        + request["nonce"]
        + request["initiatorWalletID"] + request["responderWalletID"]
        + hashlib.sha256(initiator_ek).digest() + hashlib.sha256(responder_ek).digest()
        + request["initiatorCiphertext"] + request["responderCiphertext"]
    ).digest()
    secret = hkdf(shared_initiator + shared_responder, transcript, b"secure-contact-secret-v1")
    discovery = hkdf(secret, b"", b"secure-contact-discovery-key-v1")
    result = {
        "initiatorKeySHA256": hashlib.sha256(initiator_ek).hexdigest(),
        "responderKeySHA256": hashlib.sha256(responder_ek).hexdigest(),
        "initiatorCiphertextSHA256": hashlib.sha256(request["initiatorCiphertext"]).hexdigest(),
        "responderCiphertextSHA256": hashlib.sha256(request["responderCiphertext"]).hexdigest(),
        "initiatorShared": shared_initiator.hex(),
        "responderShared": shared_responder.hex(),
        "transcript": transcript.hex(),
        "secret": secret.hex(),
        "initiatorConfirmation": mac(secret, label("secure-contact-key-confirm-v1") + b"\x01").hex(),
        "responderConfirmation": mac(secret, label("secure-contact-key-confirm-v1") + b"\x02").hex(),
        "discoveryKey": discovery.hex(),
        "fileKey": hkdf(secret, b"", b"secure-contact-file-key-v1").hex(),
        "probe": mac(discovery, label("secure-contact-probe-v1") + request["probeBinding"]).hex(),
        "answer": mac(discovery, label("secure-contact-answer-v1") + request["probeBinding"]).hex(),
    }
    json.dump(result, sys.stdout, indent=1, sort_keys=True)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
