#!/usr/bin/env python3
"""A virtual PIV card for the token matrix. THIS IS NOT A SECURE CARD.

It keeps its private keys, PIN, PUK and management key in plain files of a state folder, and anyone who
can read that folder has them. It exists so that the wallet can be tested through the very PKCS#11 modules
a YubiKey or Nitrokey user loads (Yubico's ykcs11 and OpenSC's opensc-pkcs11), which talk to a card
through pcscd. It implements enough of NIST SP 800-73-4 and of the YubiKey PIV extensions for both:

- SELECT of the PIV application; GET DATA and PUT DATA of data objects (CHUID, CCC, discovery,
  certificates of 9A, 9C, 9D, 9E and the retired slots 82-95, the attestation certificate in F9);
- VERIFY (PIN, 3 tries), CHANGE REFERENCE DATA (PIN, PUK), RESET RETRY COUNTER (PUK, 3 tries);
- GENERAL AUTHENTICATE: the 9B management key (3DES or AES, YubiKey's challenge-response), ECDSA P-256
  signatures and P-256 ECDH (tag 85) with the slot keys;
- GENERATE ASYMMETRIC KEY PAIR (P-256 only) with the YubiKey PIN and touch policies. "PIN always" (9C's
  default) is enforced: each use needs a VERIFY since the last use. A touch is a file: a key whose touch
  policy asks for one holds its signature or ECDH until the file `touch` appears in the state folder, for
  at most 15 s, and then fails with 6982 as a YubiKey does when nobody touches it;
- the YubiKey instructions GET VERSION (FD), GET SERIAL (F8), GET METADATA (F7), ATTEST (F9), SET
  MANAGEMENT KEY (FF), and IMPORT ASYMMETRIC KEY (FE, P-256 only). An imported key reports origin
  "imported" in its metadata, and ATTEST refuses it (6A80), as a YubiKey does;
- an attestation chain with one intermediate, as newer YubiKeys have: a test root CA signs an intermediate,
  the intermediate signs the F9 certificate, and F9 signs each slot's attestation certificate. The root and
  the intermediate are written to the state folder. They are test CAs, NOT Yubico's: nothing they sign
  proves anything about real hardware.

It connects to vsmartcard's vpcd reader driver inside pcscd, over loopback: vpcd listens, the card is the
client. The vpcd protocol is a 2-byte big-endian length, then either one control byte (0 power off,
1 power on, 2 reset, 4 get ATR) or a command APDU; the card answers ATR requests and APDUs only.

Usage:
  virtual_piv.py init --state DIR --serial N [--pin PIN --puk PUK]   make a new card's state
  virtual_piv.py run --state DIR --port P [--log FILE] [--touch-timeout S]   insert the card into vpcd's reader
  virtual_piv.py certify --public-key PEM --subject CN --out PEM --ca-dir DIR   a setup certificate
"""

import argparse
import datetime
import hashlib
import json
import os
import secrets
import signal
import socket
import struct
import sys
import time

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, utils as asym_utils
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.x509.oid import NameOID

try:  # cryptography 43 and later keep 3DES among the "decrepit" algorithms
    from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
except ImportError:  # pragma: no cover
    TripleDES = algorithms.TripleDES

PIV_AID = bytes.fromhex("A000000308")  # the registered part; the full AID adds 00001000 0100
# A YubiKey 5 NFC's ATR, so OpenSC picks its YubiKey-aware PIV code path.
ATR = bytes.fromhex("3BFD1300008131FE158073C021C057597562694B657940")
# The YubiKey default management key (SP 800-73 leaves it to the vendor). Firmware 5.4 uses 3DES.
DEFAULT_MANAGEMENT_KEY = bytes.fromhex("010203040506070801020304050607080102030405060708")
VERSION = bytes([5, 4, 3])
TRIES_MAX = 3
RESPONSE_CHUNK = 256  # bytes per response APDU before 61xx chaining, as short APDUs allow
STATE_FILE = "state.json"

# Key references and the certificate objects that belong to them (SP 800-73-4 part 1, table 4b).
CERT_OBJECT = {0x9A: "5fc105", 0x9C: "5fc10a", 0x9D: "5fc10b", 0x9E: "5fc101", 0xF9: "5fff01"}
for index in range(20):
    CERT_OBJECT[0x82 + index] = "%06x" % (0x5FC10D + index)
KEY_SLOTS = set(CERT_OBJECT)
# YubiKey's default PIN policy per slot: 1 never, 2 once per session, 3 always.
DEFAULT_PIN_POLICY = {0x9A: 2, 0x9C: 3, 0x9D: 2, 0x9E: 1}
ALGORITHM_P256 = 0x11
ALGORITHM_3DES, ALGORITHM_AES128, ALGORITHM_AES192, ALGORITHM_AES256 = 0x03, 0x08, 0x0A, 0x0C
MANAGEMENT_KEY_LENGTH = {ALGORITHM_3DES: 24, ALGORITHM_AES128: 16, ALGORITHM_AES192: 24, ALGORITHM_AES256: 32}

