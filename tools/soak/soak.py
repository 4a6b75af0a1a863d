"""Soak run of a release Glimpse server (see tools/soak/run.sh for the options and what it checks).

Open-loop load from glimpse-load at FACTOR x the model's closed-loop capacity with a deadline on every
call, a `models.reload` (admin key) every RELOAD seconds, a share of hostile requests from a second
client, the server's RSS and its `glimpse_requests_total` counters sampled every 10 s, then one
SIGTERM while a last load runs: the drain must answer what it accepted. Writes soak.csv and soak.svg
into the output folder and prints the verdict lines. Everything is bounded in time and count.
"""
import argparse
import base64
import csv
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(port, body, timeout=10):
    """One HTTP/1.1 POST to /rpc; (status, parsed JSON or None)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        headers = {"content-type": "application/json"}
        conn.request("POST", "/rpc", body=body, headers=headers)
        r = conn.getresponse()
        raw = r.read()
        try:
            return r.status, json.loads(raw)
        except ValueError:
            return r.status, None
    finally:
        conn.close()


def metrics(port):
    """glimpse_requests_total by (outcome, reason), summed over the other labels."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
    finally:
        conn.close()
    out = {}
    for line in text.splitlines():
        if not line.startswith("glimpse_requests_total{"):
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', line[line.index("{"):line.index("}")]))
        key = (labels.get("outcome", ""), labels.get("reason", ""))
        out[key] = out.get(key, 0) + float(line.rsplit(" ", 1)[1])
    return out


def rss_mib(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def hostile_bodies(image):
    """Requests a client may get wrong; each must get a JSON-RPC error, never break the server."""
    good = base64.b64encode(image).decode()
    return [
        b'{"jsonrpc":"2.0","id":1,"method":"classify","params":{"image":"',           # truncated JSON
        b'{"jsonrpc":"2.0","id":1,"method":"classify","params":{"image":"@@@not base64@@@"}}',
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "classify", "params": {"image": good[: len(good) // 2]}}).encode(),
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "classify", "params": {"image": good, "top_k": -3}}).encode(),
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "classify", "params": {"image": good, "model": "no-such-model"}}).encode(),
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "no.such.method"}).encode(),
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "models.unload", "params": {"model": "x"}}).encode(),  # not loaded
        b"[]",
        b"\x00\xff" * 64,
    ]


class Run:
    def __init__(self, a, work):
        self.a, self.work = a, work
        self.stop = threading.Event()
        self.reloads = {"ok": 0, "failed": 0}
        # (start, end) of each models.reload call, monotonic seconds.
        self.reload_spans = []
        self.reload_in_flight = False
        self.hostile = {"json_rpc_error": 0, "other": 0}
        self.rows = []

    def start_server(self, log_name):
        self.port = free_port()
        self.log = os.path.join(self.work, log_name)
        self.server = subprocess.Popen(
            [self.a.glimpse, "serve", "--host", "127.0.0.1", "--port", str(self.port), "--models", self.a.models,
             "--admin-without-auth", "--drain-timeout-s", "20"],
            stdout=open(self.log, "w"), stderr=subprocess.STDOUT)
        for _ in range(600):
            if "listening on" in open(self.log).read():
                return
            if self.server.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError("the server did not start:\n" + open(self.log).read()[-3000:])

    def load(self, args, json_path, seconds):
        return subprocess.Popen(
            [self.a.load, "--port", str(self.port), "--model", self.a.model, "--images", self.a.images, "-c", "2",
             "--quiet", "--timeout", "10", "--json", json_path, "--duration", str(seconds)] + args,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def capacity(self):
        path = os.path.join(self.work, "capacity.json")
        p = self.load(["--concurrency", "64", "--warmup", "2"], path, 10)
        p.wait(timeout=120)
        return json.load(open(path))["runs"][0]["achievedRate"]

    def reloader(self):
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "models.reload", "params": {"model": self.a.model}}).encode()
        while not self.stop.wait(self.a.reload_every):
            began = time.monotonic()
            self.reload_in_flight = True
            try:
                status, reply = post(self.port, body, timeout=60)
                self.reloads["ok" if reply and "result" in reply else "failed"] += 1
            except OSError:
                self.reloads["failed"] += 1
            self.reload_spans.append((began, time.monotonic()))
            self.reload_in_flight = False

    def reloading(self, at):
        """Whether `at` falls in a reload: from its call until 2 s after its answer, by when the old
        version has finished its last batch and been freed."""
        spans = self.reload_spans[-3:]
        return self.reload_in_flight or any(began <= at <= ended + 2 for began, ended in spans)

    def attacker(self, rate):
        bodies = hostile_bodies(open(self.a.sample, "rb").read())
        i = 0
        while not self.stop.wait(1 / rate):
            try:
                status, reply = post(self.port, bodies[i % len(bodies)])
                ok = reply is not None and "error" in (reply if isinstance(reply, dict) else {"error": 1})
                self.hostile["json_rpc_error" if ok and status < 500 else "other"] += 1
            except OSError:
                self.hostile["other"] += 1
            i += 1

    def plan_memory(self):
        """The model's cached execution plans from models.list: MiB, count, and count per batch size."""
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "models.list"}).encode()
        try:
            _, reply = post(self.port, body)
            for m in reply["result"]["models"]:
                if m["name"] == self.a.model:
                    mem = m["memory"]
                    by_batch = " ".join(f"{b}:{n}" for b, n in sorted(mem.get("plans_by_batch", {}).items(), key=lambda kv: int(kv[0])))
                    return round(mem["plans_bytes"] / 2**20, 1), mem["plans"], by_batch
        except (OSError, KeyError, TypeError, ValueError):
            pass
        return "", "", ""

    def sampler(self, start):
        last = metrics(self.port)
        while not self.stop.wait(10):
            try:
                now = metrics(self.port)
            except OSError:
                continue
            delta = {k: now.get(k, 0) - last.get(k, 0) for k in set(now) | set(last)}
            last = now
            at = time.monotonic()
            rss = rss_mib(self.server.pid)
            reloading = int(self.reloading(at))
            plans = self.plan_memory()
            self.rows.append({"second": round(at - start), "rss_mib": round(rss, 1), "reloading": reloading,
                              "plans_mib": plans[0], "plans": plans[1], "plans_by_batch": plans[2],
                              "ok": int(delta.get(("ok", ""), 0)),
                              **{f"refused_{r or 'none'}": int(v) for (o, r), v in delta.items() if o == "error"}})


