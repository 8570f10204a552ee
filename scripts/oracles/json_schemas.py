#!/usr/bin/env python3
"""Checks real `secure --json` output against the JSON Schemas in docs/schemas, with the jsonschema package.

    json_schemas.py SCHEMA_DIR CASES_FILE

CASES_FILE is a JSON array of cases, one per command run:

    {"command": "balance", "format": "secure-balance-v2", "file": PATH, "lines": false,
     "text": TEXT-OUTPUT-OR-NULL, "amounts": [MINOR-UNITS, ...]}

For each case the oracle reads the output (one document, or with "lines" one document per non-empty line),
checks that each names the expected format ("format", or "type" for proof files), and validates it against
SCHEMA_DIR/NAME.vN.schema.json, where the format is secure-NAME-vN. Then it checks the amounts: every amount
object's text is its minor units written at its scale (computed here, independently of the Swift code); with
"text", each amount written that way appears in the command's text output; and each of "amounts" (signed
minor units the test made) is among the document's amounts. An event line's amounts appear in its own text.

It also checks the schemas themselves: each is a valid draft 2020-12 schema named after its format, every
schema that defines amounts defines them identically, and every schema file was used by some case (but for
an old version's, kept for reference beside its successor).

Prints one line per case ("ok COMMAND" or "FAIL COMMAND: why") and exits 1 when anything failed.
"""

import json
import os
import re
import sys
from decimal import Decimal

from jsonschema import Draft202012Validator

FORMAT_PATTERN = re.compile(r"^secure-([a-z-]+)-v([0-9]+)$")


def schema_file(format_name):
    match = FORMAT_PATTERN.match(format_name or "")
    if not match:
        return None
    return f"{match.group(1)}.v{match.group(2)}.schema.json"


def load_schemas(directory):
    schemas, problems = {}, []
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".schema.json"):
            continue
        with open(os.path.join(directory, name)) as handle:
            schema = json.load(handle)
        try:
            Draft202012Validator.check_schema(schema)
        except Exception as error:  # jsonschema.SchemaError
            problems.append(f"{name} is not a valid draft 2020-12 schema: {error}")
            continue
        if schema.get("$schema") != "https://json-schema.org/draft/2020-12/schema":
            problems.append(f"{name} does not declare draft 2020-12")
        if schema.get("$id") != name:
            problems.append(f"{name}: $id is {schema.get('$id')!r}")
        tag = schema.get("properties", {}).get("format") or schema.get("properties", {}).get("type") or {}
        if schema_file(tag.get("const")) != name:
            problems.append(f"{name}: its format constant {tag.get('const')!r} does not name this file")
        schemas[name] = schema
    definitions = {json.dumps(s["$defs"], sort_keys=True) for s in schemas.values() if "amount" in s.get("$defs", {})}
    if len(definitions) > 1:
        problems.append("the schemas define amounts differently; every schema copies one definition")
    return schemas, problems


def superseded(schemas):
    """The schema files of old versions (NAME.vN where a NAME.vM with M > N exists): kept for reference only."""
    newest = {}
    for name in schemas:
        base, version = re.match(r"^(.*)\.v([0-9]+)\.schema\.json$", name).groups()
        newest[base] = max(newest.get(base, 0), int(version))
    return {name for name in schemas
            if int(re.match(r"^.*\.v([0-9]+)\.schema\.json$", name).group(1))
            < newest[re.match(r"^(.*)\.v[0-9]+\.schema\.json$", name).group(1)]}


def amount_text(amount):
    """An amount's text from its integer minor units and scale: -450, 2, EUR -> "-4.50 EUR"."""
    units, scale = amount["minorUnits"], amount["scale"]
    value = Decimal(abs(units)).scaleb(-scale)
    number = f"{value:.{scale}f}"
    return ("-" if units < 0 else "") + number + " " + amount["currency"]


def amounts_in(value):
    """Every amount object in a document, depth first."""
    if isinstance(value, dict):
        if {"minorUnits", "currency", "scale", "issuer", "text"} <= set(value):
            yield value
        else:
            for item in value.values():
                yield from amounts_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from amounts_in(item)


def check_case(case, schemas, used):
    with open(case["file"]) as handle:
        raw = handle.read()
    try:
        documents = [json.loads(line) for line in raw.splitlines() if line.strip()] if case.get("lines") \
            else [json.loads(raw)]
    except json.JSONDecodeError as error:
        return [f"not JSON: {error}: {raw[:200]!r}"]
    if not documents:
        return ["no output"]
    problems = []
    found = []
    for index, document in enumerate(documents):
        where = f"line {index + 1}: " if case.get("lines") else ""
        if not isinstance(document, dict):
            problems.append(f"{where}a {type(document).__name__}, not an object that names its format")
            continue
        format_name = document.get("format", document.get("type"))
        if format_name != case["format"]:
            problems.append(f"{where}format {format_name!r}, expected {case['format']!r}")
            continue
        name = schema_file(format_name)
        if name not in schemas:
            problems.append(f"{where}no schema file docs/schemas/{name} for {format_name}")
            continue
        used.add(name)
        validator = Draft202012Validator(schemas[name], format_checker=Draft202012Validator.FORMAT_CHECKER)
        for error in sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path)):
            path = "/".join(str(part) for part in error.absolute_path) or "(top)"
            problems.append(f"{where}{path}: {error.message}")
        for amount in amounts_in(document):
            if not isinstance(amount.get("minorUnits"), int) or not isinstance(amount.get("scale"), int):
                continue  # the schema has said why
            written = amount_text(amount)
            if amount["text"] != written:
                problems.append(f"{where}amount text {amount['text']!r} is not its minor units {written!r}")
            if "event" in document and written not in document.get("text", ""):
                problems.append(f"{where}amount {written} is not in the event's text {document.get('text')!r}")
            if case.get("text") is not None and written not in case["text"]:
                problems.append(f"{where}amount {written} is not in the text output: {case['text'][:300]!r}")
            found.append(amount["minorUnits"])
    for expected in case.get("amounts", []):
        if expected in found:
            found.remove(expected)
        else:
            problems.append(f"expected an amount of {expected} minor units; the amounts are {found}")
    return problems


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    schemas, problems = load_schemas(sys.argv[1])
    failed = bool(problems)
    for problem in problems:
        print(f"FAIL schemas: {problem}")
    with open(sys.argv[2]) as handle:
        cases = json.load(handle)
    used = set()
    for case in cases:
        case_problems = check_case(case, schemas, used)
        if case_problems:
            failed = True
            for problem in case_problems:
                print(f"FAIL {case['command']}: {problem}")
        else:
            print(f"ok {case['command']}")
    for name in sorted(set(schemas) - used - superseded(schemas)):
        failed = True
        print(f"FAIL schemas: {name} was not exercised by any command")
    print(f"{len(cases)} outputs, {len(schemas)} schemas")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
