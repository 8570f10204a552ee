#!/usr/bin/env python3
"""Checks of PIV attestation, independent of the wallet: written from Yubico's published description of PIV
attestation (a slot certificate signed by the F9 key, whose certificate chains to Yubico's PIV root) and
X.509 alone. Uses only the standard library and the `cryptography` package.

  piv_attestation.py verify --attestation SLOT.pem --f9 F9.pem --root ROOT.pem [--intermediate I.pem ...]
                            --public-key PUB.pem [--serial N] [--pin-policy P] [--touch-policy T]
      The slot certificate (from `yubico-piv-tool -a attest`) must be signed by the F9 certificate, which
      must chain through the intermediates, in the order given, to the root. Every certificate must be
      within its validity, every issuer a CA. The attested public key must equal PUB.pem. Yubico's extensions
      (1.3.6.1.4.1.41482.3: .3 firmware, .7 serial, .8 PIN and touch policy, .9 form factor) must be
      well formed, and equal the values given. Prints a JSON summary and exits 0, or prints each problem
      and exits 1.

  piv_attestation.py check-roots [DIR]
      Every PEM file in DIR (tokens/attestation-roots by default) must be one of the pinned roots below,
      with its pinned SHA-256 fingerprint, subject and serial; every pinned root must be there.
"""
import argparse
import datetime
import glob
import hashlib
import json
import os
import sys

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization

YUBICO = "1.3.6.1.4.1.41482.3."
EXTENSION_FIRMWARE = x509.ObjectIdentifier(YUBICO + "3")
EXTENSION_SERIAL = x509.ObjectIdentifier(YUBICO + "7")
EXTENSION_POLICY = x509.ObjectIdentifier(YUBICO + "8")
EXTENSION_FORM_FACTOR = x509.ObjectIdentifier(YUBICO + "9")
PIN_POLICIES = {1: "never", 2: "once", 3: "always"}
TOUCH_POLICIES = {1: "never", 2: "always", 3: "cached"}
# A chain longer than this is refused rather than walked (Yubico's longest today: root, two intermediates, F9).
INTERMEDIATES_MAX = 4

# The roots shipped in tokens/attestation-roots, pinned by the SHA-256 of their DER encoding. The legacy
# root signs the F9 certificates of YubiKeys before firmware 5.7.4; it is the one Debian's
# golang-github-go-piv-piv-go-dev 1.8.0 carries in piv/key.go.
PINNED_ROOTS = {
    "yubico-piv-ca-1.pem": {
        "sha256": "63ECE914E54DD87915F34033C85AF4C0696BA1512F8ADD66CED738331207B546",
        "subject": "CN=Yubico PIV Root CA Serial 263751",
        "serial": 263751,
    },
}


def load_certificate(path):
    with open(path, "rb") as handle:
        data = handle.read()
    return x509.load_pem_x509_certificate(data) if b"-----BEGIN" in data else x509.load_der_x509_certificate(data)


def fingerprint(certificate):
    return hashlib.sha256(certificate.public_bytes(serialization.Encoding.DER)).hexdigest().upper()


def spki(public_key):
    return public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def is_ca(certificate):
    try:
        return certificate.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    except x509.ExtensionNotFound:
        return False


def check_link(child, issuer, problems, names):
    """One link: the issuer's name, its CA flag, and its signature over the child."""
    child_name, issuer_name = names
    try:
        child.verify_directly_issued_by(issuer)
    except (ValueError, TypeError, InvalidSignature) as error:
        reason = str(error) or type(error).__name__
        problems.append("%s is not signed by %s: %s" % (child_name, issuer_name, reason))
    if not is_ca(issuer):
        problems.append("%s is not a CA (basicConstraints)" % issuer_name)


def check_validity(certificate, name, problems, now):
    if not certificate.not_valid_before_utc <= now <= certificate.not_valid_after_utc:
        problems.append("%s is not valid now (%s to %s)" % (name, certificate.not_valid_before_utc,
                                                            certificate.not_valid_after_utc))


def yubico_extensions(certificate, problems):
    """The values of Yubico's attestation extensions; a missing or malformed one is a problem."""
    found = {}
    for extension in certificate.extensions:
        if extension.oid.dotted_string.startswith(YUBICO):
            found[extension.oid] = extension.value.value
    summary = {}
    firmware = found.get(EXTENSION_FIRMWARE)
    if firmware is None or len(firmware) != 3:
        problems.append("firmware extension (.3.3) missing or not 3 bytes")
    else:
        summary["firmware"] = "%d.%d.%d" % tuple(firmware)
    serial = found.get(EXTENSION_SERIAL)
    # DER INTEGER: tag 02, a short length, a minimal two's-complement value that is not negative.
    if (serial is None or len(serial) < 3 or serial[0] != 0x02 or serial[1] != len(serial) - 2
            or serial[2] & 0x80 or (len(serial) > 3 and serial[2] == 0 and not serial[3] & 0x80)):
        problems.append("serial extension (.3.7) missing or not a minimal non-negative DER INTEGER")
    else:
        summary["serial"] = int.from_bytes(serial[2:], "big")
    policy = found.get(EXTENSION_POLICY)
    if policy is None or len(policy) != 2 or policy[0] not in PIN_POLICIES or policy[1] not in TOUCH_POLICIES:
        problems.append("policy extension (.3.8) missing or not a known PIN and touch policy")
    else:
        summary["pinPolicy"], summary["touchPolicy"] = PIN_POLICIES[policy[0]], TOUCH_POLICIES[policy[1]]
    form_factor = found.get(EXTENSION_FORM_FACTOR)
    if form_factor is not None:
        if len(form_factor) != 1:
            problems.append("form factor extension (.3.9) is not 1 byte")
        else:
            summary["formFactor"] = form_factor[0]
    return summary


