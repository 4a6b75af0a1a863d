#!/usr/bin/env python3
"""Replicas behind HAProxy against one process, same closed-loop load (see run.sh)."""
import argparse
import json
import resource
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench-serving"))
from bench import cpu_seconds, free_port  # noqa: E402

def wait_ready(url, limit=60):
    end = time.monotonic() + limit
    while time.monotonic() < end:
        try:
            if urllib.request.urlopen(url, timeout=2).status == 200:
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} not ready within {limit} s")


def haproxy_config(ports):
    """The shipped configuration with these replicas between the servers markers (as scripts/cluster.sh)."""
    return subprocess.run(["deploy/haproxy/render.sh"] + [str(p) for p in ports], check=True, capture_output=True,
                          text=True, timeout=30).stdout


class Setup:
    """N replicas of `glimpse serve --threads T`, and HAProxy in front when `balanced`."""

    def __init__(self, name, replicas, threads, balanced, models, work, pinned=False):
        self.name, self.procs, self.lb = name, [], None
        ports = [free_port() for _ in range(replicas)]
        cores = os.cpu_count()
        for i, port in enumerate(ports):
            log = open(os.path.join(work, f"{name}-{i}.log"), "w")
            # Pinned as scripts/cluster.sh pins: replica i on cores [i*threads, (i+1)*threads).
            pin = ["taskset", "-c", ",".join(str((i * threads + k) % cores) for k in range(threads))] if pinned else []
            self.procs.append(subprocess.Popen(pin + [".build/release/glimpse", "serve", "--host", "127.0.0.1", "--port", str(port),
                                                "--models", models, "--threads", str(threads)], stderr=log))
            wait_ready(f"http://127.0.0.1:{port}/readyz")
        self.port = ports[0]
        if balanced:
            cfg = os.path.join(work, f"{name}.cfg")
            open(cfg, "w").write(haproxy_config(ports))
            self.port, stats = free_port(), free_port()
            env = dict(os.environ, GLIMPSE_LB_ADDR="127.0.0.1", GLIMPSE_LB_PORT=str(self.port), GLIMPSE_LB_STATS_PORT=str(stats),
                       GLIMPSE_LB_THREADS="1", GLIMPSE_LB_TLS_PORT=str(free_port()))
            self.lb = subprocess.Popen(["haproxy", "-db", "-f", cfg], env=env, stderr=subprocess.DEVNULL)
            wait_ready(f"http://127.0.0.1:{self.port}/readyz")
            time.sleep(1.5)  # every server passes its first checks (rise 2 at 500 ms)

    def stop(self):
        for p in self.procs + ([self.lb] if self.lb else []):
            p.send_signal(signal.SIGTERM)
        for p in self.procs + ([self.lb] if self.lb else []):
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()


def load(port, a):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run([".build/release/glimpse-load", "--port", str(port), "--model", a.model, "--images", a.images, "-c", "2",
                        "--concurrency", str(a.concurrency), "--duration", str(a.seconds), "--warmup", "2", "--top-k", "1",
                        "--quiet", "--max-requests", str(a.requests), "--json", f.name],
                       check=True, capture_output=True, timeout=a.seconds + 90)
        run = json.load(open(f.name))["runs"][0]
    return run["achievedRate"], run.get("ok", run.get("succeeded", 0)), run.get("errors", 0)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=int, default=15)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--requests", type=int, default=100000)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--model", default="mobilenetv2-12-int8")
    p.add_argument("--models", default="models")
    p.add_argument("--images", default="../shared/images/imagenet", help="a folder of photos, or one photo")
    a = p.parse_args()
    setups = [("1 replica x 1 thread, direct", 1, 1, False, False), ("1 replica x 2 threads, direct", 1, 2, False, False),
              ("2 replicas x 1 thread, HAProxy", 2, 1, True, True), ("1 replica x 2 threads, HAProxy", 1, 2, True, False),
              ("2 replicas x 1 thread, unpinned, HAProxy", 2, 1, True, False)]
    rates = {s[0]: [] for s in setups}
    lb_us = []
    work = tempfile.mkdtemp(prefix="glimpse-bench-cluster-")
    if os.path.isfile(a.images):  # one photo: a folder that holds only it
        folder = os.path.join(work, "images")
        os.mkdir(folder)
        os.symlink(os.path.abspath(a.images), os.path.join(folder, os.path.basename(a.images)))
        a.images = folder
    print(f"model {a.model}, {a.concurrency} streams over 2 connections, {a.seconds} s per run, {a.rounds} rounds, "
          f"{os.cpu_count()} cores")
    for r in range(a.rounds):
        for name, replicas, threads, balanced, pinned in setups:
            s = Setup(name.split(",")[0].replace(" ", ""), replicas, threads, balanced, a.models, work, pinned)
            try:
                lb_before = cpu_seconds(s.lb.pid) if s.lb else 0
                servers_before = sum(cpu_seconds(p.pid) for p in s.procs)
                client_before = resource.getrusage(resource.RUSAGE_CHILDREN)
                start = time.monotonic()
                rate, ok, errors = load(s.port, a)
                elapsed = time.monotonic() - start
                client = resource.getrusage(resource.RUSAGE_CHILDREN)
                client_cpu = client.ru_utime + client.ru_stime - client_before.ru_utime - client_before.ru_stime
                servers_cpu = sum(cpu_seconds(p.pid) for p in s.procs) - servers_before
                lb_cpu = cpu_seconds(s.lb.pid) - lb_before if s.lb else 0
                if s.lb and ok:
                    lb_us.append(lb_cpu / (ok + rate * 2) * 1e6)  # the warm-up's requests too
            finally:
                s.stop()
            rates[name].append(rate)
            print(f"round {r + 1}: {name:42s} {rate:8.1f} img/s  ({ok} ok, {errors} errors); cores busy: "
                  f"glimpse {servers_cpu / elapsed:.2f}, HAProxy {lb_cpu / elapsed:.2f}, glimpse-load {client_cpu / elapsed:.2f}",
                  flush=True)
    # Ratios paired within a round (the host has slow phases), then their median.
    cluster, one2, one1 = rates["2 replicas x 1 thread, HAProxy"], rates["1 replica x 2 threads, direct"], rates["1 replica x 1 thread, direct"]
    lb_only = rates["1 replica x 2 threads, HAProxy"]
    for label, num, den in [("2 x 1-thread replicas behind HAProxy / 1 replica with 2 threads", cluster, one2),
                            ("2 x 1-thread replicas behind HAProxy / 1 replica with 1 thread", cluster, one1),
                            ("1 replica with 2 threads behind HAProxy / the same direct", lb_only, one2),
                            ("2 x 1-thread replicas, not pinned, behind HAProxy / 1 replica with 2 threads",
                             rates["2 replicas x 1 thread, unpinned, HAProxy"], one2)]:
        ratios = sorted(n / d for n, d in zip(num, den))
        mid = len(ratios) // 2
        median = ratios[mid] if len(ratios) % 2 else (ratios[mid - 1] + ratios[mid]) / 2
        print(f"{label}: median {median:.3f} (rounds: {', '.join(f'{r:.3f}' for r in ratios)})")
    print(f"HAProxy CPU per request: {min(lb_us):.0f}-{max(lb_us):.0f} us (user + system, /proc/PID/stat)")


if __name__ == "__main__":
    main()
