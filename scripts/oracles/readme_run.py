#!/usr/bin/env python3
"""Runs the shell blocks of README.md in order, as a new user pasting them into one terminal would.

    readme_run.py [--readme README.md] [--keep] [--show] [--list] [--self-test]

The fence of each block says what happens to it:

    ```sh                          run. Any non-zero exit fails the run.
    ```sh no-run: REASON           not run. Only blocks of scripts/test, scripts/demo and scripts/clearing-demo, and hardware examples
                                   (REASON starts with "hardware"), may be no-run; every `secure` command of a
                                   hardware example must also appear in a later block that runs (its twin).
    ```sh timeout=SECONDS          run, with more time than the default 300 s (a build from scratch).
    ```sh background ready=TEXT: REASON
                                   run in the background, as in a second terminal (the payee's `secure receive`
                                   while the payer runs `secure pay` in the next block). The next block starts
                                   once it printed TEXT; it must end by itself, with exit 0, once that next
                                   block (the other terminal) has run.

How a block runs:
- The first block starts in the repository (the reader's clone), with HOME a new temporary folder and a
  clean environment (PATH the system's, LANG, TERM, TZ=UTC). Later blocks start where the last one ended:
  its working folder and its exported variables carry over (a variable a later block needs is exported).
- Each block runs under `bash` with `set -euo pipefail`, so a failing command stops it. `&&` and `||` are
  refused in blocks, since `set -e` ignores a failure on their left.
- Each block has its own pseudo-terminal, so commands that prompt get one. A PIN prompt
  (`PIN for token "L":` or `PIN for backup token "L":`) is answered with the PIN of the token labelled L,
  read from DIR/L.pin that `secure token init-demo --dir DIR --label L` wrote earlier; `[y/N]` is answered y.
  Anything else that waits for input times the block out.
- Before anything runs, every file a block reads (a `< FILE`, a `file:PATH` PIN source, a positional or
  option value that names a file: *.txt, *.card, *.bin, *.pem, *.sig, *.transfer, *.receipt, ..., or a
  `--wallet DIR`) must have been made by an earlier command: `> FILE`, `--out FILE` and the other output
  options, `mkdir`, `token init-demo` (DIR/L.pin and DIR/softhsm2.conf), `wallet init --wallet DIR`, ...
- Each block's time is printed; a failed block prints its output with its line in README.md.
- The repository must be left as it was found (`git status --porcelain`): blocks work in HOME.

--self-test runs the runner on small READMEs that must pass or fail (SELF_TESTS), so a runner that cannot
fail is caught. Uses only the standard library. Exit code 0 when every block ran and passed, 1 otherwise.
"""
import argparse
import os
import pty
import re
import select
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

FENCE = re.compile(r"^```(\S*)\s*(.*)$")
# Seconds a block may take; a hang (an unexpected prompt) fails the run instead of stalling CI.
blockSecondsMax = 300
# Seconds a background block may take to print its ready text, and to end after its partner block.
backgroundReadySecondsMax = 30
backgroundEndSecondsMax = 60

PIN_PROMPT = re.compile(rb'PIN for (?:backup )?token "([^"]+)": ?$')
YES_NO_PROMPT = re.compile(rb"\[y/N\] ?$")
FILE_LIKE = re.compile(
    r"\.(txt|card|bin|pem|sig|der|transfer|receipt|refusal|pin|conf|words|csv|json|html|proof|bundle)$")
# Options whose value is a file the command writes.
OUTPUT_OPTIONS = {"--out", "--receipt-out", "--refusal-out", "--html"}
# Options whose value is a file or folder the command reads (besides any file-like word).
INPUT_OPTIONS = {"--pubkey", "--sig", "--key-events", "--ranging-file", "--attestation", "--attestation-root",
                 "--wallet", "--recovery-words-file"}