def verify(arguments):
    problems = []
    attestation = load_certificate(arguments.attestation)
    f9 = load_certificate(arguments.f9)
    intermediates = [load_certificate(path) for path in arguments.intermediate]
    root = load_certificate(arguments.root)
    if len(intermediates) > INTERMEDIATES_MAX:
        problems.append("%d intermediates; at most %d are walked" % (len(intermediates), INTERMEDIATES_MAX))
    chain = [("the slot attestation certificate", attestation), ("the F9 certificate", f9)]
    chain += [("intermediate %d" % (index + 1), certificate) for index, certificate in enumerate(intermediates)]
    chain += [("the root", root)]
    now = datetime.datetime.now(datetime.timezone.utc)
    for (child_name, child), (issuer_name, issuer) in zip(chain, chain[1:]):
        check_link(child, issuer, problems, (child_name, issuer_name))
    check_link(root, root, problems, ("the root", "itself"))
    for name, certificate in chain:
        check_validity(certificate, name, problems, now)
    with open(arguments.public_key, "rb") as handle:
        expected_key = serialization.load_pem_public_key(handle.read())
    if spki(attestation.public_key()) != spki(expected_key):
        problems.append("the attested public key is not the slot's public key")
    summary = yubico_extensions(attestation, problems)
    wanted = {"serial": arguments.serial, "pinPolicy": arguments.pin_policy, "touchPolicy": arguments.touch_policy}
    for field, value in wanted.items():
        if value is not None and summary.get(field) != value:
            problems.append("%s is %r, wanted %r" % (field, summary.get(field), value))
    summary["subject"] = attestation.subject.rfc4514_string()
    summary["root"] = root.subject.rfc4514_string()
    summary["rootSha256"] = fingerprint(root)
    summary["chainLength"] = len(chain)
    return problems, summary


def check_roots(directory):
    problems = []
    present = {os.path.basename(path): path for path in glob.glob(os.path.join(directory, "*.pem"))}
    for name in sorted(set(present) - set(PINNED_ROOTS)):
        problems.append("%s is not a pinned root: add its fingerprint to PINNED_ROOTS after checking it" % name)
    for name, pin in sorted(PINNED_ROOTS.items()):
        if name not in present:
            problems.append("%s is missing from %s" % (name, directory))
            continue
        try:
            certificate = load_certificate(present[name])
        except ValueError as error:
            problems.append("%s is not a certificate: %s" % (name, error))
            continue
        if fingerprint(certificate) != pin["sha256"]:
            problems.append("%s has SHA-256 %s, pinned %s" % (name, fingerprint(certificate), pin["sha256"]))
        if certificate.subject.rfc4514_string() != pin["subject"]:
            problems.append("%s has subject %s, pinned %s" % (name, certificate.subject.rfc4514_string(),
                                                               pin["subject"]))
        if certificate.serial_number != pin["serial"]:
            problems.append("%s has serial %d, pinned %d" % (name, certificate.serial_number, pin["serial"]))
        check_link(certificate, certificate, problems, (name, "itself"))
    return problems, {"roots": sorted(present)}


def main():
    parser = argparse.ArgumentParser(description="PIV attestation checks (independent oracle)")
    commands = parser.add_subparsers(dest="command", required=True)
    verify_command = commands.add_parser("verify", help="verify a slot attestation certificate's chain and key")
    verify_command.add_argument("--attestation", required=True)
    verify_command.add_argument("--f9", required=True)
    verify_command.add_argument("--intermediate", action="append", default=[])
    verify_command.add_argument("--root", required=True)
    verify_command.add_argument("--public-key", required=True)
    verify_command.add_argument("--serial", type=int)
    verify_command.add_argument("--pin-policy", choices=sorted(PIN_POLICIES.values()))
    verify_command.add_argument("--touch-policy", choices=sorted(TOUCH_POLICIES.values()))
    roots_command = commands.add_parser("check-roots", help="check the shipped roots against their pins")
    default_roots = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tokens", "attestation-roots")
    roots_command.add_argument("directory", nargs="?", default=os.path.normpath(default_roots))
    arguments = parser.parse_args()
    if arguments.command == "verify":
        problems, summary = verify(arguments)
    else:
        problems, summary = check_roots(arguments.directory)
    for problem in problems:
        print("problem: %s" % problem, file=sys.stderr)
    if problems:
        sys.exit(1)
    print(json.dumps(summary, sort_keys=True))


if __name__ == "__main__":
    main()