SW_OK = b"\x90\x00"
SW_SECURITY = b"\x69\x82"
SW_BLOCKED = b"\x69\x83"
SW_WRONG_DATA = b"\x6a\x80"
SW_NOT_FOUND = b"\x6a\x82"
SW_WRONG_P1P2 = b"\x6a\x86"
SW_INS_UNKNOWN = b"\x6d\x00"
SW_CONDITIONS = b"\x69\x85"
SW_WRONG_LENGTH = b"\x67\x00"

# Key origins in GET METADATA (tag 03) and touch policies (tag AB / the 2nd policy byte), as a YubiKey has them.
ORIGIN_GENERATED, ORIGIN_IMPORTED = 1, 2
TOUCH_NEVER, TOUCH_ALWAYS, TOUCH_CACHED = 1, 2, 3
# A YubiKey gives up waiting for a touch after about 15 s and answers 6982; the card never waits longer.
TOUCH_TIMEOUT_SECONDS_MAX = 15.0
# A "cached" touch is good for 15 s after it was given (Yubico's PIV touch policy documentation).
TOUCH_CACHE_SECONDS = 15.0
TOUCH_FILE = "touch"  # in the state folder: a test makes it to touch the card; a signature consumes it
TOUCH_WANTED_FILE = "touch-wanted"  # in the state folder while the card waits for a touch
# The form factor extension (1.3.6.1.4.1.41482.3.9): 1 is a USB-A keychain key, like the YubiKey 5 NFC
# whose ATR the card sends.
FORM_FACTOR_USB_A_KEYCHAIN = 1
ATTESTATION_ROOT_FILE = "attestation-root.pem"
ATTESTATION_INTERMEDIATE_FILE = "attestation-intermediate.pem"


class CardError(Exception):
    """A status word to answer with."""

    def __init__(self, status):
        super().__init__(status.hex())
        self.status = status


# BER-TLV, as PIV uses it: tags of one to three bytes, lengths of one to three bytes.