# Options whose value is never a file this check knows about.
OTHER_OPTIONS = {"--prefix", "--listen", "--token", "--backup-token", "--key", "--label", "--amount", "--category",
                 "--note", "--issuer", "--to", "--distance", "--count", "--sessions", "--window", "--name",
                 "--offline-limit", "--request", "--max-amount", "--since", "--until", "--limit", "--kind",
                 "--peer", "--module-args", "--expect-payee", "--expect-payer"}


class Block:
    def __init__(self, line, kind, attributes, reason, text):
        self.line = line  # the line of the block's first command in README.md
        self.kind = kind  # "run", "no-run" or "background"
        self.attributes = attributes
        self.reason = reason
        self.text = text

    def where(self):
        return f"README.md line {self.line}"


class Failure(Exception):
    pass


def parse_blocks(path):
    """The ```sh blocks of the file, with their fence attributes."""
    blocks, lines = [], open(path, encoding="utf-8").read().split("\n")
    index = 0
    while index < len(lines):
        match = FENCE.match(lines[index])
        if not match:
            index += 1
            continue
        language, rest = match.group(1), match.group(2).strip()
        end = index + 1
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        if end == len(lines):
            raise Failure(f"README.md line {index + 1}: a fence that is never closed")
        if language == "sh":
            head, _, reason = rest.partition(":")
            words = head.split()
            kind = "run"
            if words and words[0] in ("no-run", "background"):
                kind = words.pop(0)
            attributes = {}
            for word in words:
                key, equals, value = word.partition("=")
                if key not in ("ready", "timeout") or not equals or key == "timeout" and not value.isdigit():
                    raise Failure(f"README.md line {index + 1}: unknown fence word {word!r} "
                                  "(```sh [timeout=SECONDS], "
                                  "```sh no-run: REASON or ```sh background ready=TEXT: REASON)")
                attributes[key] = value
            if kind != "run" and not reason.strip():
                raise Failure(f"README.md line {index + 1}: a {kind} block must say why after a colon")
            if kind == "background" and "ready" not in attributes:
                raise Failure(f"README.md line {index + 1}: a background block needs ready=TEXT")
            blocks.append(Block(index + 2, kind, attributes, reason.strip(), "\n".join(lines[index + 1:end])))
        elif language in ("bash", "shell", "console", "zsh"):
            raise Failure(f"README.md line {index + 1}: fence shell blocks as ```sh so that they run")
        index = end + 1
    return blocks


def logical_lines(block):
    """(README line, command text) for each command line, continuations joined, comments kept for shlex."""
    result, pending, start = [], "", None
    for offset, raw in enumerate(block.text.split("\n")):
        if start is None:
            start = block.line + offset
        if raw.rstrip().endswith("\\"):
            pending += raw.rstrip()[:-1] + " "
            continue
        pending += raw
        if pending.strip():
            result.append((start, pending))
        pending, start = "", None
    return result


