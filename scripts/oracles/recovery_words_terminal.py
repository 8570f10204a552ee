#!/usr/bin/env python3
"""Plays the person at the terminal for `wallet init --recovery-words` and `wallet recover --recovery-words`.

    recovery_words_terminal.py init|init-wrong|recover --stdout FILE --stderr FILE [--words W...] -- COMMAND ARG...

The command runs on a pseudo-terminal, so /dev/tty is the terminal, while its stdout and stderr go to the
named files: a test can then check that the words appeared on the terminal and nowhere else.

- init: reads the 24 numbered words off the terminal, presses Enter, and types back each word asked for;
  prints "words: W1 … W24".
- init-wrong: the same, but types a wrong word at every question.
- recover: types --words (all 24, one line) when asked for the recovery words.

Prints "exit N" last. Used by RecoveryWordsCLITests; the project's own code is not used here.
"""
import argparse
import os
import pty
import re
import select
import sys
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["init", "init-wrong", "recover"])
    parser.add_argument("--stdout", required=True)
    parser.add_argument("--stderr", required=True)
    parser.add_argument("--words", nargs="*", default=[])
    parser.add_argument("--timeout", type=float, default=60)
    split = sys.argv.index("--")
    args = parser.parse_args(sys.argv[1:split])
    command = sys.argv[split + 1:]
    pid, fd = pty.fork()
    if pid == 0:
        out = os.open(args.stdout, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        err = os.open(args.stderr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(out, 1)
        os.dup2(err, 2)
        os.execvp(command[0], command)
    seen = ""
    words = {}
    answered = 0
    deadline = time.monotonic() + args.timeout
    status = None
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                data = os.read(fd, 4096)
            except OSError:
                data = b""
            if data:
                seen += data.decode("utf-8", "replace")
                if args.mode != "recover" and not words and "Press Enter" in seen:
                    words = {int(n): w for n, w in re.findall(r"(\d+)\. ([a-z]+)", seen)}
                    os.write(fd, b"\n")
                questions = re.findall(r"Type word (\d+): ", seen)
                if len(questions) > answered:
                    position = int(questions[answered])
                    answer = words.get(position, "") if args.mode == "init" else "zoo" + words.get(position, "")
                    os.write(fd, answer.encode() + b"\n")
                    answered += 1
                if args.mode == "recover" and "Type the 24 recovery words" in seen and answered == 0:
                    os.write(fd, " ".join(args.words).encode() + b"\n")
                    answered = 1
        done, code = os.waitpid(pid, os.WNOHANG)
        if done:
            status = code
            break
    if status is None:
        os.kill(pid, 9)
        _, status = os.waitpid(pid, 0)
    if words:
        print("words: " + " ".join(words[n] for n in sorted(words)))
    print(f"exit {os.waitstatus_to_exitcode(status)}")


if __name__ == "__main__":
    sys.exit(main())