def tlv(tag, value):
    tag_bytes = tag.to_bytes((tag.bit_length() + 7) // 8 or 1, "big")
    length = len(value)
    if length < 0x80:
        encoded = bytes([length])
    elif length <= 0xFF:
        encoded = bytes([0x81, length])
    else:
        encoded = bytes([0x82]) + length.to_bytes(2, "big")
    return tag_bytes + encoded + value


def parse_tlv(data):
    """Returns [(tag, value)] for a sequence of TLVs; raises CardError on malformed input."""
    items, offset = [], 0
    while offset < len(data):
        tag = data[offset]
        offset += 1
        if tag & 0x1F == 0x1F:
            while True:
                if offset >= len(data):
                    raise CardError(SW_WRONG_DATA)
                tag = (tag << 8) | data[offset]
                offset += 1
                if not data[offset - 1] & 0x80:
                    break
        if offset >= len(data):
            raise CardError(SW_WRONG_DATA)
        length = data[offset]
        offset += 1
        if length & 0x80:
            count = length & 0x7F
            if count not in (1, 2) or offset + count > len(data):
                raise CardError(SW_WRONG_DATA)
            length = int.from_bytes(data[offset:offset + count], "big")
            offset += count
        if offset + length > len(data):
            raise CardError(SW_WRONG_DATA)
        items.append((tag, data[offset:offset + length]))
        offset += length
    return items


def tlv_dict(data):
    return {tag: value for tag, value in parse_tlv(data)}


def pad_pin(text):
    raw = text.encode()
    if not 6 <= len(raw) <= 8:
        raise SystemExit("a PIV PIN or PUK is 6 to 8 characters")
    return raw + b"\xff" * (8 - len(raw))


# State kept in a folder: one JSON file, replaced atomically on every change.

def load_state(directory):
    with open(os.path.join(directory, STATE_FILE)) as handle:
        return json.load(handle)


def save_state(directory, state):
    path = os.path.join(directory, STATE_FILE)
    temporary = path + ".tmp"
    with open(temporary, "w") as handle:
        json.dump(state, handle, indent=1, sort_keys=True)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def private_key_pem(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


def make_certificate(subject, issuer, public_key, signing_key, extensions=(), ca=False, days=3650):
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(public_key)
               .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
               .not_valid_after(now + datetime.timedelta(days=days)))
    if ca:
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
    for oid, value in extensions:
        builder = builder.add_extension(x509.UnrecognizedExtension(oid, value), critical=False)
    return builder.sign(signing_key, hashes.SHA256())


def write_pem(path, certificate):
    with open(path, "wb") as handle:
        handle.write(certificate.public_bytes(serialization.Encoding.PEM))


def init_state(directory, serial, pin, puk):
    """A fresh card: default-like PIN and PUK given by the caller, the YubiKey default management key,
    no keys but the attestation key in F9. Its certificate chains through a test intermediate to a test
    root, as a YubiKey with firmware 5.7.4 or later chains through Yubico's intermediates. The root and the
    intermediate are kept beside the state (their private keys are not kept: nothing else is signed)."""
    os.makedirs(directory, mode=0o700, exist_ok=True)
    root_key = ec.generate_private_key(ec.SECP256R1())
    root_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME,
                                              "secure test PIV attestation root CA (NOT SECURE, NOT YUBICO)")])
    root_cert = make_certificate(root_name, root_name, root_key.public_key(), root_key, ca=True)
    intermediate_key = ec.generate_private_key(ec.SECP256R1())
    intermediate_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME,
                                                      "secure test PIV attestation intermediate CA (NOT SECURE)")])
    intermediate_cert = make_certificate(intermediate_name, root_name, intermediate_key.public_key(), root_key,
                                         ca=True)
    attestation_key = ec.generate_private_key(ec.SECP256R1())
    attestation_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME,
                                                     "secure virtual PIV attestation %d (NOT SECURE)" % serial)])
    attestation_cert = make_certificate(attestation_name, intermediate_name, attestation_key.public_key(),
                                        intermediate_key, ca=True)
    write_pem(os.path.join(directory, ATTESTATION_ROOT_FILE), root_cert)
    write_pem(os.path.join(directory, ATTESTATION_INTERMEDIATE_FILE), intermediate_cert)
    guid = secrets.token_bytes(16)
    # CHUID: FASC-N (all 9s style placeholder), GUID, expiry, empty signature (SP 800-73-4 part 1, 3.1.2).
    chuid = (tlv(0x30, bytes.fromhex("d4e739da739ced39ce739d836858210842108421c84210c3eb")) + tlv(0x34, guid)
             + tlv(0x35, b"20991231") + tlv(0x3E, b"") + tlv(0xFE, b""))
    ccc = (tlv(0xF0, bytes.fromhex("a00000011600") + guid[:15]) + tlv(0xF1, b"\x21") + tlv(0xF2, b"\x21")
           + tlv(0xF3, b"") + tlv(0xF4, b"\x00") + tlv(0xF5, b"\x10") + tlv(0xF6, b"") + tlv(0xF7, b"")
           + tlv(0xFA, b"") + tlv(0xFB, b"") + tlv(0xFC, b"") + tlv(0xFD, b"") + tlv(0xFE, b""))
    state = {
        "warning": "virtual PIV test card: NOT A SECURE CARD, every secret here is in plain text",
        "serial": serial,
        "pin": pad_pin(pin).hex(), "pin_tries_left": TRIES_MAX,
        "puk": pad_pin(puk).hex(), "puk_tries_left": TRIES_MAX,
        "management_key": DEFAULT_MANAGEMENT_KEY.hex(), "management_algorithm": ALGORITHM_3DES,
        "keys": {"f9": {"algorithm": ALGORITHM_P256, "pin_policy": 1, "touch_policy": TOUCH_NEVER,
                        "origin": ORIGIN_IMPORTED,
                        "private_key": private_key_pem(attestation_key)}},
        "objects": {
            "5fc102": chuid.hex(), "5fc107": ccc.hex(),
            "5fff01": (tlv(0x70, attestation_cert.public_bytes(serialization.Encoding.DER))
                       + tlv(0x71, b"\x00") + tlv(0xFE, b"")).hex(),
        },
    }
    save_state(directory, state)