def commands_of(text):
    """Splits one command line into simple commands (lists of words); redirections stay as words."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    commands, current = [], []
    for token in lexer:
        if token in (";", "&&", "||", "|", "&", "(", ")", ";;"):
            if token in ("&&", "||"):
                raise Failure(f"`{token}` in a block: `set -e` ignores a failure on its left; put the commands "
                              "on lines of their own")
            if current:
                commands.append(current)
            current = []
        else:
            current.append(token)
    if current:
        commands.append(current)
    return commands


class Paths:
    """Static path handling: ~ and $HOME become HOME/, relative paths are taken from the tracked folder."""

    def __init__(self):
        self.cwd = "REPO"

    def normal(self, word):
        word = re.sub(r"^(~|\$HOME|\$\{HOME\})(?=/|$)", "HOME", word)
        if not word.startswith(("HOME", "/")):
            word = self.cwd + "/" + word
        return os.path.normpath(word)


def secure_subcommand(words):
    """'wallet init' for ['secure', 'wallet', 'init', ...]; '' for anything else."""
    if not words or os.path.basename(words[0]) != "secure":
        return ""
    rest = [word for word in words[1:3] if not word.startswith("-")]
    if rest and rest[0] in ("token", "keys", "wallet", "budget", "policy", "issuer", "ledger", "evidence", "audit"):
        return " ".join(rest[:2])
    return rest[0] if rest else ""


def check_files(blocks, repository):
    """Fails when a block reads a file that no earlier command made. Returns the PIN files by token label."""
    made, pins, paths = set(), {}, Paths()

    def is_made(path):
        # A file of the repository counts as made: the first block starts in the reader's clone.
        in_repository = path.startswith("REPO/") and os.path.exists(os.path.join(repository, path[len("REPO/"):]))
        return path in made or path.startswith("/dev/") or in_repository

    for block in blocks:
        if block.kind == "no-run":
            continue
        for line, text in logical_lines(block):
            try:
                commands = commands_of(text)
            except Failure as failure:
                raise Failure(f"README.md line {line}: {failure}")
            for words in commands:
                reads, writes = [], []
                assignments = []
                while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
                    assignments.append(words.pop(0))
                if words and words[0] == "export":
                    assignments += words[1:]
                    words = []
                for assignment in assignments:
                    value = assignment.split("=", 1)[1] if "=" in assignment else ""
                    value = value[len("file:"):] if value.startswith("file:") else value
                    if FILE_LIKE.search(value):
                        reads.append(value)
                subcommand = secure_subcommand(words)
                index = 1
                while index < len(words):
                    word = words[index]
                    following = words[index + 1] if index + 1 < len(words) else None
                    if word in (">", ">>", ">|") and following:
                        writes.append(following)
                        index += 2
                        continue
                    if word == "<" and following:
                        reads.append(following)
                        index += 2
                        continue
                    if word == ">&":
                        index += 2
                        continue
                    if word in OUTPUT_OPTIONS and following:
                        writes.append(following)
                        index += 2
                        continue
                    if word == "--recovery-words-file" and subcommand == "wallet init" and following:
                        writes.append(following)
                        index += 2
                        continue
                    if word == "--wallet" and subcommand in ("wallet init", "issuer init") and following:
                        writes.append(following)
                        index += 2
                        continue
                    if word == "--dir" and subcommand == "token init-demo" and following:
                        label = "secure-demo"
                        if "--label" in words and words.index("--label") + 1 < len(words):
                            label = words[words.index("--label") + 1]
                        folder = paths.normal(following)
                        writes += [folder, folder + "/" + label + ".pin", folder + "/softhsm2.conf"]
                        pins[label] = folder + "/" + label + ".pin"
                        index += 2
                        continue
                    if word in INPUT_OPTIONS and following:
                        reads.append(following)
                        index += 2
                        continue
                    if word in OTHER_OPTIONS:
                        # --to and --expect-payee name a card file or an address or wallet id.
                        if following and FILE_LIKE.search(following):
                            reads.append(following)
                        index += 2
                        continue
                    for source in re.findall(r"(?:^|[?&;])?file:([^&;?\s]+)", word):
                        reads.append(source)
                    if FILE_LIKE.search(word) and not word.startswith(("pkcs11:", "file:", "-")):
                        reads.append(word)
                    index += 1
                program = os.path.basename(words[0]) if words else ""
                if program == "mkdir":
                    writes += [word for word in words[1:] if not word.startswith("-")]
                elif program in ("tee", "touch"):
                    writes += [word for word in words[1:] if not word.startswith("-")]
                    reads = [read for read in reads if read not in writes]
                elif program == "cd":
                    target = words[1] if len(words) > 1 else "HOME"
                    paths.cwd = paths.normal(target)
                    reads = []
                for read in reads:
                    path = paths.normal(read)
                    if not is_made(path):
                        raise Failure(
                            f"README.md line {line}: `{read}` is used before any earlier command makes it "
                            "(make it with `> FILE`, `--out FILE`, `token init-demo`, `wallet init`, ...)")
                for write in writes:
                    made.add(paths.normal(write))
    return pins


def check_no_run(blocks):
    """Only scripts/test, scripts/demo, scripts/clearing-demo and hardware examples with a runnable twin may be
    no-run."""
    for position, block in enumerate(blocks):
        if block.kind != "no-run":
            continue
        commands = [words for _, text in logical_lines(block) for words in commands_of(text)]
        if all(words[0] in ("scripts/test", "scripts/demo", "scripts/clearing-demo") for words in commands):
            continue
        if not block.reason.lower().startswith("hardware"):
            raise Failure(f"{block.where()}: only scripts/test, scripts/demo, scripts/clearing-demo and hardware examples may be "
                          f"no-run (this one says: {block.reason})")
        later = " ".join(" ".join(words) for other in blocks[position + 1:] if other.kind != "no-run"
                         for _, text in logical_lines(other) for words in commands_of(text))
        for words in commands:
            subcommand = secure_subcommand(words)
            if subcommand and f"secure {subcommand}" not in later:
                raise Failure(f"{block.where()}: the hardware example's `secure {subcommand}` has no runnable "
                              "twin in a later block")


class Process:
    """One block running on its own pseudo-terminal."""

    def __init__(self, block, script, environment, pins, home):
        self.block, self.pins, self.home = block, pins, home
        self.output, self.answered_to = b"", 0
        self.started = time.monotonic()
        self.status = None
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execve("/bin/bash", ["bash", "--noprofile", "--norc", script], environment)

    def pump(self, timeout):
        """Reads what the block printed and answers prompts; False once its terminal is closed."""
        if self.fd is None:
            return False
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return True
        try:
            chunk = os.read(self.fd, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            os.close(self.fd)
            self.fd = None
            return False
        self.output += chunk
        self.answer()
        return True

    def answer(self):
        pending = self.output[self.answered_to:]
        match = PIN_PROMPT.search(pending)
        if match:
            label = match.group(1).decode()
            if label not in self.pins:
                raise Failure(f"{self.block.where()}: a PIN prompt for token {label!r}, which no earlier "
                              "`secure token init-demo --label` made")
            pin_path = self.pins[label].replace("HOME", self.home, 1)
            with open(pin_path, "rb") as pin_file:
                pin = pin_file.read().strip()
            os.write(self.fd, pin + b"\n")
            self.answered_to = len(self.output)
        elif YES_NO_PROMPT.search(pending):
            os.write(self.fd, b"y\n")
            self.answered_to = len(self.output)

    def poll(self):
        if self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(status)
        return self.status

    def kill(self):
        if self.poll() is None:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            _, status = os.waitpid(self.pid, 0)
            self.status = os.waitstatus_to_exitcode(status)

    def text(self):
        return self.output.decode("utf-8", "replace").replace("\r\n", "\n")


def write_script(block, state, directory):
    """A wrapper that restores the last block's folder and exports, runs the block, and saves them again."""
    block_file = os.path.join(directory, f"block-{block.line}.sh")
    with open(block_file, "w", encoding="utf-8") as handle:
        handle.write(block.text + "\n")
    wrapper = os.path.join(directory, f"run-{block.line}.sh")
    save = "" if block.kind == "background" else \
        f'export -p > {shlex.quote(state)}/env.new\npwd > {shlex.quote(state)}/cwd\n' \
        f'mv {shlex.quote(state)}/env.new {shlex.quote(state)}/env\n'
    with open(wrapper, "w", encoding="utf-8") as handle:
        handle.write(
            f"source {shlex.quote(state)}/env\n"
            f'cd "$(cat {shlex.quote(state)}/cwd)"\n'
            "set -euo pipefail\n"
            f"trap 'echo \"readme-run: exit $? at README.md line $(({block.line - 1} + LINENO))\" >&2' ERR\n"
            f"source {shlex.quote(block_file)}\n"
            "trap - ERR\n"
            "set +eu\n" + save)
    return wrapper


