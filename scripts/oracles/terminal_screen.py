#!/usr/bin/env python3
"""Runs a command on a pseudo-terminal, as a person at a terminal would, and prints the screen they would see.

    terminal_screen.py --until TEXT --answer LINE [--timeout S] -- COMMAND ARG...

Everything the command writes (stdout, stderr and /dev/tty) goes through pyte, a VT100 emulator, so escape
sequences, carriage returns and erased lines act as they would on a real terminal. When TEXT appears on the
screen, LINE and a newline are typed. The screen (80x40) is printed once the command exits, then a line
"exit N". Tests use it to check that peer text cannot change what a prompt shows.
"""
import argparse
import os
import pty
import select
import sys
import time

import pyte


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--until", required=True)
    parser.add_argument("--answer", required=True)
    parser.add_argument("--timeout", type=float, default=60)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    screen = pyte.Screen(80, 40)
    stream = pyte.ByteStream(screen)
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(command[0], command)
    answered = False
    deadline = time.monotonic() + args.timeout
    status = None
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                data = os.read(fd, 4096)
            except OSError:
                data = b""
            if not data:
                break
            stream.feed(data)
            if not answered and args.until in "\n".join(screen.display):
                os.write(fd, args.answer.encode() + b"\n")
                answered = True
        done, code = os.waitpid(pid, os.WNOHANG)
        if done:
            status = code
            # Drain what is left.
            while True:
                ready, _, _ = select.select([fd], [], [], 0.2)
                if not ready:
                    break
                try:
                    data = os.read(fd, 4096)
                except OSError:
                    break
                if not data:
                    break
                stream.feed(data)
            break
    if status is None:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
        _, status = os.waitpid(pid, 0)
    for line in screen.display:
        print(line.rstrip())
    print(f"answered {answered}")
    print(f"exit {os.waitstatus_to_exitcode(status)}")


if __name__ == "__main__":
    sys.exit(main())
