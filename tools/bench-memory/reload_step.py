#!/usr/bin/env python3
"""The RSS step of a reload: how much a model's reload adds while the old and new version are both
resident, on an idle server.

    python3 tools/bench-memory/reload_step.py [--glimpse .build/release/glimpse] [--models models]
                                             [--model cifar10-large] [--reloads 4] [-- SERVE FLAGS...]

Starts `glimpse serve` (loopback, a free port, --admin-without-auth), samples its RSS every 5 ms, and
for each of --reloads `models.reload` calls prints the call's time, RSS before it, the highest RSS
from the call until 1 s after its answer, and RSS then. Bounded: a fixed number of calls, each with a
60 s timeout, and the server stopped at the end.
"""
import argparse, http.client, json, os, socket, subprocess, sys, threading, time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
    return 0.0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--glimpse", default=".build/release/glimpse")
    p.add_argument("--models", default="models")
    p.add_argument("--model", default="cifar10-large")
    p.add_argument("--reloads", type=int, default=4)
    p.add_argument("serve_flags", nargs="*")
    a = p.parse_args()
    port = free_port()
    log = open(os.devnull, "w")
    server = subprocess.Popen([a.glimpse, "serve", "--host", "127.0.0.1", "--port", str(port), "--models", a.models,
                               "--admin-without-auth"] + a.serve_flags, stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(600):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if server.poll() is not None:
                    sys.exit("the server did not start")
                time.sleep(0.1)
        time.sleep(1)
        samples, stop = [], threading.Event()

        def sampler():
            while not stop.is_set():
                samples.append((time.monotonic(), rss_mib(server.pid)))
                time.sleep(0.005)

        t = threading.Thread(target=sampler, daemon=True)
        t.start()
        time.sleep(0.5)
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "models.reload", "params": {"model": a.model}})
        for i in range(a.reloads):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            began = time.monotonic()
            conn.request("POST", "/rpc", body, {"content-type": "application/json"})
            reply = json.loads(conn.getresponse().read())
            ended = time.monotonic()
            conn.close()
            time.sleep(1.0)
            before = [r for at, r in samples if at < began][-1]
            peak = max(r for at, r in samples if began <= at <= ended + 1.0)
            status = "ok" if "result" in reply else f"error {reply.get('error')}"
            print(f"reload {i + 1} of {a.model} ({status}): {ended - began:.3f} s; RSS before {before:.1f} MiB, "
                  f"highest {peak:.1f} MiB (+{peak - before:.1f}), 1 s after {samples[-1][1]:.1f} MiB", flush=True)
        stop.set()
        t.join(timeout=5)
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()


if __name__ == "__main__":
    main()