class Card:
    """One card: the persistent state, and the volatile security state of the current power-up."""

    def __init__(self, directory, log=None, stall_file=None, touch_timeout=TOUCH_TIMEOUT_SECONDS_MAX):
        self.directory = directory
        self.state = load_state(directory)
        self.log = log
        self.stall_file = stall_file
        self.touch_timeout = min(touch_timeout, TOUCH_TIMEOUT_SECONDS_MAX)
        self.touched_at = {}  # slot -> monotonic time of its last touch, for the "cached" policy
        self.power_up()

    def power_up(self):
        self.pin_verified = False
        self.pin_fresh = False  # a VERIFY since the last use of a "PIN always" key
        self.management_authenticated = False
        self.management_witness = None
        self.chained = b""
        self.pending = b""

    def save(self):
        save_state(self.directory, self.state)

    # APDU framing: command chaining (CLA bit 0x10) in, 61xx + GET RESPONSE out.

    def process(self, apdu):
        if len(apdu) < 4:
            return SW_WRONG_LENGTH
        cla, ins, p1, p2 = apdu[0], apdu[1], apdu[2], apdu[3]
        data, extended = b"", False
        if len(apdu) > 5 and apdu[4] == 0 and len(apdu) >= 7:
            extended = True
            length = int.from_bytes(apdu[5:7], "big")
            data = apdu[7:7 + length]
        elif len(apdu) > 5:
            data = apdu[5:5 + apdu[4]]
        if ins == 0xC0:
            return self.next_chunk()
        self.pending = b""
        if cla & 0x10:
            self.chained += data
            return SW_OK
        data, self.chained = self.chained + data, b""
        try:
            response = self.dispatch(ins, p1, p2, data)
            status = SW_OK
        except CardError as error:
            response, status = b"", error.status
        if extended or len(response) <= RESPONSE_CHUNK:
            return response + status
        self.pending = response
        return self.next_chunk()

    def next_chunk(self):
        if not self.pending:
            return SW_CONDITIONS
        chunk, self.pending = self.pending[:RESPONSE_CHUNK], self.pending[RESPONSE_CHUNK:]
        if self.pending:
            return chunk + bytes([0x61, min(len(self.pending), 0xFF) if len(self.pending) < 0x100 else 0])
        return chunk + SW_OK

    def dispatch(self, ins, p1, p2, data):
        handlers = {
            0xA4: self.select, 0xCB: self.get_data, 0xDB: self.put_data, 0x20: self.verify,
            0x24: self.change_reference, 0x2C: self.reset_retry_counter, 0x87: self.general_authenticate,
            0x47: self.generate, 0xFD: self.get_version, 0xF8: self.get_serial, 0xF7: self.get_metadata,
            0xF9: self.attest, 0xFF: self.set_management_key, 0xFE: self.import_key,
        }
        handler = handlers.get(ins)
        if handler is None:
            raise CardError(SW_INS_UNKNOWN)
        return handler(p1, p2, data)

    # SP 800-73-4 part 2 instructions.

    def select(self, p1, p2, data):
        if p1 != 0x04 or not data.startswith(PIV_AID) or not PIV_AID.startswith(data[:5]):
            raise CardError(SW_NOT_FOUND)
        # Selecting the application again keeps the security status, as a YubiKey does; only a reset or
        # power cycle clears it.
        # The application property template as a YubiKey 5 returns it.
        return tlv(0x61, tlv(0x4F, bytes.fromhex("000010000100")) + tlv(0x79, tlv(0x4F, PIV_AID)))

    def get_data(self, p1, p2, data):
        if (p1, p2) != (0x3F, 0xFF):
            raise CardError(SW_WRONG_P1P2)
        fields = tlv_dict(data)
        tag = fields.get(0x5C)
        if tag is None:
            raise CardError(SW_WRONG_DATA)
        if tag == b"\x7e":  # the discovery object: PIV AID, PIN usage policy (PIN only)
            return tlv(0x7E, tlv(0x4F, PIV_AID + bytes.fromhex("000010000100")) + tlv(0x5F2F, b"\x40\x00"))
        value = self.state["objects"].get(tag.hex())
        if value is None:
            raise CardError(SW_NOT_FOUND)
        return tlv(0x53, bytes.fromhex(value))

    def put_data(self, p1, p2, data):
        if not self.management_authenticated:
            raise CardError(SW_SECURITY)
        fields = tlv_dict(data)
        tag, value = fields.get(0x5C), fields.get(0x53)
        if tag is None or value is None or len(tag) != 3:
            raise CardError(SW_WRONG_DATA)
        if value:
            self.state["objects"][tag.hex()] = value.hex()
        else:
            self.state["objects"].pop(tag.hex(), None)
        self.save()
        return b""

    def check_secret(self, secret_name, tries_name, offered):
        """A PIN or PUK check with its retry counter; the counter is saved before the answer leaves."""
        if self.state[tries_name] == 0:
            raise CardError(SW_BLOCKED)
        if len(offered) != 8 or not secrets.compare_digest(offered, bytes.fromhex(self.state[secret_name])):
            self.state[tries_name] -= 1
            self.save()
            if self.state[tries_name] == 0:
                raise CardError(SW_BLOCKED)
            raise CardError(bytes([0x63, 0xC0 | self.state[tries_name]]))
        if self.state[tries_name] != TRIES_MAX:
            self.state[tries_name] = TRIES_MAX
            self.save()

    def verify(self, p1, p2, data):
        if p2 != 0x80:
            raise CardError(SW_WRONG_P1P2)
        if p1 == 0xFF:
            self.pin_verified = self.pin_fresh = False
            return b""
        if not data:  # a status query: verified, or the tries left
            if self.pin_verified:
                return b""
            if self.state["pin_tries_left"] == 0:
                raise CardError(SW_BLOCKED)
            raise CardError(bytes([0x63, 0xC0 | self.state["pin_tries_left"]]))
        self.pin_verified = self.pin_fresh = False
        self.check_secret("pin", "pin_tries_left", data)
        self.pin_verified = self.pin_fresh = True
        return b""

    def change_reference(self, p1, p2, data):
        names = {0x80: ("pin", "pin_tries_left"), 0x81: ("puk", "puk_tries_left")}
        if p2 not in names or len(data) != 16:
            raise CardError(SW_WRONG_DATA if p2 in names else SW_WRONG_P1P2)
        secret_name, tries_name = names[p2]
        self.check_secret(secret_name, tries_name, data[:8])
        self.state[secret_name] = data[8:].hex()
        self.save()
        return b""

    def reset_retry_counter(self, p1, p2, data):
        if p2 != 0x80 or len(data) != 16:
            raise CardError(SW_WRONG_DATA)
        self.check_secret("puk", "puk_tries_left", data[:8])
        self.state["pin"] = data[8:].hex()
        self.state["pin_tries_left"] = TRIES_MAX
        self.save()
        return b""

    def general_authenticate(self, p1, p2, data):
        fields = parse_tlv(data)
        if len(fields) != 1 or fields[0][0] != 0x7C:
            raise CardError(SW_WRONG_DATA)
        inner = tlv_dict(fields[0][1])
        if p2 == 0x9B:
            return self.authenticate_management_key(p1, inner)
        key = self.slot_key(p2)
        if p1 != key["algorithm"] or p1 != ALGORITHM_P256:
            raise CardError(SW_WRONG_P1P2)
        if 0x81 not in inner and 0x85 not in inner:
            raise CardError(SW_WRONG_DATA)
        self.check_pin_policy(key)
        self.wait_for_touch(p2, key)
        private_key = serialization.load_pem_private_key(key["private_key"].encode(), None)
        if 0x81 in inner:  # a signature of a digest the host computed
            digest = inner[0x81]
            digest = digest[:32] if len(digest) >= 32 else b"\x00" * (32 - len(digest)) + digest
            self.maybe_stall()
            signature = private_key.sign(digest, ec.ECDSA(asym_utils.Prehashed(hashes.SHA256())))
            return tlv(0x7C, tlv(0x82, signature))
        if 0x85 in inner:  # ECDH with the peer's uncompressed point
            try:
                peer = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), inner[0x85])
            except ValueError:
                raise CardError(SW_WRONG_DATA)
            return tlv(0x7C, tlv(0x82, private_key.exchange(ec.ECDH(), peer)))
        raise CardError(SW_WRONG_DATA)  # not reached: checked before the PIN and the touch

    def wait_for_touch(self, slot, key):
        """A touch is the file `touch` in the state folder. While the card waits for one, it keeps the file
        `touch-wanted` there, so a test (or a person) can see that it waits. A touch is used up by the
        operation it allows: the card removes the file. After the timeout (15 s at most, as a YubiKey)
        the operation fails with 6982, security status not satisfied, which is what a YubiKey answers
        when nobody touched it."""
        policy = key.get("touch_policy", TOUCH_NEVER)
        if policy == TOUCH_NEVER:
            return
        now = time.monotonic()
        if policy == TOUCH_CACHED and now - self.touched_at.get(slot, -TOUCH_CACHE_SECONDS - 1) < TOUCH_CACHE_SECONDS:
            return
        touch_path = os.path.join(self.directory, TOUCH_FILE)
        wanted_path = os.path.join(self.directory, TOUCH_WANTED_FILE)
        with open(wanted_path, "w") as handle:
            handle.write("slot %02x waits for a touch: create %s\n" % (slot, touch_path))
        try:
            deadline = now + self.touch_timeout
            while not os.path.exists(touch_path):
                if time.monotonic() >= deadline:
                    raise CardError(SW_SECURITY)
                time.sleep(0.02)
            os.unlink(touch_path)
            self.touched_at[slot] = time.monotonic()
        finally:
            if os.path.exists(wanted_path):
                os.unlink(wanted_path)

    def maybe_stall(self):
        """For removal tests: while the stall file exists, a signature never finishes, so the test can
        pull the card (stop this process) in the middle of one. The card says where it stopped."""
        if not self.stall_file or not os.path.exists(self.stall_file):
            return
        with open(self.stall_file + ".reached", "w") as handle:
            handle.write("stalled in a signature\n")
        while os.path.exists(self.stall_file):
            time.sleep(0.05)

    def slot_key(self, slot):
        if slot not in KEY_SLOTS:
            raise CardError(SW_WRONG_P1P2)
        key = self.state["keys"].get("%02x" % slot)
        if key is None:
            raise CardError(SW_NOT_FOUND)
        return key

    def check_pin_policy(self, key):
        policy = key["pin_policy"]
        if policy == 3:
            if not self.pin_fresh:
                raise CardError(SW_SECURITY)
            self.pin_fresh = False
        elif policy == 2 and not self.pin_verified:
            raise CardError(SW_SECURITY)

    def management_cipher(self):
        key = bytes.fromhex(self.state["management_key"])
        algorithm = self.state["management_algorithm"]
        block = TripleDES(key) if algorithm == ALGORITHM_3DES else algorithms.AES(key)
        return Cipher(block, modes.ECB()), (8 if algorithm == ALGORITHM_3DES else 16)

    def authenticate_management_key(self, p1, inner):
        """YubiKey's mutual authentication: the card sends an encrypted witness, the host returns it
        decrypted with a challenge of its own, and the card answers the challenge encrypted."""
        if p1 != self.state["management_algorithm"]:
            raise CardError(SW_WRONG_P1P2)
        cipher, block = self.management_cipher()
        if inner.get(0x80) == b"" and 0x81 not in inner:
            self.management_authenticated = False
            self.management_witness = secrets.token_bytes(block)
            encryptor = cipher.encryptor()
            return tlv(0x7C, tlv(0x80, encryptor.update(self.management_witness) + encryptor.finalize()))
        if 0x80 in inner and 0x81 in inner and self.management_witness is not None:
            witness, self.management_witness = self.management_witness, None
            if not secrets.compare_digest(inner[0x80], witness) or len(inner[0x81]) != block:
                raise CardError(SW_SECURITY)
            self.management_authenticated = True
            encryptor = cipher.encryptor()
            return tlv(0x7C, tlv(0x82, encryptor.update(inner[0x81]) + encryptor.finalize()))
        raise CardError(SW_WRONG_DATA)

    def generate(self, p1, p2, data):
        if not self.management_authenticated:
            raise CardError(SW_SECURITY)
        if p2 not in KEY_SLOTS or p2 == 0xF9:
            raise CardError(SW_WRONG_P1P2)
        fields = parse_tlv(data)
        if len(fields) != 1 or fields[0][0] != 0xAC:
            raise CardError(SW_WRONG_DATA)
        control = tlv_dict(fields[0][1])
        if control.get(0x80) != bytes([ALGORITHM_P256]):
            raise CardError(SW_WRONG_DATA)  # only P-256 keys live on this card
        pin_policy, touch_policy = self.policies(p2, control)
        private_key = ec.generate_private_key(ec.SECP256R1())
        self.store_key(p2, private_key, pin_policy, touch_policy, ORIGIN_GENERATED)
        return tlv(0x7F49, tlv(0x86, self.public_point(private_key)))

    @staticmethod
    def policies(slot, fields):
        """The PIN policy (tag AA) and touch policy (tag AB) of a GENERATE or IMPORT; 0 or absent means
        the slot's default. Values outside a YubiKey's (PIN 1-3, touch 1-3) are refused."""
        pin_policy = fields.get(0xAA, b"\x00")
        touch_policy = fields.get(0xAB, b"\x00")
        if len(pin_policy) != 1 or len(touch_policy) != 1 or pin_policy[0] > 3 or touch_policy[0] > 3:
            raise CardError(SW_WRONG_DATA)
        return pin_policy[0] or DEFAULT_PIN_POLICY.get(slot, 2), touch_policy[0] or TOUCH_NEVER

    def store_key(self, slot, private_key, pin_policy, touch_policy, origin):
        self.state["keys"]["%02x" % slot] = {"algorithm": ALGORITHM_P256, "pin_policy": pin_policy,
                                             "touch_policy": touch_policy, "origin": origin,
                                             "private_key": private_key_pem(private_key)}
        self.touched_at.pop(slot, None)
        self.save()

    @staticmethod
    def public_point(private_key):
        return private_key.public_key().public_bytes(serialization.Encoding.X962,
                                                      serialization.PublicFormat.UncompressedPoint)

    # YubiKey extensions.

    def get_version(self, p1, p2, data):
        return VERSION

    def get_serial(self, p1, p2, data):
        return self.state["serial"].to_bytes(4, "big")

    def get_metadata(self, p1, p2, data):
        if p2 in (0x80, 0x81):
            secret, tries = ("pin", "pin_tries_left") if p2 == 0x80 else ("puk", "puk_tries_left")
            default = pad_pin("123456" if p2 == 0x80 else "12345678").hex() == self.state[secret]
            return (tlv(0x01, b"\xff") + tlv(0x05, bytes([default]))
                    + tlv(0x06, bytes([TRIES_MAX, self.state[tries]])))
        if p2 == 0x9B:
            default = self.state["management_key"] == DEFAULT_MANAGEMENT_KEY.hex()
            return (tlv(0x01, bytes([self.state["management_algorithm"]])) + tlv(0x02, b"\x00\x01")
                    + tlv(0x05, bytes([default])))
        key = self.slot_key(p2)
        private_key = serialization.load_pem_private_key(key["private_key"].encode(), None)
        return (tlv(0x01, bytes([key["algorithm"]])) + tlv(0x02, bytes([key["pin_policy"], key["touch_policy"]]))
                + tlv(0x03, bytes([key["origin"]])) + tlv(0x04, tlv(0x86, self.public_point(private_key))))

    def attest(self, p1, p2, data):
        """An X.509 certificate for a key generated on the card, signed by the F9 attestation key, with
        YubiKey's extensions: firmware version, serial, PIN and touch policy, form factor."""
        if p1 == 0xF9:
            raise CardError(SW_WRONG_P1P2)
        key = self.slot_key(p1)
        if key["origin"] != ORIGIN_GENERATED:
            raise CardError(SW_WRONG_DATA)  # only keys generated here can be attested, as on a YubiKey
        attestation = self.state["keys"]["f9"]
        attestation_key = serialization.load_pem_private_key(attestation["private_key"].encode(), None)
        issuer_cert = x509.load_der_x509_certificate(tlv_dict(bytes.fromhex(self.state["objects"]["5fff01"]))[0x70])
        public_key = serialization.load_pem_private_key(key["private_key"].encode(), None).public_key()
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "YubiKey PIV Attestation %02x" % p1)])
        yubico = "1.3.6.1.4.1.41482.3."
        extensions = [
            (x509.ObjectIdentifier(yubico + "3"), VERSION),
            (x509.ObjectIdentifier(yubico + "7"), der_integer(self.state["serial"])),
            (x509.ObjectIdentifier(yubico + "8"), bytes([key["pin_policy"], key["touch_policy"]])),
            (x509.ObjectIdentifier(yubico + "9"), bytes([FORM_FACTOR_USB_A_KEYCHAIN])),
        ]
        certificate = make_certificate(subject, issuer_cert.subject, public_key, attestation_key, extensions)
        return certificate.public_bytes(serialization.Encoding.DER)

    def import_key(self, p1, p2, data):
        """Yubico's IMPORT ASYMMETRIC KEY: P1 the algorithm, P2 the slot, and for an EC key the private
        scalar in tag 06, then the optional PIN policy (AA) and touch policy (AB), as yubico-piv-tool's
        `-a import-key` sends them. Needs 9B authentication. The key's origin is "imported" from then on."""
        if not self.management_authenticated:
            raise CardError(SW_SECURITY)
        if p2 not in KEY_SLOTS:
            raise CardError(SW_WRONG_P1P2)
        if p1 != ALGORITHM_P256:
            raise CardError(SW_WRONG_P1P2)  # RSA, P-384 and the rest are not implemented here
        fields = parse_tlv(data)
        tags = [tag for tag, _ in fields]
        if len(set(tags)) != len(tags) or not set(tags) <= {0x06, 0xAA, 0xAB}:
            raise CardError(SW_WRONG_DATA)
        values = dict(fields)
        scalar = values.get(0x06, b"")
        if len(scalar) != 32:
            raise CardError(SW_WRONG_DATA)
        try:
            private_key = ec.derive_private_key(int.from_bytes(scalar, "big"), ec.SECP256R1())
        except ValueError:
            raise CardError(SW_WRONG_DATA)  # zero, or not below the group order
        pin_policy, touch_policy = self.policies(p2, values)
        self.store_key(p2, private_key, pin_policy, touch_policy, ORIGIN_IMPORTED)
        return b""

    def set_management_key(self, p1, p2, data):
        if not self.management_authenticated:
            raise CardError(SW_SECURITY)
        if len(data) < 3 or data[1] != 0x9B or data[0] not in MANAGEMENT_KEY_LENGTH:
            raise CardError(SW_WRONG_DATA)
        algorithm, length = data[0], data[2]
        if length != MANAGEMENT_KEY_LENGTH[algorithm] or len(data) != 3 + length:
            raise CardError(SW_WRONG_DATA)
        self.state["management_key"] = data[3:].hex()
        self.state["management_algorithm"] = algorithm
        self.save()
        return b""


