#!/usr/bin/env python3
"""Independent checks of `secure report --html` (Tests/SecureCLITests/ReportCLITests.swift).

Nothing here reuses the Swift chart code: the checks read the scale each chart documents (data-axis-max minor
units at data-plot-top, zero at data-plot-bottom, in viewBox units) and recompute every point and bar from the
fixture's known amounts, which the test passes as JSON.

  report_check.py geometry REPORT.html FIXTURE.json   points and bars against the fixture's amounts
  report_check.py static REPORT.html                  no script, no src=, no http outside http-equiv, the CSP
  report_check.py dom DUMP.html FIXTURE.json          chromium --dump-dom: notes are text, no element injected
  report_check.py pixels SCREENSHOT.png               each chart's box holds pixels in that chart's colours
  report_check.py csv FIXTURE.json < history.csv      the notes round-trip through `history --csv`

FIXTURE.json: {"deposits": [minor units...], "spends": [{"amount": units, "category": c, "note": n}...],
"budget": {"category": c, "limit": units}, "events": [["deposit"|"spend", units]... in ledger order]}.
Each check prints "ok ..." lines and exits 1 with a reason on the first failure.
"""
import base64
import csv
import hashlib
import io
import json
import re
import sys
from html.parser import HTMLParser

TOLERANCE = 1.0  # viewBox units ("px" of the chart)

BALANCE_BACKGROUND = (0xEA, 0xF1, 0xFE)
BALANCE_COLOURS = [(0x1D, 0x4E, 0xD8)]
BUDGET_BACKGROUND = (0xFD, 0xF3, 0xE7)
BUDGET_COLOURS = [(0x15, 0x80, 0x3D), (0xD9, 0x77, 0x06), (0xB9, 0x1C, 0x1C)]
PAGE_BACKGROUND = (0xF3, 0xF5, 0xF8)


def fail(message):
    print("FAIL " + message)
    sys.exit(1)


