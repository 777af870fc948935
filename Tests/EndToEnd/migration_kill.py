"""Kills `siwa migrate` again and again until a run finishes: each run is SIGKILLed after its
first to LINES-th line of progress (a file begun, a statement recorded; the line of a lease taken
over does not count), and after a random 0-20 ms more, so that the kills land before, inside and
after statements, also between a statement's end and its record. Each next run must take the
stopped run's lease over and go on.

    migration_kill.py SEED LINES COMMAND...   prints "KILLS RUNS" when a run finishes by itself

A run that fails (exits non-zero without being killed) or takes over 60 s fails the check."""

import os
import random
import selectors
import signal
import subprocess
import sys
import time

seed, lines, command = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
rng = random.Random(seed)
kills = 0
for run in range(1, 400):
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    kill_after = rng.randint(1, lines)
    delay = rng.choice([0, 0, rng.uniform(0, 0.02)])
    output, progress, killed = [], 0, False
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + 60
    buffer = b""
    while not killed:
        if not selector.select(timeout=max(0.0, deadline - time.monotonic())):
            process.kill()
            sys.exit(f"run {run}: no end after 60 s; its output:\n" + "".join(output))
        chunk = os.read(process.stdout.fileno(), 65536)
        if not chunk:
            break
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            output.append(line.decode(errors="replace") + "\n")
            if not line.startswith(b"taking over"):
                progress += 1
            if progress == kill_after:
                if delay:
                    time.sleep(delay)  # where the kill lands, not a wait for anything
                process.send_signal(signal.SIGKILL)
                killed = True
                break
    selector.close()
    status = process.wait(timeout=60)
    if killed and status == -signal.SIGKILL:
        kills += 1
        continue
    if status != 0:
        sys.exit(f"run {run} failed with status {status} after {kills} kills (seed {seed}); its output:\n" + "".join(output))
    print(kills, run)
    sys.exit(0)
sys.exit(f"no run finished in 400 (seed {seed})")