def run(blocks, pins, repository, keep, show):
    work = tempfile.mkdtemp(prefix="readme-run.")
    home, state = os.path.join(work, "home"), os.path.join(work, "state")
    os.makedirs(home)
    os.makedirs(state)
    environment = {"HOME": home, "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                   "LANG": "C.UTF-8", "TERM": "xterm", "TZ": "UTC", "USER": os.environ.get("USER", "root"),
                   "LOGNAME": os.environ.get("USER", "root"), "SHELL": "/bin/bash"}
    with open(os.path.join(state, "env"), "w", encoding="utf-8") as handle:
        handle.write("".join(f"export {key}={shlex.quote(value)}\n" for key, value in environment.items()))
    with open(os.path.join(state, "cwd"), "w", encoding="utf-8") as handle:
        handle.write(repository + "\n")
    print(f"readme-run: HOME={home}")
    background, running, failed, total = [], [], None, time.monotonic()
    try:
        for block in blocks:
            if block.kind == "no-run":
                print(f"  {block.where():<20}  skipped (no-run: {block.reason})")
                continue
            process = Process(block, write_script(block, state, work), environment, pins, home)
            running = [process]
            if block.kind == "background":
                wait_ready(process)
                background.append(process)
                print(f"  {block.where():<20}  started in the background ({block.reason})")
                continue
            limit = float(block.attributes.get("timeout", blockSecondsMax))
            while process.pump(0.05) or process.poll() is None:
                if process.fd is None:
                    time.sleep(0.05)
                for other in background:
                    other.pump(0)
                if time.monotonic() - process.started > limit:
                    process.kill()
                    raise_failed(process, f"still running after {limit} s (waiting for input?)")
            seconds = time.monotonic() - process.started
            if process.poll() != 0:
                raise_failed(process, f"exit {process.status}")
            print(f"  {block.where():<20}  {seconds:6.1f} s  ok")
            if show:
                print(indent(process.text()))
            # A background block is the other terminal of this block: both are done now.
            for other in background:
                finish_background(other, show)
            background = []
    except Failure as failure:
        failed = failure
        for other in background:
            print(f"---- output so far of the background block at {other.block.where()} ----\n{other.text()}----",
                  file=sys.stderr)
    finally:
        for process in background + running:
            process.kill()
        if keep or failed:
            print(f"readme-run: the run's files are kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    if failed:
        print(f"readme-run: FAILED: {failed}", file=sys.stderr)
        return 1
    print(f"readme-run: every block passed in {time.monotonic() - total:.1f} s")
    return 0


def wait_ready(process):
    ready = process.block.attributes["ready"].encode()
    while ready not in process.output:
        if not process.pump(0.05) and process.poll() is not None:
            raise_failed(process, f"ended (exit {process.status}) before printing {ready.decode()!r}")
        if time.monotonic() - process.started > backgroundReadySecondsMax:
            process.kill()
            raise_failed(process, f"did not print {ready.decode()!r} within {backgroundReadySecondsMax} s")


def finish_background(process, show):
    deadline = time.monotonic() + backgroundEndSecondsMax
    while process.pump(0.05) or process.poll() is None:
        if process.fd is None:
            time.sleep(0.05)
        if time.monotonic() > deadline:
            process.kill()
            raise_failed(process, f"still running {backgroundEndSecondsMax} s after the block it goes with ended")
    seconds = time.monotonic() - process.started
    if process.status != 0:
        raise_failed(process, f"the background block ended with exit {process.status}")
    print(f"  {process.block.where():<20}  {seconds:6.1f} s  ok (background, ended)")
    if show:
        print(indent(process.text()))


def indent(text):
    return "".join(f"      | {line}\n" for line in text.rstrip("\n").split("\n"))


def raise_failed(process, why):
    print(f"---- output of the block at {process.block.where()} ----\n{process.text()}----", file=sys.stderr)
    raise Failure(f"{process.block.where()}: {why}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--readme", default=None)
    parser.add_argument("--keep", action="store_true", help="keep the temporary HOME")
    parser.add_argument("--show", action="store_true", help="print every block's output, not only a failed one's")
    parser.add_argument("--list", action="store_true", help="list the blocks and check them; run nothing")
    parser.add_argument("--self-test", action="store_true", help="check the runner on small READMEs")
    arguments = parser.parse_args()
    if arguments.self_test:
        return self_test()
    repository = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    readme = arguments.readme or os.path.join(repository, "README.md")
    try:
        blocks = parse_blocks(readme)
        pins = check_files(blocks, repository)
        check_no_run(blocks)
    except Failure as failure:
        print(f"readme-run: FAILED: {failure}", file=sys.stderr)
        return 1
    if arguments.list:
        for block in blocks:
            print(f"{block.where():<20} {block.kind:<10} {block.reason}")
        return 0
    before = git_status(repository)
    status = run(blocks, pins, repository, arguments.keep, arguments.show)
    after = git_status(repository)
    if before != after:
        print("readme-run: FAILED: the README run changed the repository (`git status --porcelain`):\n"
              + "\n".join(sorted(set(after.splitlines()) ^ set(before.splitlines()))), file=sys.stderr)
        return 1
    return status


# (README text, exit code, text stderr or stdout must hold): the runner's own checks, run by --self-test.
SELF_TESTS = [
    ("```sh\nexport X=1\nmkdir -p ~/d\ncd ~/d\necho hi > a.txt\n```\n"
     "```sh background ready=up: a second terminal\necho up\nsleep 0.5\necho done > ~/bg.txt\n```\n"
     "```sh\ntest \"$X\" = 1\ntest \"$PWD\" = \"$HOME/d\"\ncat a.txt\n```\n"
     "```sh\ngrep done ~/bg.txt\n```\n", 0, "every block passed"),
    ("```sh\ntrue\nfalse\ntrue\n```\n", 1, "exit 1 at README.md line 3"),
    ("```sh\necho x > made.txt\n```\n```sh\ncat made.txt other.txt\n```\n", 1,
     "`other.txt` is used before any earlier command makes it"),
    ("```sh\ntrue && false\n```\n", 1, "`&&` in a block"),
    ("```sh no-run: slow\nsecure balance\n```\n", 1, "only scripts/test, scripts/demo, scripts/clearing-demo and hardware examples"),
    ("```sh no-run: hardware: a board\nsecure pay --to 1\n```\n```sh\ntrue\n```\n", 1, "no runnable twin"),
    ("```sh background ready=never: a second terminal\nexit 3\n```\n```sh\ntrue\n```\n", 1,
     "ended (exit 3) before printing 'never'"),
    ("```sh\nunset HOME_X\necho $HOME_X\n```\n", 1, "HOME_X: unbound variable"),
]


def self_test():
    """Runs the runner on small READMEs that must pass or fail; 0 when each did as expected."""
    failures = 0
    with tempfile.TemporaryDirectory() as directory:
        for number, (text, expected_status, expected_text) in enumerate(SELF_TESTS):
            readme = os.path.join(directory, f"case-{number}.md")
            with open(readme, "w", encoding="utf-8") as handle:
                handle.write(text)
            result = subprocess.run([sys.executable, os.path.abspath(__file__), "--readme", readme],
                                    capture_output=True, text=True, timeout=60)
            output = result.stdout + result.stderr
            if result.returncode != expected_status or expected_text not in output:
                failures += 1
                print(f"readme-run self-test {number}: expected exit {expected_status} and {expected_text!r}, got "
                      f"exit {result.returncode}:\n{output}", file=sys.stderr)
            for line in output.splitlines():
                if line.startswith("readme-run: the run's files are kept in "):
                    shutil.rmtree(line.split(" in ", 1)[1], ignore_errors=True)
    print(f"readme-run: self-test {'passed' if failures == 0 else 'FAILED'} ({len(SELF_TESTS)} cases)")
    return 1 if failures else 0


def git_status(repository):
    return subprocess.run(["git", "-C", repository, "status", "--porcelain"],
                          capture_output=True, text=True).stdout


if __name__ == "__main__":
    sys.exit(main())