def svg(rows, timeline, path):
    """Goodput and p99 per 10 s (from glimpse-load's timeline), errors by reason and RSS (server)."""
    w, h, pad = 900, 160, 40
    series = []
    buckets = {}
    for t in timeline:
        b = buckets.setdefault(t["second"] // 10, {"within": 0, "p99": 0.0})
        b["within"] += t.get("withinSLO", 0)
        b["p99"] = max(b["p99"], t.get("p99") or 0)
    keys = sorted(buckets)
    series.append(("goodput (answers within the deadline per s)", [buckets[k]["within"] / 10 for k in keys]))
    series.append(("p99 ms (worst second of each 10 s)", [buckets[k]["p99"] for k in keys]))
    series.append(("RSS MiB", [r["rss_mib"] for r in rows]))
    reasons = sorted({k for r in rows for k in r if k.startswith("refused_")})
    series.append(("errors per s, all reasons", [sum(r.get(k, 0) for k in reasons) / 10 for r in rows]))
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{len(series) * (h + pad) + pad}" font-family="sans-serif" font-size="12">']
    for i, (title, ys) in enumerate(series):
        top = pad + i * (h + pad)
        parts.append(f'<text x="10" y="{top - 8}">{title}</text><rect x="50" y="{top}" width="{w - 60}" height="{h}" fill="none" stroke="#999"/>')
        if ys:
            hi = max(max(ys), 1e-9)
            pts = " ".join(f"{50 + (w - 60) * j / max(1, len(ys) - 1):.1f},{top + h - h * y / hi:.1f}" for j, y in enumerate(ys))
            parts.append(f'<polyline fill="none" stroke="#1f77b4" stroke-width="1.5" points="{pts}"/><text x="12" y="{top + 12}">{hi:.0f}</text><text x="12" y="{top + h}">0</text>')
    parts.append("</svg>")
    open(path, "w").write("\n".join(parts))


def drain_check(run, a):
    """A last load, SIGTERM after 4 s: every request the server accepted must be answered."""
    path = os.path.join(run.work, "drain.json")
    p = run.load(["--rate", str(a.drain_rate), "--warmup", "0", "--deadline-ms", str(a.deadline_ms)], path, 8)
    time.sleep(4)
    run.server.send_signal(signal.SIGTERM)
    code = run.server.wait(timeout=60)
    p.wait(timeout=60)
    r = json.load(open(path))["runs"][0]
    return code, r


def main():
    p = argparse.ArgumentParser()
    for name, default in (("duration", 1800), ("factor", 2.0), ("deadline-ms", 100), ("reload-every", 30), ("hostile-share", 0.01),
                          ("drain-rate", 50)):
        p.add_argument(f"--{name}", type=type(default), default=default)
    for name in ("glimpse", "load", "models", "model", "images", "sample", "out"):
        p.add_argument(f"--{name}", required=True)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="glimpse-soak-")
    run = Run(a, work)
    run.start_server("serve.log")
    try:
        capacity = run.capacity()
        offered = max(1, round(capacity * a.factor))
        print(f"capacity of {a.model} (closed loop, 64 in flight): {capacity:.1f} img/s; offered {offered} req/s for {a.duration} s, "
              f"deadline_ms {a.deadline_ms}, models.reload every {a.reload_every} s, hostile share {a.hostile_share}", flush=True)
        start = time.monotonic()
        threads = [threading.Thread(target=run.reloader, daemon=True),
                   threading.Thread(target=run.attacker, args=(max(0.2, offered * a.hostile_share),), daemon=True),
                   threading.Thread(target=run.sampler, args=(start,), daemon=True)]
        for t in threads:
            t.start()
        main_json = os.path.join(work, "soak.json")
        # glimpse-load stops at --max-requests (1,000,000 by default), which 2x overload reaches in
        # minutes: allow the whole duration's arrivals, with a margin.
        cap = int(offered * a.duration * 1.1) + 1000
        load = run.load(["--rate", str(offered), "--warmup", "0", "--deadline-ms", str(a.deadline_ms),
                         "--max-requests", str(cap)], main_json, a.duration)
        load.wait(timeout=a.duration + 120)
        run.stop.set()
        for t in threads:
            t.join(timeout=70)
        r = json.load(open(main_json))["runs"][0]
        code, d = drain_check(run, a)
    finally:
        if run.server.poll() is None:
            run.server.kill()
    fields = ["second", "rss_mib", "reloading", "plans_mib", "plans", "plans_by_batch", "ok"] + sorted({k for row in run.rows for k in row if k.startswith("refused_")})
    with open(os.path.join(a.out, "soak.csv"), "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=fields, restval=0)
        wr.writeheader()
        wr.writerows(run.rows)
    svg(run.rows, r.get("timeline", []), os.path.join(a.out, "soak.svg"))
    report(a, r, d, code, run)


def report(a, r, d, code, run):
    offered = r.get("offered") or r["requests"]
    answered_or_refused = r["succeeded"] + sum(r.get("byRPCError", {}).values())
    transport = sum(r.get("byTransportError", {}).values())
    refused = r.get("byRPCError", {})
    # Refused before admission: -32000 (deadline_unmeetable, overloaded); the rest were admitted.
    admitted = r["succeeded"] + sum(v for k, v in refused.items() if not k.startswith("-32000"))
    within = r.get("withinSLO") or 0
    rss = [row["rss_mib"] for row in run.rows if row["second"] >= 300]
    print(f"requests: {offered} offered, {r['succeeded']} answered, RPC errors {refused}, transport errors {transport}, "
          f"lost {offered - answered_or_refused - transport}")
    print(f"admitted (answered or expired after admission): {admitted}; within the deadline: {within} "
          f"({100 * within / max(1, admitted):.2f}% of admitted)")
    if rss:
        mean = sum(rss) / len(rss)
        print(f"RSS after minute 5: {min(rss):.0f}-{max(rss):.0f} MiB (mean {mean:.0f}; {100 * (max(rss) - mean) / mean:+.1f}% / "
              f"{100 * (min(rss) - mean) / mean:+.1f}%)")
        # Samples taken while a reload held both versions, apart from the others.
        calm = [row["rss_mib"] for row in run.rows if row["second"] >= 300 and not row["reloading"]]
        during = [row["rss_mib"] for row in run.rows if row["second"] >= 300 and row["reloading"]]
        if calm:
            m = sum(calm) / len(calm)
            print(f"RSS after minute 5 outside reloads: {min(calm):.0f}-{max(calm):.0f} MiB over {len(calm)} samples (mean {m:.0f}; "
                  f"{100 * (max(calm) - m) / m:+.1f}% / {100 * (min(calm) - m) / m:+.1f}%); during a reload: "
                  + (f"{len(during)} samples, highest {max(during):.0f} MiB ({max(during) - m:+.0f} MiB)" if during else "no samples"))
    else:
        print("RSS after minute 5: no samples (run shorter than 5 minutes)")
    print(f"models.reload: {run.reloads}; hostile requests: {run.hostile}")
    # After SIGTERM the server sends GOAWAY and stops accepting: requests it never took (GOAWAY, refused
    # streams, refused connections) are not lost; a reset, closed or timed-out stream it had taken is.
    errors = d.get("byTransportError", {})
    unprocessed = sum(v for k, v in errors.items() if k.startswith(("goaway", "connect")) or "REFUSED_STREAM" in k)
    print(f"drain (SIGTERM after 4 s of {a.drain_rate} req/s): exit code {code}; {d['succeeded']} answered, RPC errors "
          f"{d.get('byRPCError', {})}, transport errors {errors}: {unprocessed} never taken by the server, "
          f"{sum(errors.values()) - unprocessed} taken and not answered; HTTP statuses {d.get('byStatus', {})}")
    print(f"wrote {os.path.join(a.out, 'soak.csv')} and {os.path.join(a.out, 'soak.svg')}")


if __name__ == "__main__":
    sys.exit(main())
