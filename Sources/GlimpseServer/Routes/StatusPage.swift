/// The live status page served at `GET /`: one self-contained HTML document (inline CSS and JS, no
/// external resources) that polls `/metrics` every second, parses the Prometheus text format and shows
/// throughput, latency percentiles (from histogram bucket deltas), batching, variant mix, energy and
/// process figures over the last 10 s. Each figure has a stable element id, and `<body data-ready="1">`
/// marks the first render with rates (after the second poll), so a headless browser test can read it.
enum StatusPage {
    static let html: String = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Glimpse status</title>
<style>
  :root { --bg: #f5f6f8; --card: #fff; --fg: #1c2330; --muted: #5b6575; --line: #dde1e7; --accent: #2f6fdf; --bad: #b3261e; }
  @media (prefers-color-scheme: dark) {
    :root { --bg: #12151b; --card: #1b2029; --fg: #e6e9ee; --muted: #9aa4b2; --line: #2c333f; --accent: #6ea0ff; --bad: #ff8a80; }
  }
  * { box-sizing: border-box; }
  body { margin: 0; font: 15px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background: var(--bg); color: var(--fg); }
  header { display: flex; flex-wrap: wrap; align-items: baseline; gap: .5rem 1.5rem; padding: 1rem 1.5rem; border-bottom: 1px solid var(--line); }
  h1 { margin: 0; font-size: 1.3rem; }
  #status { color: var(--muted); font-size: .9rem; }
  #status.error { color: var(--bad); }
  main { display: grid; grid-template-columns: repeat(auto-fill, minmax(260px, 1fr)); gap: 1rem; padding: 1.5rem; }
  section { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: .9rem 1.1rem; }
  h2 { margin: 0 0 .6rem; font-size: .8rem; letter-spacing: .06em; text-transform: uppercase; color: var(--muted); }
  dl { margin: 0; display: grid; grid-template-columns: auto 1fr; gap: .35rem 1rem; align-items: baseline; }
  dt { color: var(--muted); }
  dd { margin: 0; text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
  .big { font-size: 1.6rem; font-weight: 600; }
  .unit { color: var(--muted); font-size: .85rem; }
  .badge { display: inline-block; padding: 0 .5rem; border-radius: 999px; border: 1px solid var(--line); font-size: .8rem; color: var(--muted); }
  table { width: 100%; border-collapse: collapse; font-variant-numeric: tabular-nums; }
  th, td { padding: .25rem .3rem; text-align: right; border-bottom: 1px solid var(--line); white-space: nowrap; }
  td:first-child { white-space: normal; }
  th:first-child, td:first-child { text-align: left; }
  th { color: var(--muted); font-weight: 500; font-size: .85rem; }
  .bar { height: 6px; border-radius: 3px; background: var(--line); overflow: hidden; margin-top: 2px; }
  .bar > span { display: block; height: 100%; background: var(--accent); }
  svg.spark { width: 100%; height: 36px; display: block; margin-top: .5rem; }
  svg.spark polyline { fill: none; stroke: var(--accent); stroke-width: 1.5; vector-effect: non-scaling-stroke; }
  .wide { grid-column: span 2; }
  @media (max-width: 600px) { .wide { grid-column: auto; } }
  .visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
  .note { color: var(--muted); font-size: .8rem; margin: .6rem 0 0; }
</style>
</head>
<body>
<header>
  <h1>Glimpse</h1>
  <span id="status">waiting for the first scrape of /metrics…</span>
  <span id="announce" class="visually-hidden" aria-live="polite"></span>
</header>
<main>
  <section aria-labelledby="h-throughput">
    <h2 id="h-throughput">Throughput</h2>
    <dl>
      <dt>Requests</dt><dd><span id="throughput" class="big">—</span> <span class="unit">req/s</span></dd>
      <dt>Images</dt><dd><span id="images-per-second">—</span> <span class="unit">img/s</span></dd>
      <dt>Errors</dt><dd><span id="error-rate">—</span> <span class="unit">%</span></dd>
    </dl>
    <svg class="spark" viewBox="0 0 60 30" preserveAspectRatio="none" role="img" aria-label="Images per second over the last minute"><polyline id="spark" points=""/></svg>
  </section>
  <section aria-labelledby="h-latency">
    <h2 id="h-latency">Latency (total, per image)</h2>
    <dl>
      <dt>p50</dt><dd><span id="p50" class="big">—</span> <span class="unit">ms</span></dd>
      <dt>p90</dt><dd><span id="p90">—</span> <span class="unit">ms</span></dd>
      <dt>p99</dt><dd><span id="p99">—</span> <span class="unit">ms</span></dd>
    </dl>
  </section>
  <section aria-labelledby="h-batching">
    <h2 id="h-batching">Batching</h2>
    <dl>
      <dt>Mean batch size</dt><dd><span id="batch-size" class="big">—</span></dd>
      <dt>Queue depth</dt><dd><span id="queue-depth">—</span></dd>
      <dt>In flight</dt><dd><span id="inflight">—</span> <span class="unit">requests</span></dd>
    </dl>
  </section>
  <section aria-labelledby="h-energy">
    <h2 id="h-energy">Energy <span id="energy-source" class="badge">—</span></h2>
    <dl>
      <dt>Per image</dt><dd><span id="energy-per-image" class="big">—</span> <span class="unit">mJ</span></dd>
      <dt>Power</dt><dd><span id="power">—</span> <span class="unit">W</span></dd>
      <dt>Process per image</dt><dd><span id="energy-per-image-process">—</span> <span class="unit">mJ</span></dd>
    </dl>
  </section>
  <section class="wide" aria-labelledby="h-stages">
    <h2 id="h-stages">Latency by stage</h2>
    <table>
      <thead><tr><th scope="col">stage</th><th scope="col">p50 ms</th><th scope="col">p90 ms</th><th scope="col">p99 ms</th><th scope="col">mean ms</th></tr></thead>
      <tbody id="stages"><tr><td colspan="5">—</td></tr></tbody>
    </table>
  </section>
  <section aria-labelledby="h-variants">
    <h2 id="h-variants">Variant mix</h2>
    <table>
      <thead><tr><th scope="col">model / variant</th><th scope="col">share</th><th scope="col">img/s</th></tr></thead>
      <tbody id="variant-mix"><tr><td colspan="3">—</td></tr></tbody>
    </table>
  </section>
  <section aria-labelledby="h-process">
    <h2 id="h-process">Process</h2>
    <dl>
      <dt>Resident memory</dt><dd><span id="rss" class="big">—</span> <span class="unit">MiB</span></dd>
      <dt>CPU</dt><dd><span id="cpu">—</span> <span class="unit">cores</span></dd>
      <dt>Models loaded</dt><dd><span id="models">—</span></dd>
    </dl>
  </section>
</main>
<footer class="note" style="padding: 0 1.5rem 1.5rem">Rates, percentiles and means cover the last 10 s (Prometheus histogram bucket deltas between polls of <a href="metrics">/metrics</a>). Energy per image is the attributed inference energy (batch CPU time × watts per core); “process per image” divides all of the process’s energy by the images served.</footer>
<script>
"use strict";
const POLL_MS = 1000, WINDOW_MS = 10000, SPARK_POINTS = 60;
let history = [];   // snapshots {t, byName} inside the window, oldest first
const spark = [];

// Prometheus text format: `name{k="v",...} value [timestamp]`; label values escape \\, \" and \n.
function parseValue(s) {
  if (s === "+Inf") return Infinity;
  if (s === "-Inf") return -Infinity;
  return Number(s);
}

function parseLine(line) {
  let i = 0;
  while (i < line.length && line[i] !== "{" && line[i] !== " " && line[i] !== "\t") i++;
  const name = line.slice(0, i), labels = {};
  if (line[i] === "{") {
    i++;
    for (;;) {
      while (line[i] === " " || line[i] === ",") i++;
      if (i >= line.length) return null;
      if (line[i] === "}") { i++; break; }
      const eq = line.indexOf("=", i);
      if (eq < 0 || line[eq + 1] !== '"') return null;
      const key = line.slice(i, eq).trim();
      let value = "";
      for (i = eq + 2; i < line.length && line[i] !== '"'; i++) {
        if (line[i] === "\\" && i + 1 < line.length) { i++; value += line[i] === "n" ? "\n" : line[i]; }
        else value += line[i];
      }
      if (i >= line.length) return null;
      i++;
      labels[key] = value;
    }
  }
  const value = parseValue(line.slice(i).trim().split(/\s+/)[0]);
  return name && !Number.isNaN(value) ? { name, labels, value } : null;
}

function parseMetrics(text) {
  const byName = new Map();
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line[0] === "#") continue;
    const s = parseLine(line);
    if (!s) continue;
    if (!byName.has(s.name)) byName.set(s.name, []);
    byName.get(s.name).push(s);
  }
  return byName;
}

function matches(labels, want) {
  for (const k in want) if (labels[k] !== want[k]) return false;
  return true;
}

// Sum of the series of `name` whose labels match `want`; null when there is none.
function total(snap, name, want = {}) {
  let sum = null;
  for (const s of snap.byName.get(name) || []) if (matches(s.labels, want)) sum = (sum || 0) + s.value;
  return sum;
}

// Sums grouped by key(labels).
function grouped(snap, name, key, want = {}) {
  const out = new Map();
  for (const s of snap.byName.get(name) || []) {
    if (!matches(s.labels, want)) continue;
    const k = key(s.labels);
    out.set(k, (out.get(k) || 0) + s.value);
  }
  return out;
}

function delta(cur, old, name, want) {
  const a = total(cur, name, want), b = total(old, name, want);
  return a === null ? null : a - (b || 0);
}

// Cumulative bucket counts by upper bound, summed over matching series.
function buckets(snap, name, want) {
  return grouped(snap, name + "_bucket", l => parseValue(l.le), want);
}

// histogram_quantile over the bucket deltas: linear interpolation inside the bucket, as Prometheus does.
function quantile(q, cur, old) {
  const les = [...cur.keys()].sort((a, b) => a - b);
  const counts = les.map(le => cur.get(le) - (old.get(le) || 0));
  const n = counts[counts.length - 1];
  if (!(n > 0)) return null;
  const rank = q * n;
  let lower = 0, below = 0;
  for (let k = 0; k < les.length; k++) {
    if (counts[k] >= rank) {
      if (les[k] === Infinity) return k > 0 ? les[k - 1] : null;
      if (counts[k] === below) return les[k];
      return lower + (les[k] - lower) * (rank - below) / (counts[k] - below);
    }
    lower = les[k]; below = counts[k];
  }
  return null;
}

function fmt(x) {
  if (x === null || x === undefined || !Number.isFinite(x)) return "—";
  const a = Math.abs(x);
  if (a === 0) return "0";
  if (a >= 100) return x.toFixed(0);
  if (a >= 10) return x.toFixed(1);
  if (a >= 0.01) return x.toFixed(2);
  return x.toPrecision(2);
}

function show(id, x) { document.getElementById(id).textContent = fmt(x); }
function showCount(id, x) { document.getElementById(id).textContent = x === null ? "—" : String(Math.round(x)); }
function ratio(a, b) { return a === null || b === null || !(b > 0) ? null : a / b; }

function cell(tag, text, attrs) {
  const el = document.createElement(tag);
  el.textContent = text;
  if (attrs) for (const k in attrs) el.setAttribute(k, attrs[k]);
  return el;
}

function render(cur, old) {
  const dt = (cur.t - old.t) / 1000;
  const rate = (name, want) => ratio(delta(cur, old, name, want), dt);

  show("throughput", rate("glimpse_requests_total"));
  const errors = delta(cur, old, "glimpse_requests_total", { outcome: "error" });
  const ratioErr = ratio(errors === null ? 0 : errors, delta(cur, old, "glimpse_requests_total"));
  show("error-rate", ratioErr === null ? null : 100 * ratioErr);
  const imagesPerSecond = rate("glimpse_request_stage_seconds_count", { stage: "total" });
  show("images-per-second", imagesPerSecond);

  const latency = buckets(cur, "glimpse_request_stage_seconds", { stage: "total" });
  const latencyOld = buckets(old, "glimpse_request_stage_seconds", { stage: "total" });
  for (const [id, q] of [["p50", 0.5], ["p90", 0.9], ["p99", 0.99]]) {
    const v = quantile(q, latency, latencyOld);
    show(id, v === null ? null : v * 1000);
  }

  const stages = document.getElementById("stages");
  const rows = [];
  for (const stage of ["decode", "queue", "inference", "total"]) {
    const b = buckets(cur, "glimpse_request_stage_seconds", { stage }), bo = buckets(old, "glimpse_request_stage_seconds", { stage });
    const mean = ratio(delta(cur, old, "glimpse_request_stage_seconds_sum", { stage }), delta(cur, old, "glimpse_request_stage_seconds_count", { stage }));
    const tr = document.createElement("tr");
    tr.append(cell("th", stage, { scope: "row" }));
    for (const q of [0.5, 0.9, 0.99]) {
      const v = quantile(q, b, bo);
      tr.append(cell("td", fmt(v === null ? null : v * 1000), { id: `stage-${stage}-p${Math.round(q * 100)}` }));
    }
    tr.append(cell("td", fmt(mean === null ? null : mean * 1000), { id: `stage-${stage}-mean` }));
    rows.push(tr);
  }
  stages.replaceChildren(...rows);

  show("batch-size", ratio(delta(cur, old, "glimpse_batch_size_sum"), delta(cur, old, "glimpse_batch_size_count")));
  showCount("queue-depth", total(cur, "glimpse_queue_depth"));
  showCount("inflight", total(cur, "glimpse_inflight_requests"));

  // Variant mix: images served per family/variant in the window (since start when the window is idle).
  const key = l => l.family === l.variant ? l.variant : `${l.family} / ${l.variant}`;
  const now = grouped(cur, "glimpse_variant_selections_total", key), before = grouped(old, "glimpse_variant_selections_total", key);
  let mix = [...now].map(([k, v]) => [k, v - (before.get(k) || 0)]);
  const windowed = mix.some(([, v]) => v > 0);
  if (!windowed) mix = [...now];
  const sum = mix.reduce((s, [, v]) => s + v, 0);
  const mixRows = mix.filter(([, v]) => v > 0).sort((a, b) => b[1] - a[1]).map(([k, v]) => {
    const share = 100 * v / sum, tr = document.createElement("tr");
    const name = cell("td", k), bar = document.createElement("div"), fill = document.createElement("span");
    bar.className = "bar"; fill.style.width = share.toFixed(1) + "%"; bar.append(fill); name.append(bar);
    tr.append(name, cell("td", fmt(share) + " %"), cell("td", windowed ? fmt(v / dt) : "0"));
    return tr;
  });
  if (mixRows.length === 0) {
    const tr = document.createElement("tr");
    tr.append(cell("td", "no images served yet", { colspan: "3" }));
    mixRows.push(tr);
  }
  document.getElementById("variant-mix").replaceChildren(...mixRows);

  const energySources = grouped(cur, "glimpse_energy_joules_total", l => l.source || "");
  document.getElementById("energy-source").textContent = [...energySources.keys()].join(", ") || "—";
  const mj = ratio(delta(cur, old, "glimpse_inference_energy_joules_sum"), delta(cur, old, "glimpse_inference_energy_joules_count"));
  show("energy-per-image", mj === null ? null : mj * 1000);
  const processJ = ratio(delta(cur, old, "glimpse_energy_joules_total"), delta(cur, old, "glimpse_request_stage_seconds_count", { stage: "total" }));
  show("energy-per-image-process", processJ === null ? null : processJ * 1000);
  const watts = total(cur, "glimpse_power_watts");
  show("power", watts !== null ? watts : rate("glimpse_energy_joules_total"));

  const rss = total(cur, "glimpse_process_resident_memory_bytes");
  show("rss", rss === null ? null : rss / 1048576);
  show("cpu", rate("glimpse_process_cpu_seconds_total"));
  const models = grouped(cur, "glimpse_model_load_events_total", l => l.model, {});
  let loaded = 0;
  for (const m of models.keys()) {
    const up = total(cur, "glimpse_model_load_events_total", { model: m, outcome: "loaded" }) || 0;
    const down = total(cur, "glimpse_model_load_events_total", { model: m, outcome: "unloaded" }) || 0;
    if (up > down) loaded++;
  }
  showCount("models", loaded);

  spark.push(imagesPerSecond || 0);
  if (spark.length > SPARK_POINTS) spark.shift();
  const top = Math.max(1, ...spark);
  document.getElementById("spark").setAttribute("points",
    spark.map((v, i) => `${i + SPARK_POINTS - spark.length},${(30 - 28 * v / top).toFixed(1)}`).join(" "));
}

// The status line changes every second, so screen readers hear only changes between live and failing.
function setStatus(text, error) {
  const el = document.getElementById("status");
  el.textContent = text;
  if (el.classList.contains("error") !== error || !document.getElementById("announce").textContent) {
    document.getElementById("announce").textContent = error ? text : "Glimpse status is live";
  }
  el.classList.toggle("error", error);
}

async function poll() {
  try {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), 5000);
    const response = await fetch("metrics", { cache: "no-store", signal: controller.signal });
    clearTimeout(timer);
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const snap = { t: Date.now(), byName: parseMetrics(await response.text()) };
    const last = history[history.length - 1];
    // A counter that went down means the server restarted: start the window again.
    if (last && (total(snap, "glimpse_process_cpu_seconds_total") || 0) < (total(last, "glimpse_process_cpu_seconds_total") || 0)) history = [];
    history.push(snap);
    while (history.length > 2 && snap.t - history[1].t >= WINDOW_MS) history.shift();
    if (history.length >= 2) {
      render(snap, history[0]);
      document.body.dataset.ready = "1";
      setStatus(`live · updated ${new Date(snap.t).toLocaleTimeString()} · window ${((snap.t - history[0].t) / 1000).toFixed(0)} s`, false);
    } else {
      setStatus("first scrape done; rates appear after the next one…", false);
    }
  } catch (e) {
    setStatus(`cannot read /metrics (${e.message}); retrying…`, true);
  }
  setTimeout(poll, POLL_MS);
}

poll();
</script>
</body>
</html>
"""#
}
