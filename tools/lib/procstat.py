#!/usr/bin/env python3
"""What /proc says about a server process, for the benchmarks that compare two builds.

    cpu_seconds(pid)   user + system CPU seconds of the process (all its threads)
    switches(pid)      voluntary context switches, summed over its threads
"""
import os

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """User + system CPU seconds of a process (all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def switches(pid):
    """Voluntary context switches of a process, summed over its threads."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches"):
                        total += int(line.split()[1])
        except OSError:
            pass  # a thread that ended meanwhile
    return total