def der_integer(value):
    """A non-negative integer as DER: tag 02, the shortest two's-complement big-endian bytes."""
    body = value.to_bytes(value.bit_length() // 8 + 1, "big")
    return bytes([0x02, len(body)]) + body


def receive_exactly(connection, count):
    data = b""
    while len(data) < count:
        chunk = connection.recv(count - len(data))
        if not chunk:
            raise ConnectionError("vpcd closed the connection")
        data += chunk
    # Linux turns quick ACKs off again after a while; set it after each read so no reply waits 40 ms.
    connection.setsockopt(socket.IPPROTO_TCP, getattr(socket, "TCP_QUICKACK", 12), 1)
    return data


def serve(card, host, port, log):
    """Connects to vpcd and answers it until vpcd goes away, then connects again (pcscd restarted)."""
    while True:
        try:
            connection = socket.create_connection((host, port), timeout=None)
        except OSError:
            time.sleep(0.1)
            continue
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        connection.setsockopt(socket.IPPROTO_TCP, getattr(socket, "TCP_QUICKACK", 12), 1)
        try:
            while True:
                length = struct.unpack(">H", receive_exactly(connection, 2))[0]
                message = receive_exactly(connection, length)
                if length == 1:
                    if message[0] in (0, 1, 2):  # power off, power on, reset: no answer
                        card.power_up()
                        continue
                    if message[0] == 4:
                        reply = ATR
                    else:
                        continue
                else:
                    reply = card.process(message)
                    if log:
                        log.write("> %s\n< %s\n" % (redact(message).hex(), reply.hex()))
                        log.flush()
                connection.sendall(struct.pack(">H", len(reply)) + reply)
        except (ConnectionError, OSError):
            connection.close()
            card.power_up()
            time.sleep(0.1)


def redact(apdu):
    """APDU logs never show a PIN, PUK or management key response."""
    if len(apdu) > 4 and apdu[1] in (0x20, 0x24, 0x2C):
        return apdu[:5] + b"\x00" * (len(apdu) - 5)
    return apdu


def certify(public_key_path, common_name, output_path, ca_directory):
    """A certificate for a public key read off the card, issued by a setup CA kept in `ca_directory`.
    PIV modules list a slot's key through the certificate in the slot; only its public key matters to them.
    (yubico-piv-tool 2.2's selfsign-certificate fails before reaching the card with OpenSSL 3 here.)"""
    key_path = os.path.join(ca_directory, "setup-ca.key.pem")
    if not os.path.exists(key_path):
        with open(key_path, "w") as handle:
            handle.write(private_key_pem(ec.generate_private_key(ec.SECP256R1())))
    with open(key_path, "rb") as handle:
        ca_key = serialization.load_pem_private_key(handle.read(), None)
    with open(public_key_path, "rb") as handle:
        public_key = serialization.load_pem_public_key(handle.read())
    issuer = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "secure virtual PIV setup CA (NOT SECURE)")])
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    certificate = make_certificate(subject, issuer, public_key, ca_key)
    with open(output_path, "wb") as handle:
        handle.write(certificate.public_bytes(serialization.Encoding.PEM))