class Tree(HTMLParser):
    """A flat list of elements with their attributes, their nesting, and their text."""

    VOID = {"meta", "br", "img", "input", "link", "hr", "col", "area", "base", "source", "wbr"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.elements = []
        self.stack = []

    def handle_starttag(self, tag, attrs):
        element = {"tag": tag, "attrs": dict(attrs), "text": "", "parent": self.stack[-1] if self.stack else None}
        self.elements.append(element)
        if tag not in self.VOID:
            self.stack.append(element)

    def handle_startendtag(self, tag, attrs):
        self.elements.append({"tag": tag, "attrs": dict(attrs), "text": "", "parent": self.stack[-1] if self.stack else None})

    def handle_endtag(self, tag):
        for index in range(len(self.stack) - 1, -1, -1):
            if self.stack[index]["tag"] == tag:
                del self.stack[index:]
                return

    def handle_data(self, data):
        for element in self.stack:
            element["text"] += data

    def inside(self, element, ancestor):
        while element is not None:
            if element is ancestor:
                return True
            element = element["parent"]
        return False


def parse(path):
    tree = Tree()
    with open(path, encoding="utf-8") as handle:
        tree.feed(handle.read())
    return tree


def scale(svg):
    attrs = svg["attrs"]
    return (int(attrs["data-axis-max"]), float(attrs["data-plot-top"]), float(attrs["data-plot-bottom"]))


def expected_y(units, axis_max, top, bottom):
    return bottom - units / axis_max * (bottom - top)


def money_text(units, scale_digits):
    if scale_digits == 0:
        return str(units)
    text = str(units).rjust(scale_digits + 1, "0")
    return text[:-scale_digits] + "." + text[-scale_digits:]


def check_ticks(tree, svg, name):
    """The tick labels a person reads agree with the documented scale."""
    axis_max, top, bottom = scale(svg)
    digits = int(svg["attrs"]["data-currency-scale"])
    ticks = [e for e in tree.elements if e["tag"] == "text" and "data-tick" in e["attrs"] and tree.inside(e, svg)]
    if len(ticks) < 2:
        fail(f"{name}: fewer than two amount ticks")
    for tick in ticks:
        units = int(tick["attrs"]["data-tick"])
        if tick["text"].strip() != money_text(units, digits):
            fail(f"{name}: tick {units} is labelled {tick['text']!r}")
        label_y = float(tick["attrs"]["y"]) - 4  # the label's baseline sits 4 units below its line
        if abs(label_y - expected_y(units, axis_max, top, bottom)) > TOLERANCE:
            fail(f"{name}: tick {units} drawn at {label_y}")
    if max(int(t["attrs"]["data-tick"]) for t in ticks) != axis_max:
        fail(f"{name}: the top tick is not the axis maximum {axis_max}")
    check_labels_fit(tree, svg, name)


def text_width(text, size):
    """The advance of `text` at `size` in DejaVu Sans (the sans-serif fontconfig picks here, and the widest
    common one), measured with the font's own metrics; 0.64 em a character when the font is missing."""
    try:
        from PIL import ImageFont
        return ImageFont.truetype("DejaVuSans.ttf", size).getlength(text)
    except (ImportError, OSError):
        return 0.64 * size * len(text)


def check_labels_fit(tree, svg, name):
    """Every text of the chart lies inside its viewBox, horizontally, as drawn by its anchor."""
    width = float(svg["attrs"]["viewbox"].split()[2])  # the parser lowercases attribute names
    for element in tree.elements:
        if element["tag"] != "text" or not tree.inside(element, svg):
            continue
        attrs, content = element["attrs"], element["text"]
        size, x = float(attrs.get("font-size", 12)), float(attrs["x"])
        advance = text_width(content, int(size))
        anchor = attrs.get("text-anchor", "start")
        left = x - advance if anchor == "end" else (x - advance / 2 if anchor == "middle" else x)
        if left < 0 or left + advance > width or float(attrs["y"]) - 0.73 * size < 0:
            fail(f"{name}: the label {content!r} spans {left:.1f} to {left + advance:.1f} of 0 to {width}")


def geometry(report, fixture_path):
    tree = parse(report)
    with open(fixture_path) as handle:
        fixture = json.load(handle)
    charts = [e for e in tree.elements if e["tag"] == "svg" and "data-chart" in e["attrs"]]
    balance = [c for c in charts if c["attrs"]["data-chart"] == "balance"]
    budget = [c for c in charts if c["attrs"]["data-chart"] == "budget"]
    if len(balance) != 1 or len(budget) != 1:
        fail(f"expected one balance and one budget chart, found {len(balance)} and {len(budget)}")

    # Balance: the running sum of the fixture's deposits and spends, in ledger order.
    svg = balance[0]
    check_ticks(tree, svg, "balance")
    axis_max, top, bottom = scale(svg)
    running, expected = 0, []
    for kind, units in fixture["events"]:
        running += units if kind == "deposit" else -units
        expected.append(running)
    points = [e for e in tree.elements if e["tag"] == "circle" and tree.inside(e, svg)]
    if len(points) != len(expected):
        fail(f"balance: {len(points)} points for {len(expected)} changes")
    if max(expected) > axis_max:
        fail(f"balance: the axis ({axis_max}) does not reach {max(expected)}")
    previous_x = None
    for point, units in zip(points, expected):
        y = float(point["attrs"]["cy"])
        want = expected_y(units, axis_max, top, bottom)
        if abs(y - want) > TOLERANCE:
            fail(f"balance: the point for {units} is at y {y}, expected {want:.2f}")
        x = float(point["attrs"]["cx"])
        if previous_x is not None and x < previous_x:
            fail("balance: points go back in time")
        previous_x = x
    print(f"ok balance: {len(points)} points at {expected} on an axis to {axis_max}")

    # Budget: the fixture's spends in the budget's category, all in one window, against its limit.
    svg = budget[0]
    check_ticks(tree, svg, "budget")
    axis_max, top, bottom = scale(svg)
    category, limit = fixture["budget"]["category"], fixture["budget"]["limit"]
    if svg["attrs"].get("data-category") != category:
        fail(f"budget: the chart is of {svg['attrs'].get('data-category')!r}")
    spent = sum(s["amount"] for s in fixture["spends"] if s["category"] == category)
    bars = [e for e in tree.elements if e["tag"] == "rect" and "data-bar" in e["attrs"] and tree.inside(e, svg)]
    if len(bars) != 1:
        fail(f"budget: {len(bars)} bars for one window")
    bar = bars[0]["attrs"]
    height, y = float(bar["height"]), float(bar["y"])
    want = spent / axis_max * (bottom - top)
    if abs(height - want) > TOLERANCE or abs(y + height - bottom) > TOLERANCE:
        fail(f"budget: the bar is {height} high at y {y}; {spent} needs {want:.2f} standing on {bottom}")
    lines = {e["attrs"]["data-limit"]: float(e["attrs"]["y1"]) for e in tree.elements
             if e["tag"] == "line" and "data-limit" in e["attrs"] and tree.inside(e, svg)}
    for percent, units in (("100", limit), ("80", limit * 0.8)):
        if percent not in lines or abs(lines[percent] - expected_y(units, axis_max, top, bottom)) > TOLERANCE:
            fail(f"budget: the {percent} % line is at {lines.get(percent)}")
    colour = bar["fill"].lower()
    wanted_colour = "#b91c1c" if spent > limit else ("#d97706" if 5 * spent > 4 * limit else "#15803d")
    if colour != wanted_colour:
        fail(f"budget: {spent} of {limit} is drawn {colour}, expected {wanted_colour}")
    print(f"ok budget: bar {height:.2f} high for {spent} of {limit}, lines at 100 % and 80 %")


def static(report):
    with open(report, encoding="utf-8") as handle:
        html = handle.read()
    lower = html.lower()
    if "<script" in lower:
        fail("a <script> element")
    for match in re.finditer(r"src\s*=", lower):
        fail(f"src= at {match.start()}")
    rest = lower.replace("http-equiv", "")
    if "http" in rest:
        fail("an http address outside http-equiv: " + rest[rest.index("http") - 40:rest.index("http") + 40])
    tree = parse(report)
    for element in tree.elements:
        if "style" in element["attrs"]:
            fail(f"a style attribute on <{element['tag']}> (the policy blocks it)")
        for name in ("src", "href", "xlink:href", "action", "formaction", "data", "poster"):
            if name in element["attrs"]:
                fail(f"<{element['tag']} {name}=...>: the page must load nothing")
    metas = [e for e in tree.elements if e["tag"] == "meta"
             and e["attrs"].get("http-equiv", "").lower() == "content-security-policy"]
    if len(metas) != 1:
        fail(f"{len(metas)} Content-Security-Policy metas")
    policy = metas[0]["attrs"]["content"]
    if not policy.startswith("default-src 'none'"):
        fail("the policy is " + policy)
    styles = [e for e in tree.elements if e["tag"] == "style"]
    for style in styles:
        digest = base64.b64encode(hashlib.sha256(style["text"].encode("utf-8")).digest()).decode()
        if f"'sha256-{digest}'" not in policy:
            fail("a <style> the policy does not allow by hash")
    for element in tree.elements:
        for name in element["attrs"]:
            if name.startswith("on"):
                fail(f"an event handler attribute {name} on <{element['tag']}>")
    print(f"ok static: policy {policy.split(';')[0]!r}, {len(styles)} style sheet allowed by hash, no script or src")


def shown(note):
    """A note as the report shows it: control and format characters as \\u{HEX}, a backslash doubled."""
    out = []
    for character in note:
        code = ord(character)
        if character == "\\":
            out.append("\\\\")
        elif code < 0x20 or 0x7F <= code <= 0x9F:
            out.append("\\u{%X}" % code)
        else:
            out.append(character)
    return "".join(out)


def dom(dump, fixture_path):
    tree = parse(dump)
    with open(fixture_path) as handle:
        fixture = json.load(handle)
    cells = [e["text"] for e in tree.elements if e["tag"] == "td" and "note" in e["attrs"].get("class", "").split()]
    for note in [s["note"] for s in fixture["spends"] if s["note"]]:
        if shown(note) not in cells:
            fail(f"the note {note!r} is not a cell's text; cells: {cells}")
    for element in tree.elements:
        if any(name.startswith("on") for name in element["attrs"]):
            fail(f"an element with an event handler was injected: <{element['tag']} {element['attrs']}>")
        if element["tag"] in ("script", "iframe", "object", "embed", "img", "link"):
            fail(f"a <{element['tag']}> element is in the page")
    charts = [e for e in tree.elements if e["tag"] == "svg" and "data-chart" in e["attrs"]]
    svgs = [e for e in tree.elements if e["tag"] == "svg"]
    legend = [e for e in svgs if e["attrs"].get("aria-hidden") == "true"]
    if len(svgs) != len(charts) + len(legend):
        fail(f"an <svg> that the report did not draw: {len(svgs)} svg, {len(charts)} charts, {len(legend)} swatches")
    print(f"ok dom: {len(cells)} note cells hold the notes as text; no element was injected")


def pixels(screenshot):
    from PIL import Image, ImageChops

    image = Image.open(screenshot).convert("RGB")
    width, height = image.size
    corner = image.getpixel((2, height - 3))
    if corner != PAGE_BACKGROUND:
        fail(f"the page background is {corner}, not the style sheet's {PAGE_BACKGROUND}: was the CSS blocked?")

    def mask(region, colour, tolerance):
        """A black-and-white image: white where the pixel is within `tolerance` of `colour` on each channel."""
        bands = [band.point(lambda v, c=c: 255 if abs(v - c) <= tolerance else 0)
                 for band, c in zip(region.split(), colour)]
        return ImageChops.multiply(ImageChops.multiply(bands[0], bands[1]), bands[2])

    for name, background, colours in (("balance", BALANCE_BACKGROUND, BALANCE_COLOURS),
                                      ("budget", BUDGET_BACKGROUND, BUDGET_COLOURS)):
        # The plot's background is a flat fill: exact but for a rounding step of the compositor.
        found = mask(image, background, 2).getbbox()
        if found is None:
            fail(f"no {name} chart background on the screenshot")
        left, top, right, bottom = found
        if right - left < 100 or bottom - top < 60:
            fail(f"the {name} chart's box is only {right - left}x{bottom - top}")
        region = image.crop(found)
        inside = sum(mask(region, colour, 8).histogram()[255] for colour in colours)
        if inside < 50:
            fail(f"the {name} chart's box ({left},{top})-({right},{bottom}) holds {inside} pixels of its colours")
        print(f"ok pixels {name}: box {right - left}x{bottom - top} at ({left},{top}), {inside} pixels in its colours")


def csv_visible(note):
    """A note as `history --csv` writes it: controls other than TAB, CR and LF, and the bidirectional overrides
    and isolates, as \\u{HEX}; everything else exactly."""
    out = []
    for character in note:
        code = ord(character)
        control = (code < 0x20 and character not in "\t\n\r") or 0x7F <= code <= 0x9F
        bidi = 0x202A <= code <= 0x202E or 0x2066 <= code <= 0x2069
        out.append(f"\\u{{{code:X}}}" if control or bidi else character)
    return "".join(out)


def history_csv(fixture_path):
    with open(fixture_path) as handle:
        fixture = json.load(handle)
    text = sys.stdin.read()
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    payments = [r for r in rows if r["kind"] == "payment out"]
    spends = fixture["spends"]
    if len(payments) != len(spends):
        fail(f"{len(payments)} payments out in the CSV for {len(spends)} spends")
    for row, spend in zip(payments, spends):
        note = csv_visible(spend["note"])
        guarded = "'" + note if note[:1] in ("=", "+", "-", "@", "\t", "\r") else note
        if row["note"] != guarded:
            fail(f"the note {note!r} came back as {row['note']!r}")
        if row["category"] != spend["category"]:
            fail(f"category {row['category']!r} for {spend['category']!r}")
        units = spend["amount"]
        if row["amount"] != "-" + money_text(units, 2):
            fail(f"amount {row['amount']} for {units}")
    print(f"ok csv: {len(payments)} notes round-trip, the formula guard adds exactly one leading '")


def main():
    if len(sys.argv) < 2:
        fail(__doc__)
    command, arguments = sys.argv[1], sys.argv[2:]
    if command == "geometry":
        geometry(*arguments)
    elif command == "static":
        static(*arguments)
    elif command == "dom":
        dom(*arguments)
    elif command == "pixels":
        pixels(*arguments)
    elif command == "csv":
        history_csv(*arguments)
    else:
        fail("unknown check " + command)


if __name__ == "__main__":
    main()
