#!/usr/bin/env python3
"""Runs `secure wallet show --wallet W` on a pseudo-terminal, waits for its PIN prompt, types Ctrl-C, and
prints whether echo was off during the prompt and is back on after the process died of the signal.

    sigint_pin.py SECURE WALLET
"""
import os, pty, sys, time, termios, select, signal
binary, wallet = sys.argv[1], sys.argv[2]
pid, fd = pty.fork()
if pid == 0:
    # A test runner may ignore SIGINT, and children inherit that: a person's shell does not.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
    os.execv(binary, [binary, "wallet", "show", "--wallet", wallet])
out = b""
deadline = time.time() + 20
while time.time() < deadline and b"PIN" not in out:
    r, _, _ = select.select([fd], [], [], 0.2)
    if r: out += os.read(fd, 1024)
time.sleep(0.3)
before = termios.tcgetattr(fd)[3] & termios.ECHO
os.write(fd, b"\x03")
status = None
for _ in range(100):
    done, code = os.waitpid(pid, os.WNOHANG)
    if done:
        status = code
        break
    time.sleep(0.1)
if status is None:
    os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    print("still running 10 s after Ctrl-C")
after = termios.tcgetattr(fd)[3] & termios.ECHO
print("prompt" if b"PIN" in out else "noprompt", "echo-during", bool(before), "echo-after", bool(after), "signaled", os.WIFSIGNALED(status))