def main():
    parser = argparse.ArgumentParser(description="A virtual PIV card for tests. NOT A SECURE CARD.")
    commands = parser.add_subparsers(dest="command", required=True)
    init = commands.add_parser("init", help="make a new card's state folder")
    init.add_argument("--state", required=True)
    init.add_argument("--serial", type=int, required=True)
    init.add_argument("--pin", default="123456")
    init.add_argument("--puk", default="12345678")
    run = commands.add_parser("run", help="insert the card into vpcd's reader")
    run.add_argument("--state", required=True)
    run.add_argument("--host", default="127.0.0.1")
    run.add_argument("--port", type=int, default=0x8C7B)
    run.add_argument("--log")
    run.add_argument("--stall-file", help="while this file exists, signatures stall (removal tests)")
    run.add_argument("--touch-timeout", type=float, default=TOUCH_TIMEOUT_SECONDS_MAX,
                     help="seconds a touch-policy key waits for the touch file (at most, and by default, 15)")
    certify_command = commands.add_parser("certify", help="issue a setup certificate for a card's public key")
    certify_command.add_argument("--public-key", required=True)
    certify_command.add_argument("--subject", required=True)
    certify_command.add_argument("--out", required=True)
    certify_command.add_argument("--ca-dir", required=True)
    arguments = parser.parse_args()
    if arguments.command == "certify":
        certify(arguments.public_key, arguments.subject, arguments.out, arguments.ca_dir)
        return
    if arguments.command == "init":
        init_state(arguments.state, arguments.serial, arguments.pin, arguments.puk)
        return
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    log = open(arguments.log, "a") if arguments.log else None
    if not 0 < arguments.touch_timeout <= TOUCH_TIMEOUT_SECONDS_MAX:
        raise SystemExit("--touch-timeout is more than 0 and at most %d seconds" % TOUCH_TIMEOUT_SECONDS_MAX)
    card = Card(arguments.state, log, arguments.stall_file, arguments.touch_timeout)
    serve(card, arguments.host, arguments.port, log)


if __name__ == "__main__":
    main()
