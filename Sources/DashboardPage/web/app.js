// opqueue dashboard: reads the coordinator's JSON API (docs/HTTP.md) and draws it.
// Plain browser JavaScript, no libraries: opcoord serves this file from its own binary.
//
// Data shapes: protobuf JSON of Sources/WireProtocol/Schema/opqueue.proto (snake_case names,
// 64-bit integers as strings, default-valued fields left out), so every read goes through
// num()/str()/list() which supply the defaults.
"use strict";

// ---------------------------------------------------------------------------
// Small helpers

const $ = (id) => document.getElementById(id);

/** A number from a JSON field that may be a string (int64), a number, or absent (0). */
function num(v) {
  if (v === undefined || v === null || v === "") return 0;
  const n = typeof v === "number" ? v : Number(v);
  return Number.isFinite(n) ? n : 0;
}
const str = (v) => (v === undefined || v === null ? "" : String(v));
const list = (v) => (Array.isArray(v) ? v : []);

/** Creates an HTML element: el("td", {class: "x", "data-op": id}, "text", child…). */
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  setAttrs(e, attrs);
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

const SVG_NS = "http://www.w3.org/2000/svg";
function svg(tag, attrs, ...children) {
  const e = document.createElementNS(SVG_NS, tag);
  setAttrs(e, attrs);
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

function setAttrs(e, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "onclick") e.addEventListener("click", v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
}

/** Enum names as the JSON mapping writes them ("OP_STATE_FINISHED"), or their numbers. */
const STATE_BY_NUMBER = ["unspecified", "pending", "ready", "executing", "finished", "dispatched"];
function stateName(v) {
  if (typeof v === "number") return STATE_BY_NUMBER[v] || "unspecified";
  if (!v) return "pending";            // OP_STATE_UNSPECIFIED (0) is omitted; no op reports it
  return String(v).replace(/^OP_STATE_/, "").toLowerCase();
}
const QOS_BY_NUMBER = ["", "userInteractive", "userInitiated", "default", "utility", "background"];
function qosName(v) {
  if (typeof v === "number") return QOS_BY_NUMBER[v] || "";
  const s = str(v).replace(/^QOS_/, "").toLowerCase();
  return s === "unspecified" ? "" : s.replace(/_(.)/g, (_, c) => c.toUpperCase());
}

/** "succeeded" | "failed" | "cancelled" | "" for an OpStatus. */
function outcomeOf(op) {
  const o = op.outcome || {};
  if (op.cancelled || "cancelled" in o) return "cancelled";
  if ("failed" in o) return "failed";
  if ("succeeded" in o) return "succeeded";
  if (stateName(op.state) === "finished") return op.error ? "failed" : "succeeded";
  return "";
}
/** What colours an op: its outcome when finished, else its state. */
const displayState = (op) => outcomeOf(op) || stateName(op.state);

/** The key "RUN/OP" every other request names an op by. */
const opKey = (op) => (op.run ? `${op.run}/${op.id}` : str(op.id));

function fmtCount(n) { return num(n).toLocaleString("en-US"); }

/** A duration in µs as "850ms", "12.3s", "4m05s", "2h03m". */
function fmtDuration(us) {
  const s = us / 1e6;
  if (s < 1) return `${Math.round(us / 1000)}ms`;
  if (s < 60) return `${s.toFixed(1)}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(Math.floor(s % 60)).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}
function fmtTime(us) {
  if (!num(us)) return "";
  return new Date(num(us) / 1000).toLocaleTimeString("en-GB", { hour12: false });
}
function fmtBytes(n) {
  n = num(n);
  if (n < 1024) return `${n} B`;
  if (n < 1048576) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1048576).toFixed(1)} MiB`;
}

/** base64 (bytes fields) → text; undecodable bytes become U+FFFD rather than an exception. */
function b64text(b64) {
  if (!b64) return "";
  try {
    const bin = atob(b64);
    const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
    return new TextDecoder("utf-8", { fatal: false }).decode(bytes);
  } catch (e) {
    return `(undecodable: ${e.message})`;
  }
}

// ---------------------------------------------------------------------------
// HTTP access (with the optional bearer token of docs/HTTP.md "Access")

const TOKEN_KEY = "opqueue-token";
let tokenPrompt = null;   // the one open token question, shared by every request that got 401

const LIVE_PROTOCOL = "opqueue-live";

/** The token as a subprotocol may carry it: base64url of its UTF-8 bytes, unpadded. */
function base64url(text) {
  let bin = "";
  for (const b of new TextEncoder().encode(text)) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function authHeaders() {
  const t = sessionStorage.getItem(TOKEN_KEY);
  return t ? { Authorization: `Bearer ${t}` } : {};
}

/** Asks for the token once, however many requests are waiting for it. */
function askToken() {
  if (tokenPrompt) return tokenPrompt;
  tokenPrompt = new Promise((resolve) => {
    const dialog = $("token-dialog");
    const form = $("token-form");
    form.addEventListener("submit", () => {
      sessionStorage.setItem(TOKEN_KEY, $("token-input").value.trim());
      tokenPrompt = null;
      resolve();
    }, { once: true });
    if (!dialog.open) dialog.showModal();
  });
  return tokenPrompt;
}

class ApiError extends Error {
  constructor(status, body) {
    super(body && body.error ? `${body.error}${body.code ? ` (${body.code})` : ""}` : `HTTP ${status}`);
    this.status = status;
  }
}

/** GET a JSON path; on 401 asks for the token and tries again. */
async function api(path) {
  for (let tries = 0; tries < 3; tries++) {
    const res = await fetch(path, { headers: authHeaders(), cache: "no-store" });
    if (res.status === 401) { await askToken(); continue; }
    let body = null;
    try { body = await res.json(); } catch (_) { /* a non-JSON error page */ }
    if (!res.ok) throw new ApiError(res.status, body);
    return body;
  }
  throw new ApiError(401, { error: "not authorised" });
}

/** Every op record matching `query` (URLSearchParams), following next_after pages up to `cap`. */
async function fetchOps(query, cap) {
  const ops = [];
  let reply = null;
  let after = "";
  do {
    const q = new URLSearchParams(query);
    q.set("limit", String(Math.min(cap - ops.length, 5000)));
    if (after) q.set("after", after);
    reply = await api(`/api/ops?${q}`);
    ops.push(...list(reply.ops));
    after = str(reply.next_after);
  } while (after && ops.length < cap);
  return { ops, reply, truncated: !!after };
}

function showError(text) {
  const line = $("error-line");
  line.hidden = !text;
  line.textContent = text || "";
}

// ---------------------------------------------------------------------------
// Live summary: a WebSocket to /api/live, reconnected with backoff; /api/summary meanwhile.

const live = { ws: null, backoffMs: 500, timer: null, lastMessage: 0, pollOk: false };
let summary = null;            // the newest {status, runs, workers}
let summarySeq = 0;

function setConn(state, text) {
  const c = $("conn");
  c.dataset.state = state;
  c.textContent = text;
}

function connectLive() {
  clearTimeout(live.timer);
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  // A browser cannot set headers on a WebSocket: the token (if any) travels as a second subprotocol,
  // "bearer.BASE64URL(token)", next to "opqueue-live", which the server answers (docs/HTTP.md "Access").
  const token = sessionStorage.getItem(TOKEN_KEY);
  const protocols = token ? [LIVE_PROTOCOL, `bearer.${base64url(token)}`] : [LIVE_PROTOCOL];
  let ws;
  try { ws = new WebSocket(`${proto}//${location.host}/api/live`, protocols); } catch (_) { scheduleReconnect(); return; }
  live.ws = ws;
  ws.onopen = () => { live.backoffMs = 500; live.pollOk = false; setConn("live", "live"); };
  ws.onmessage = (ev) => {
    live.lastMessage = Date.now();
    try { onSummary(JSON.parse(ev.data)); } catch (e) { showError(`bad live message: ${e.message}`); }
  };
  ws.onclose = () => { if (live.ws === ws) { live.ws = null; scheduleReconnect(); } };
  ws.onerror = () => { /* onclose follows and reconnects */ };
}

/**
 * While the socket is down: poll /api/summary once per attempt and retry the socket with backoff.
 * "disconnected" when neither answers; "polling" when HTTP answers but the socket does not
 * (a proxy without WebSocket support, say), so the page still updates, more slowly.
 */
function scheduleReconnect() {
  if (!live.pollOk) setConn("disconnected", "disconnected");
  const delay = live.backoffMs;
  live.backoffMs = Math.min(live.backoffMs * 2, 5000);
  live.timer = setTimeout(async () => {
    try {
      onSummary(await api("/api/summary"));
      live.pollOk = true;
      setConn("polling", "polling");
    } catch (_) {
      live.pollOk = false;
      setConn("disconnected", "disconnected");
    }
    connectLive();
  }, delay);
}

// If the socket stays open but silent (a stalled coordinator), say so rather than look live.
setInterval(() => {
  if (live.ws && live.ws.readyState === WebSocket.OPEN && live.lastMessage && Date.now() - live.lastMessage > 5000) {
    setConn("stalled", "no updates");
  } else if (live.ws && live.ws.readyState === WebSocket.OPEN && live.lastMessage) {
    setConn("live", "live");
  }
}, 1000);

function onSummary(s) {
  summary = s;
  summarySeq += 1;
  renderSummary(s);
  document.body.dataset.summarySeq = String(summarySeq);
  document.body.dataset.nowUs = str((s.status || {}).now_us);
  requestPanelRefresh();
}

// ---------------------------------------------------------------------------
// Summary panels: header totals, runs, queues, workers

const COUNT_FIELDS = ["pending", "ready", "dispatched", "executing", "finished", "failed", "cancelled"];

function renderSummary(s) {
  const status = s.status || {};
  const queues = list(status.queues);
  renderTotals(status, queues, list((s.workers || {}).workers));
  renderRuns(s.runs || {});
  renderQueues(queues);
  renderWorkers(s.workers || {}, num(status.now_us) || num((s.runs || {}).now_us));
  updateFilterOptions(s);
}

function setTotal(id, value) {
  const e = $(id);
  e.dataset.value = String(value);
  e.textContent = fmtCount(value);
}

function renderTotals(status, queues, workers) {
  const sum = (f) => queues.reduce((a, q) => a + num(q[f]), 0);
  setTotal("total-operations", num(status.total_operations));
  for (const f of COUNT_FIELDS) setTotal(`total-${f}`, sum(f));
  setTotal("total-succeeded", sum("finished") - sum("failed") - sum("cancelled"));
  setTotal("total-workers", workers.length);
  const sec = str(status.security) || str((summary.workers || {}).security);
  const badge = $("security");
  badge.dataset.security = sec;
  badge.className = `badge sec-${sec || "unknown"}`;
  badge.textContent = sec === "curve" ? `keys (CURVE), ${fmtCount(status.auth_failures)} refused`
    : sec === "insecure" ? "INSECURE: no keys off loopback" : sec ? sec : "security: ?";
  renderRole(status);
  const stats = $("coordinator-stats");
  stats.textContent = coordinatorStatsText(status);
  stats.title = num(status.fenced) ? LATE_REPORTS_HINT : "";
}

/** The coordinator's place in an --ha group (its epoch while it leads) and the hot standbys that
 *  follow its journal, with their lag (issue 29); hidden for a coordinator with neither. A standby's
 *  own page shows its NOT_LEADER refusal instead. */
function renderRole(status) {
  const e = $("role");
  const epoch = num(status.epoch);
  const parts = epoch ? [`leader, epoch ${epoch}`] : [];
  for (const s of status.standbys || []) {
    const ms = (num(s.lag_us) / 1000).toFixed(1);
    parts.push(`standby ${str(s.name)}: ${str(s.state) || "?"} (${str(status.replication) || "?"}), lag ${fmtCount(s.lag_records)} records, ${ms} ms`);
  }
  e.hidden = parts.length === 0;
  e.textContent = parts.join(" · ");
  e.dataset.epoch = String(epoch);
}

const LATE_REPORTS_HINT = "Reports from workers about attempts the coordinator no longer waits for " +
  "(an earlier attempt, a session lost or from before a restart) are ignored. Usually harmless.";

/** The muted line in the header: the coordinator's memory and CPU, and in plain words (not as an
 *  alarm: they are usually harmless, e.g. after a restart) the stale worker reports it ignored. */
function coordinatorStatsText(status) {
  const rss = num(status.coordinator_rss_bytes);
  const late = num(status.fenced);
  return `coordinator RSS ${rss ? fmtBytes(rss) : "?"}, CPU ${(num(status.coordinator_cpu_us) / 1e6).toFixed(1)} s` +
    (late ? `, ${fmtCount(late)} late worker report${late === 1 ? "" : "s"} ignored` : "");
}

/** A horizontal bar of segments [{cls, n}], widths proportional to n out of `total`. */
function progressBar(segments, total) {
  const bar = el("div", { class: "bar", role: "img" });
  for (const seg of segments) {
    if (!seg.n || !total) continue;
    bar.append(el("span", { class: `seg ${seg.cls}`, style: `width:${(100 * seg.n) / total}%`, title: `${seg.cls}: ${seg.n}` }));
  }
  return bar;
}

function renderRuns(runsReply) {
  const runs = list(runsReply.runs);
  const now = num(runsReply.now_us);
  $("runs-meta").textContent = `${fmtCount(runsReply.retained)} retained, ${fmtCount(runsReply.evicted)} evicted`;
  const rows = runs.map((r) => {
    const total = num(r.total);
    const c = {
      succeeded: num(r.succeeded), failed: num(r.failed), cancelled: num(r.cancelled),
      running: num(r.executing) + num(r.dispatched), waiting: num(r.pending) + num(r.ready),
    };
    const done = c.succeeded + c.failed + c.cancelled;
    const finished = num(r.finished_us) > 0;
    const age = now && num(r.submitted_us) ? fmtDuration(now - num(r.submitted_us)) : "";
    const took = finished ? ` (took ${fmtDuration(num(r.finished_us) - num(r.submitted_us))})` : "";
    return el("tr", {
      "data-run": r.id, "data-total": total, "data-finished": finished ? "1" : "0",
      "data-count-succeeded": c.succeeded, "data-count-failed": c.failed, "data-count-cancelled": c.cancelled,
      "data-count-running": c.running, "data-count-waiting": c.waiting,
    },
      el("td", {}, el("a", { href: `#/run/${encodeURIComponent(str(r.id))}/dag`, class: "run-link", "data-run-link": r.id }, str(r.id))),
      el("td", { class: "bar-cell" }, progressBar([
        { cls: "succeeded", n: c.succeeded }, { cls: "failed", n: c.failed },
        { cls: "cancelled", n: c.cancelled }, { cls: "executing", n: c.running },
      ], total)),
      el("td", { class: "num" }, `${fmtCount(done)} / ${fmtCount(total)}`, c.failed ? el("span", { class: "bad" }, ` ${c.failed} failed`) : null),
      el("td", {}, str(r.submitter)),
      el("td", {}, age + took));
  });
  $("runs-body").replaceChildren(...rows);
}

/** Each queue's share keys' `dispatched_total` at the previous refresh: a share's recent share of slots is
 * its part of the dispatches made since then. */
const lastShareDispatches = new Map();

/** A row under a queue that shares (A11): each share key's running / ready ops and its part of the
 * dispatches since the last refresh; concurrency keys with their holders and waiters. */
function shareRow(q) {
  const shares = list(q.shares);
  const keys = list(q.keys);
  if (shares.length < 2 && keys.length === 0) return null;
  let recent = 0;
  const deltas = shares.map((s) => {
    const k = `${str(q.name)}\u0000${str(s.name)}`;
    const total = num(s.dispatched_total);
    const d = lastShareDispatches.has(k) ? Math.max(0, total - lastShareDispatches.get(k)) : 0;
    lastShareDispatches.set(k, total);
    recent += d;
    return d;
  });
  const parts = shares.map((s, i) => el("span", {
    class: "tag", "data-share": s.name, "data-share-running": num(s.running), "data-share-ready": num(s.ready),
    title: `weight ${num(s.weight) || 1}; ${fmtCount(s.dispatched_total)} dispatched while the queue shared`,
  }, `${str(s.name)}: ${fmtCount(s.running)} running, ${fmtCount(s.ready)} ready` +
     (recent > 0 ? `, ${Math.round((100 * deltas[i]) / recent)}% of recent slots` : "")));
  const keyParts = keys.map((k) => el("span", {
    class: "tag", "data-key": k.name, "data-key-holding": num(k.holding), "data-key-waiting": num(k.waiting),
  }, `key ${str(k.name)}: ${fmtCount(k.holding)} holding, ${fmtCount(k.waiting)} waiting`));
  const more = num(q.shares_omitted) ? el("span", { class: "muted" }, ` +${fmtCount(q.shares_omitted)} more shares`) : null;
  return el("tr", { class: "share-row", "data-shares-of": q.name },
    el("td", { colspan: 11 }, el("span", { class: "muted" }, "shares "), ...parts, more, ...keyParts));
}

function renderQueues(queues) {
  const rows = queues.flatMap((q) => {
    const succeeded = num(q.finished) - num(q.failed) - num(q.cancelled);
    const limit = q.max_concurrent === undefined ? 0 : num(q.max_concurrent);
    const attrs = { "data-queue": q.name, "data-suspended": q.suspended ? "1" : "0", "data-max-concurrent": limit, "data-qos": qosName(q.qos) };
    for (const f of COUNT_FIELDS) attrs[`data-count-${f}`] = num(q[f]);
    attrs["data-count-succeeded"] = succeeded;
    const row = el("tr", attrs,
      el("td", {}, str(q.name)),
      el("td", { class: "num" }, limit < 0 ? "∞" : String(limit)),
      el("td", {}, qosName(q.qos) || "default"),
      el("td", {}, q.suspended ? el("span", { class: "badge suspended" }, "suspended") : "active"),
      ...["pending", "ready", "dispatched", "executing"].map((f) => el("td", { class: "num" }, fmtCount(q[f]))),
      el("td", { class: "num" }, fmtCount(succeeded)),
      el("td", { class: `num${num(q.failed) ? " bad" : ""}` }, fmtCount(q.failed)),
      el("td", { class: "num" }, fmtCount(q.cancelled)));
    const shares = shareRow(q);
    return shares ? [row, shares] : [row];
  });
  $("queues-body").replaceChildren(...rows);
}

function renderWorkers(workersReply, nowUs) {
  const rows = list(workersReply.workers).map((w) => {
    const slots = num(w.slots);
    const running = num(w.running);
    const ageUs = nowUs && num(w.last_seen_us) ? Math.max(0, nowUs - num(w.last_seen_us)) : 0;
    return el("tr", { "data-worker": w.worker_id, "data-running": running, "data-slots": slots },
      el("td", { title: list(w.kinds).join(", ") }, `${str(w.worker_id)} `, el("span", { class: "muted" }, str(w.name))),
      el("td", { class: "bar-cell" }, progressBar([{ cls: "executing", n: running }], slots), ` ${running}/${slots}`),
      el("td", { class: "num" }, String(num(w.in_flight))),
      el("td", {}, ...list(w.tags).map((t) => el("span", { class: "tag" }, t))),
      el("td", { class: ageUs > 5e6 ? "bad" : "", "data-heartbeat-age-us": ageUs }, `${fmtDuration(ageUs)} ago`),
      el("td", { class: "num" }, `#${num(w.session) || 1}`));
  });
  $("workers-body").replaceChildren(...rows);
}

/** Keeps a <select>'s options equal to `values` (plus its first, "all" option) without losing the choice. */
function syncOptions(select, values, keepFirst) {
  const chosen = select.value;
  const first = keepFirst ? [select.options[0]] : [];
  const same = select.options.length === first.length + values.length &&
    values.every((v, i) => select.options[first.length + i].value === v);
  if (same) return;
  select.replaceChildren(...first, ...values.map((v) => el("option", { value: v }, v)));
  if ([...select.options].some((o) => o.value === chosen)) select.value = chosen;
}

function updateFilterOptions(s) {
  const runIds = list((s.runs || {}).runs).map((r) => str(r.id));
  syncOptions($("filter-run"), runIds, true);
  syncOptions($("timeline-run"), runIds, true);
  syncOptions($("dag-run"), runIds, false);
  syncOptions($("filter-queue"), list((s.status || {}).queues).map((q) => str(q.name)), true);
  syncOptions($("filter-worker"), list((s.workers || {}).workers).map((w) => str(w.worker_id)), true);
  applyWantedRun();
}

// ---------------------------------------------------------------------------
// Addresses of their own: #/run/NAME (its operations), #/run/NAME/dag, #/run/NAME/timeline, #/dag,
// #/timeline, #/ops. The address follows the tab and run chosen on the page (replaceState: no
// history entry per click), and opening one shows that view.

const TAB_RUN_SELECT = { ops: "filter-run", dag: "dag-run", timeline: "timeline-run" };
const wanted = { select: "", run: "" };   // a run from the address whose option may come with the next summary

function parseRoute(hash) {
  const m = /^#\/(?:run\/([^/]+)(?:\/(dag|timeline))?|(ops|dag|timeline))$/.exec(hash);
  if (!m) return null;
  if (m[1] === undefined) return { run: "", tab: m[3] };
  try { return { run: decodeURIComponent(m[1]), tab: m[2] || "ops" }; } catch { return null; }   // a malformed %-escape
}

function routeFor(tab) {
  const run = $(TAB_RUN_SELECT[tab]).value;
  if (!run) return `#/${tab}`;
  return `#/run/${encodeURIComponent(run)}` + (tab === "ops" ? "" : `/${tab}`);
}

/** Puts the current view in the address bar, unless an op page is open (its #op= address wins). */
function syncAddress() {
  if (opView.key) return;
  const hash = routeFor(panels.current);
  if (location.hash !== hash) history.replaceState(null, "", location.pathname + location.search + hash);
}

function applyRoute(route) {
  if (route.run) { wanted.select = TAB_RUN_SELECT[route.tab]; wanted.run = route.run; applyWantedRun(); }
  selectTab(route.tab, { fromAddress: true });
}

function applyWantedRun() {
  if (!wanted.run) return;
  const select = $(wanted.select);
  if (![...select.options].some((o) => o.value === wanted.run)) return;
  select.value = wanted.run;
  wanted.run = "";
  panels.lastRun = 0;
  requestPanelRefresh();
}

// ---------------------------------------------------------------------------
// The tabbed panel (operations, DAG, timeline): refreshed on live messages, at most once a second

const panels = { current: "ops", inFlight: false, lastRun: 0, pending: false, timer: null };
const REFRESH_MS = 1000;

function requestPanelRefresh() {
  panels.pending = true;
  if (panels.inFlight || panels.timer) return;
  const wait = Math.max(0, panels.lastRun + REFRESH_MS - Date.now());
  panels.timer = setTimeout(runPanelRefresh, wait);
}

/** One refresh at a time; a message that came in meanwhile schedules the next one. */
async function runPanelRefresh() {
  panels.timer = null;
  if (!panels.pending) return;
  panels.pending = false;
  panels.inFlight = true;
  panels.lastRun = Date.now();
  try {
    if (panels.current === "ops") await refreshOps();
    else if (panels.current === "dag") await refreshDag();
    else if (panels.current === "timeline") await refreshTimeline();
    if (opView.key) await refreshOpPanel();
    showError("");
  } catch (e) {
    showError(`${panels.current}: ${e.message}`);
  } finally {
    panels.inFlight = false;
    if (panels.pending) requestPanelRefresh();
  }
}

function selectTab(name, { fromAddress = false } = {}) {
  panels.current = name;
  for (const b of document.querySelectorAll("#tabs button")) b.setAttribute("aria-selected", String(b.dataset.tab === name));
  for (const p of document.querySelectorAll(".tab-panel")) p.hidden = p.dataset.tabPanel !== name;
  document.body.dataset.tab = name;
  panels.lastRun = 0;   // the user asked for it: draw it now
  requestPanelRefresh();
  if (!fromAddress) syncAddress();
}

// ---------------------------------------------------------------------------
// Operations table

async function refreshOps() {
  const q = new URLSearchParams();
  for (const [param, id] of [["run", "filter-run"], ["queue", "filter-queue"], ["worker", "filter-worker"]]) {
    if ($(id).value) q.set(param, $(id).value);
  }
  const states = [...document.querySelectorAll("#filter-states input:checked")].map((i) => i.value);
  if (states.length) q.set("state", states.join(","));
  q.set("limit", $("filter-limit").value);
  const reply = await api(`/api/ops?${q}`);
  const ops = list(reply.ops);
  const now = num(reply.now_us);
  $("ops-body").replaceChildren(...ops.map((op) => opRow(op, now)));
  const matched = num(reply.matched) || ops.length;
  const m = $("ops-matched");
  m.dataset.matched = String(matched);
  m.dataset.shown = String(ops.length);
  m.textContent = `${fmtCount(ops.length)} shown of ${fmtCount(matched)} matching`;
}

function opRow(op, now) {
  const st = displayState(op);
  const started = num(op.started_us);
  const end = num(op.finished_us) || (stateName(op.state) === "executing" ? now : 0);
  return el("tr", { "data-op": opKey(op), "data-state": st, class: "op-row" },
    el("td", {}, el("a", { href: `#op=${encodeURIComponent(opKey(op))}`, class: "op-link" }, opKey(op))),
    el("td", {}, str(op.queue)),
    el("td", {}, el("span", { class: `pill st-${st}` }, st)),
    el("td", {}, str(op.worker_id)),
    el("td", { class: "num" }, String(num(op.attempts))),
    el("td", {}, fmtTime(op.submitted_us)),
    el("td", { class: "num" }, started && end ? fmtDuration(end - started) : ""),
    el("td", { class: "err", title: str(op.error) }, str(op.error).slice(0, 120)));
}

// ---------------------------------------------------------------------------
// DAG of one run: layers by longest path, the critical path highlighted, large runs collapsed

const DAG_CAP = 20000;         // ops fetched for one run's DAG at most
const DAG_COLLAPSE_OVER = 300; // above this many ops, one box per layer
const DAG_MAX_BOXES = 40;      // collapsed: more layers than this share boxes (a long chain is a few bands)

const dagDrawn = { key: "" };   // what the DAG shows now, when it can no longer change

async function refreshDag() {
  const run = $("dag-run").value;
  if (!run) { drawDagMessage("no runs yet"); return; }
  // A finished run's graph and states are final: draw it once, not on every live message.
  const info = list((summary && summary.runs || {}).runs).find((r) => r.id === run);
  const finalKey = info && num(info.finished_us) ? `${run}|${$("dag-collapse").value}` : "";
  if (finalKey && dagDrawn.key === finalKey) return;
  const { ops, truncated } = await fetchOps(new URLSearchParams({ run, spec: "1" }), DAG_CAP);
  dagDrawn.key = finalKey;
  const graph = buildGraph(ops, run);
  const mode = $("dag-collapse").value;
  const collapse = mode === "always" || (mode === "auto" && ops.length > DAG_COLLAPSE_OVER);
  if (collapse) drawCollapsedDag(graph); else drawDag(graph);
  $("dag-info").textContent = `${fmtCount(ops.length)} ops${truncated ? " (first ones only)" : ""}, ` +
    `${graph.layers.length} layers, critical path ${graph.critical.length} ops (${graph.criticalBy})`;
}

/**
 * Nodes, edges, layer of every node (longest path from a source) and the critical path.
 * `after` entries name ops of the same run as "OP" or "RUN/OP"; ones of other runs are left out.
 */
function buildGraph(ops, run) {
  const index = new Map(ops.map((op, i) => [str(op.id), i]));
  const preds = ops.map(() => []);
  const succs = ops.map(() => []);
  ops.forEach((op, i) => {
    for (const dep of list(op.after)) {
      const local = dep.startsWith(`${run}/`) ? dep.slice(run.length + 1) : dep;
      const j = index.get(local);
      if (j === undefined || j === i) continue;
      preds[i].push(j);
      succs[j].push(i);
    }
  });
  const order = topoOrder(ops.length, preds, succs);
  const layer = new Array(ops.length).fill(0);
  for (const v of order) for (const u of preds[v]) layer[v] = Math.max(layer[v], layer[u] + 1);
  const layers = [];
  for (const v of order) (layers[layer[v]] ||= []).push(v);
  const { path, by } = criticalPath(ops, order, preds);
  return { ops, preds, succs, layer, layers, critical: path, criticalBy: by };
}

/** Kahn's algorithm; nodes on a cycle (impossible for an accepted run) go last, in input order. */
function topoOrder(n, preds, succs) {
  const indeg = preds.map((p) => p.length);
  const queue = [];
  for (let v = 0; v < n; v++) if (indeg[v] === 0) queue.push(v);
  const order = [];
  for (let h = 0; h < queue.length; h++) {
    const v = queue[h];
    order.push(v);
    for (const w of succs[v]) if (--indeg[w] === 0) queue.push(w);
  }
  if (order.length < n) {
    const seen = new Set(order);
    for (let v = 0; v < n; v++) if (!seen.has(v)) order.push(v);
  }
  return order;
}

/**
 * The longest chain: weighted by each op's run time (started → finished) when every op has
 * finished with both times known, else by op count (an unfinished run's durations are partial).
 */
function criticalPath(ops, order, preds) {
  const timed = ops.length > 0 && ops.every((op) => num(op.finished_us) && num(op.started_us));
  const weight = (v) => (timed ? Math.max(1, num(ops[v].finished_us) - num(ops[v].started_us)) : 1);
  const dist = new Array(ops.length).fill(0);
  const via = new Array(ops.length).fill(-1);
  let end = -1;
  for (const v of order) {
    let best = 0;
    for (const u of preds[v]) if (dist[u] > best) { best = dist[u]; via[v] = u; }
    dist[v] = best + weight(v);
    if (end < 0 || dist[v] > dist[end]) end = v;
  }
  const path = [];
  for (let v = end; v >= 0; v = via[v]) path.unshift(v);
  return { path, by: timed ? `by duration, ${fmtDuration(end >= 0 ? dist[end] : 0)}` : "by count" };
}

/** Orders each layer by the mean position of its predecessors (one barycentre pass: fewer crossings). */
function orderLayers(graph) {
  const pos = new Array(graph.ops.length).fill(0);
  return graph.layers.map((nodes) => {
    const key = (v) => (graph.preds[v].length ? graph.preds[v].reduce((a, u) => a + pos[u], 0) / graph.preds[v].length : 0);
    const sorted = [...nodes].sort((a, b) => key(a) - key(b) || a - b);
    sorted.forEach((v, i) => { pos[v] = i; });
    return sorted;
  });
}

function drawDagMessage(text) {
  const s = $("dag-svg");
  s.setAttribute("width", "400"); s.setAttribute("height", "40");
  s.dataset.nodes = "0";
  s.replaceChildren(svg("text", { x: 10, y: 24, class: "muted-text" }, text));
}

const NODE_W = 150, NODE_H = 24, COL_GAP = 60, ROW_GAP = 10, PAD = 12;

function drawDag(graph) {
  const ordered = orderLayers(graph);
  const xy = [];
  ordered.forEach((nodes, L) => nodes.forEach((v, i) => {
    xy[v] = { x: PAD + L * (NODE_W + COL_GAP), y: PAD + i * (NODE_H + ROW_GAP) };
  }));
  const onPath = new Set(graph.critical);
  const pathEdge = new Set(graph.critical.slice(1).map((v, i) => `${graph.critical[i]}>${v}`));
  const edges = svg("g", { class: "edges" });
  graph.preds.forEach((ps, v) => ps.forEach((u) => {
    const a = xy[u], b = xy[v];
    const x1 = a.x + NODE_W, y1 = a.y + NODE_H / 2, x2 = b.x, y2 = b.y + NODE_H / 2, mx = (x1 + x2) / 2;
    edges.append(svg("path", {
      d: `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}`,
      class: pathEdge.has(`${u}>${v}`) ? "edge critical" : "edge",
    }));
  }));
  const nodes = svg("g", { class: "nodes" });
  graph.ops.forEach((op, v) => {
    const st = displayState(op);
    const label = str(op.name || op.id);
    const g = svg("g", {
      class: `dag-node st-${st}${onPath.has(v) ? " critical" : ""}`, "data-op": opKey(op), "data-dag-item": "node",
      "data-state": st, "data-layer": graph.layer[v], "data-critical": onPath.has(v) ? "1" : null,
      transform: `translate(${xy[v].x},${xy[v].y})`, onclick: () => openOp(opKey(op)),
    },
      svg("title", {}, `${opKey(op)} — ${st}${op.worker_id ? ` on ${op.worker_id}` : ""}`),
      svg("rect", { width: NODE_W, height: NODE_H, rx: 4 }),
      svg("text", { x: 8, y: 16 }, label.length > 20 ? `${label.slice(0, 19)}…` : label));
    nodes.append(g);
  });
  const width = PAD * 2 + ordered.length * (NODE_W + COL_GAP) - COL_GAP;
  const height = PAD * 2 + Math.max(1, ...ordered.map((l) => l.length)) * (NODE_H + ROW_GAP);
  finishDag(width, height, [edges, nodes], graph.ops.length, false);
}

/**
 * One box per layer with its ops' counts by state (a stacked bar); edges join layers that depend. With
 * more than DAG_MAX_BOXES layers (a long chain), consecutive layers share a box ("layers 0–49").
 */
function drawCollapsedDag(graph) {
  const BOX_W = 170, BOX_H = 74;
  const per = Math.max(1, Math.ceil(graph.layers.length / DAG_MAX_BOXES));
  const band = (L) => Math.floor(L / per);
  const groups = [];
  graph.layers.forEach((nodes, L) => {
    const g = groups[band(L)] ||= { B: band(L), first: L, last: L, n: 0, counts: {}, queues: new Set() };
    g.last = L;
    for (const v of nodes) {
      const st = displayState(graph.ops[v]);
      g.counts[st] = (g.counts[st] || 0) + 1;
      g.queues.add(str(graph.ops[v].queue) || "default");
      g.n += 1;
    }
  });
  for (const g of groups) g.queues = [...g.queues];
  const links = new Set();
  graph.preds.forEach((ps, v) => ps.forEach((u) => {
    if (band(graph.layer[u]) !== band(graph.layer[v])) links.add(`${band(graph.layer[u])}>${band(graph.layer[v])}`);
  }));
  const x = (B) => PAD + B * (BOX_W + COL_GAP);
  const edges = svg("g", { class: "edges" });
  for (const link of links) {
    const [a, b] = link.split(">").map(Number);
    const y1 = PAD + BOX_H / 2;
    // Every layer holds one op of the critical path (layers are longest-path depths), so boxes are
    // not marked; the edges between consecutive boxes are.
    const crit = b === a + 1;
    // Links skipping boxes arc below them so they stay visible.
    const d = b === a + 1 ? `M${x(a) + BOX_W},${y1} L${x(b)},${y1}`
      : `M${x(a) + BOX_W / 2},${PAD + BOX_H} C${x(a) + BOX_W / 2},${PAD + BOX_H + 30 + 6 * (b - a)} ${x(b) + BOX_W / 2},${PAD + BOX_H + 30 + 6 * (b - a)} ${x(b) + BOX_W / 2},${PAD + BOX_H}`;
    edges.append(svg("path", { d, class: crit ? "edge critical" : "edge" }));
  }
  const order = ["succeeded", "failed", "cancelled", "executing", "dispatched", "ready", "pending"];
  const boxes = svg("g", { class: "nodes" });
  for (const g of groups) {
    const name = g.first === g.last ? `layer ${g.first}` : `layers ${g.first}–${g.last}`;
    const box = svg("g", {
      class: "dag-group", "data-dag-item": "group", "data-layer": g.first, "data-last-layer": g.last,
      "data-count": g.n, transform: `translate(${x(g.B)},${PAD})`,
    },
      svg("title", {}, `${name}: ${g.n} ops in ${g.queues.join(", ")}\n` + order.filter((s) => g.counts[s]).map((s) => `${s}: ${g.counts[s]}`).join("\n")),
      svg("rect", { width: BOX_W, height: BOX_H, rx: 6, class: "group-box" }),
      svg("text", { x: 8, y: 18 }, `${name}: ${fmtCount(g.n)} ops`),
      svg("text", { x: 8, y: 34, class: "small" }, g.queues.slice(0, 3).join(", ") + (g.queues.length > 3 ? ", …" : "")));
    let off = 0;
    for (const s of order) {
      const c = g.counts[s] || 0;
      if (!c) continue;
      const w = ((BOX_W - 16) * c) / g.n;
      box.append(svg("rect", { x: 8 + off, y: 44, width: Math.max(w, 1), height: 12, class: `seg-svg st-${s}`, "data-state": s, "data-count": c }));
      off += w;
    }
    box.append(svg("text", { x: 8, y: 70, class: "small" }, order.filter((s) => g.counts[s]).map((s) => `${g.counts[s]} ${s}`).join(" · ").slice(0, 34)));
    boxes.append(box);
  }
  const maxSkip = Math.max(1, ...[...links].map((l) => { const [a, b] = l.split(">").map(Number); return b - a; }));
  finishDag(PAD * 2 + groups.length * (BOX_W + COL_GAP), PAD * 2 + BOX_H + 40 + 6 * maxSkip, [edges, boxes], graph.ops.length, true);
}

function finishDag(width, height, children, opCount, collapsed) {
  const s = $("dag-svg");
  s.setAttribute("width", String(Math.max(width, 200)));
  s.setAttribute("height", String(Math.max(height, 40)));
  s.dataset.nodes = String(children[1].childNodes.length);
  s.dataset.ops = String(opCount);
  s.dataset.collapsed = collapsed ? "1" : "0";
  s.replaceChildren(...children);
  $("dag-legend").replaceChildren(...["pending", "ready", "dispatched", "executing", "succeeded", "failed", "cancelled"]
    .map((st) => el("span", { class: `pill st-${st}` }, st)), el("span", { class: "pill critical-pill" }, "critical path"));
}

// ---------------------------------------------------------------------------
// Timeline: one lane per worker slot (like Dask's task stream), the last N minutes

const TIMELINE_CAP = 20000;
const LANE_H = 14, LABEL_W = 130, AXIS_H = 22;

async function refreshTimeline() {
  const q = new URLSearchParams({ state: "executing,finished" });
  if ($("timeline-run").value) q.set("run", $("timeline-run").value);
  const { ops, reply, truncated } = await fetchOps(q, TIMELINE_CAP);
  const now = num(reply.now_us) || Date.now() * 1000;
  const windowUs = Number($("timeline-minutes").value) * 60e6;
  // The window is the last N minutes, narrowed to where something ran: a 20-second run in a
  // 5-minute window would otherwise be a sliver at the right edge.
  const starts = ops.map((op) => num(op.started_us)).filter((t) => t > now - windowUs);
  const first = starts.length ? starts.reduce((a, b) => Math.min(a, b)) : now - windowUs;
  const t0 = Math.max(now - windowUs, first - Math.max(1e6, (now - first) * 0.03));
  drawTimeline(ops, t0, now, truncated);
}

/** Spans [start, end) of ops that ran in the window, grouped by worker, packed into lanes. */
function timelineLanes(ops, t0, t1) {
  const byWorker = new Map();
  for (const op of ops) {
    const start = num(op.started_us);
    if (!start || !op.worker_id) continue;
    const end = num(op.finished_us) || t1;   // still executing: up to now
    if (end < t0 || start > t1) continue;
    if (!byWorker.has(op.worker_id)) byWorker.set(op.worker_id, []);
    byWorker.get(op.worker_id).push({ op, start, end });
  }
  const workers = [...byWorker.keys()].sort((a, b) => a.localeCompare(b, "en", { numeric: true }));
  return workers.map((w) => {
    const spans = byWorker.get(w).sort((a, b) => a.start - b.start || a.end - b.end);
    const laneEnds = [];   // greedy interval packing: first lane free at the span's start
    for (const s of spans) {
      let lane = laneEnds.findIndex((e) => e <= s.start);
      if (lane < 0) { lane = laneEnds.length; laneEnds.push(0); }
      laneEnds[lane] = s.end;
      s.lane = lane;
    }
    return { worker: w, lanes: Math.max(1, laneEnds.length), spans };
  });
}

function drawTimeline(ops, t0, t1, truncated) {
  const groups = timelineLanes(ops, t0, t1);
  const svgEl = $("timeline-svg");
  const width = Math.max(600, svgEl.parentElement.clientWidth - 4);
  const plotW = width - LABEL_W - 10;
  const x = (t) => LABEL_W + ((Math.max(t, t0) - t0) / (t1 - t0)) * plotW;
  const slotsOf = new Map(list((summary && summary.workers || {}).workers).map((w) => [str(w.worker_id), num(w.slots)]));
  const parts = [timeAxis(t0, t1, x)];
  let y = AXIS_H;
  let spanCount = 0;
  for (const g of groups) {
    const lanes = Math.max(g.lanes, slotsOf.get(g.worker) || 0);
    const h = lanes * LANE_H;
    const row = svg("g", { class: "tl-worker", "data-worker": g.worker, "data-lanes": g.lanes });
    row.append(svg("rect", { x: 0, y, width, height: h, class: "tl-band" }),
      svg("text", { x: 4, y: y + 12, class: "tl-label" }, `${g.worker} (${g.spans.length})`));
    for (const s of g.spans) {
      const out = outcomeOf(s.op) || "executing";
      row.append(svg("rect", {
        x: x(s.start), y: y + s.lane * LANE_H + 1, width: Math.max(1, x(s.end) - x(s.start)), height: LANE_H - 2,
        class: `span st-${out}`, "data-op": opKey(s.op), "data-lane": s.lane, onclick: () => openOp(opKey(s.op)),
      }, svg("title", {}, `${opKey(s.op)} ${out} ${fmtDuration(s.end - s.start)} (slot lane ${s.lane + 1})`)));
      spanCount++;
    }
    parts.push(row);
    y += h + 4;
  }
  if (!groups.length) parts.push(svg("text", { x: LABEL_W, y: AXIS_H + 16, class: "muted-text" }, "nothing ran in this window"));
  svgEl.setAttribute("width", String(width));
  svgEl.setAttribute("height", String(Math.max(y, AXIS_H + 24) + 4));
  svgEl.dataset.spans = String(spanCount);
  svgEl.dataset.workers = String(groups.length);
  svgEl.replaceChildren(...parts);
  $("timeline-info").textContent = `${fmtCount(spanCount)} spans on ${groups.length} workers${truncated ? " (newest ops only)" : ""}`;
}

/** Ticks at a round step (10 s, 30 s, 1 min, …) labelled with wall-clock time. */
function timeAxis(t0, t1, x) {
  const g = svg("g", { class: "tl-axis" });
  const steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800].map((s) => s * 1e6);
  const step = steps.find((s) => (t1 - t0) / s <= 10) || 3600e6;
  for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
    g.append(svg("line", { x1: x(t), x2: x(t), y1: AXIS_H - 6, y2: 10000, class: "tick" }),
      svg("text", { x: x(t) + 2, y: 12, class: "small" }, fmtTime(t)));
  }
  return g;
}

// ---------------------------------------------------------------------------
// Op page: #op=RUN/OP opens a side panel with everything /api/op says about one operation

const opView = { key: "", finished: false };

function openOp(key) {
  if (location.hash !== `#op=${encodeURIComponent(key)}`) location.hash = `op=${encodeURIComponent(key)}`;
  else routeFromHash();
}

function routeFromHash() {
  const route = parseRoute(location.hash);
  if (route) applyRoute(route);
  const m = /^#op=(.+)$/.exec(location.hash);
  const key = m ? decodeURIComponent(m[1]) : "";
  if (!key) { opView.key = ""; $("op-panel").hidden = true; return; }
  opView.key = key;
  opView.finished = false;
  $("op-panel").hidden = false;
  $("op-panel").dataset.op = key;
  $("op-title").textContent = key;
  $("op-body").replaceChildren(el("p", { class: "muted" }, "loading…"));
  refreshOpPanel().catch((e) => $("op-body").replaceChildren(el("p", { class: "bad" }, e.message)));
}

function closeOp() {
  history.replaceState(null, "", location.pathname + location.search);
  routeFromHash();
  syncAddress();   // back to the address of the view under the panel
}

async function refreshOpPanel() {
  const key = opView.key;
  if (!key || opView.finished && $("op-body").dataset.loaded === key) return;   // a finished op no longer changes
  const d = await api(`/api/op?id=${encodeURIComponent(key)}`);
  if (opView.key !== key) return;   // another op was opened meanwhile
  const op = list((d.status || {}).ops)[0];
  if (!op) { $("op-body").replaceChildren(el("p", { class: "bad" }, "not found")); return; }
  opView.finished = stateName(op.state) === "finished";
  const body = $("op-body");
  body.dataset.loaded = key;
  body.dataset.state = displayState(op);
  body.replaceChildren(
    opSpecSection(op),
    opOutcomeSection(op),
    whySection(d.why, opView.finished),
    logsSection(d.logs),
    storySection(d.story));
}

function section(id, title, ...content) {
  return el("section", { id, class: "op-section" }, el("h3", {}, title), ...content);
}

function keyValues(pairs) {
  const dl = el("dl", { class: "kv" });
  for (const [k, v] of pairs) {
    if (v === "" || v === undefined || v === null) continue;
    dl.append(el("dt", {}, k), el("dd", { "data-field": k }, v));
  }
  return dl;
}

function opLink(key) {
  return el("a", { href: `#op=${encodeURIComponent(key)}`, class: "op-link" }, key);
}

function opSpecSection(op) {
  const st = displayState(op);
  const rel = (us) => (num(us) ? `${fmtTime(us)}${num(op.submitted_us) && us !== op.submitted_us ? ` (+${fmtDuration(num(us) - num(op.submitted_us))})` : ""}` : "");
  const deps = list(op.after).map((a) => opLink(a.includes("/") ? a : `${op.run}/${a}`));
  return section("op-spec", "Operation", keyValues([
    ["state", el("span", { class: `pill st-${st}`, id: "op-state" }, st)],
    ["name", op.name && op.name !== op.id ? str(op.name) : ""],
    ["run", str(op.run)], ["queue", str(op.queue)], ["kind", str(op.kind)],
    ["after", deps.length ? el("span", {}, ...deps.flatMap((d, i) => (i ? [", ", d] : [d]))) : ""],
    ["requires", list(op.requires).join(", ")],
    ["priority", num(op.priority) ? String(num(op.priority)) : "normal"],
    ["parts", num(op.parts) > 1 ? `${num(op.parts_done)} / ${num(op.parts)} done` : ""],
    ["attempts", String(num(op.attempts))],
    ["worker", op.worker_id ? `${op.worker_id}${num(op.worker_session) > 1 ? `#${num(op.worker_session)}` : ""}${op.worker_key ? ` (key ${op.worker_key})` : ""}` : ""],
    ["submitted", rel(op.submitted_us)], ["ready", rel(op.ready_us)], ["dispatched", rel(op.dispatched_us)],
    ["started", rel(op.started_us)], ["finished", rel(op.finished_us)],
    ["ran for", num(op.started_us) && num(op.finished_us) ? fmtDuration(num(op.finished_us) - num(op.started_us)) : ""],
  ]));
}

function opOutcomeSection(op) {
  const out = outcomeOf(op);
  const items = [];
  if (out === "succeeded") {
    const result = op.outcome && op.outcome.succeeded ? b64text(op.outcome.succeeded) : "";
    items.push(el("p", {}, op.result_evicted ? "result: evicted (opcoord --retain-bytes)" : `result: ${fmtBytes(op.result_size)}`));
    if (result) items.push(el("pre", { id: "op-result", class: "log" }, result.slice(0, 4096) + (result.length > 4096 ? "\n…" : "")));
  } else if (out) {
    items.push(el("pre", { id: "op-error", class: "log bad" }, str(op.error) || str((op.outcome || {})[out])));
  } else {
    items.push(el("p", { class: "muted" }, "not finished"));
  }
  const errs = list(op.attempt_errors);
  if (errs.length) items.push(el("h4", {}, "attempt errors"), el("ol", { id: "op-attempt-errors" }, ...errs.map((e) => el("li", {}, e))));
  return section("op-outcome", "Outcome", ...items);
}

function whySection(why, finished) {
  const title = finished ? "Why (finished)" : "Why not running";
  if (!why) return section("op-why", title, el("p", { class: "muted" }, "(no answer)"));
  const reasons = list(why.reasons);
  const waiting = list(why.waiting_on);
  return section("op-why", title,
    reasons.length ? el("ul", { id: "op-why-reasons" }, ...reasons.map((r) => el("li", {}, r))) : el("p", { class: "muted" }, "no reasons given"),
    waiting.length ? el("p", {}, "waiting on: ", ...waiting.flatMap((w, i) => [i ? ", " : "", opLink(w.includes("/") ? w : `${why.run}/${w}`)])) : null);
}

/** Per-attempt stdout/stderr (LogsReply); absent on coordinators without LOGS. */
function logsSection(logs) {
  const none = "no output kept (output is held in the coordinator's memory only: not across its restarts)";
  if (!logs) return section("op-logs", "Output", el("p", { class: "muted" }, none));
  const attempts = list(logs.attempts);
  const items = attempts.map((a) => {
    const head = `attempt ${num(a.attempt) || 1}` + (num(a.part) ? `, part ${num(a.part)}` : "") +
      (a.worker_id ? ` on ${a.worker_id}` : "") + (a.outcome ? ` — ${str(a.outcome)}` : "") +
      (num(a.finished_us) ? ` at ${fmtTime(a.finished_us)}` : "");
    const stream = (name, b64, dropped) => {
      const text = b64text(b64);
      if (!text && !num(dropped)) return null;
      return el("div", {}, el("h5", {}, name + (num(dropped) ? ` (${fmtBytes(dropped)} dropped)` : "")),
        el("pre", { class: `log ${name}`, "data-stream": name }, text));
    };
    return el("div", { class: "attempt-log", "data-attempt": num(a.attempt) || 1, "data-part": num(a.part) },
      el("h4", {}, head), stream("stdout", a.stdout, a.stdout_dropped), stream("stderr", a.stderr, a.stderr_dropped));
  });
  if (!items.length) items.push(el("p", { class: "muted" }, num(logs.evicted) ? "output evicted" : none));
  else if (num(logs.evicted)) items.push(el("p", { class: "muted" }, `${num(logs.evicted)} older attempt(s) evicted`));
  return section("op-logs", "Output", ...items);
}

/** The op's story (StoryReply): every event the coordinator recorded about it. */
function storySection(story) {
  const entries = list(story && story.entries);
  if (!entries.length) return section("op-story", "Story", el("p", { class: "muted" }, "no story recorded"));
  const t0 = num(entries[0].at_us);
  const rows = entries.map((e) => el("tr", {},
    el("td", {}, fmtTime(e.at_us)), el("td", { class: "num" }, `+${fmtDuration(num(e.at_us) - t0)}`),
    el("td", {}, str(e.event)), el("td", { class: "num" }, num(e.attempt) ? String(num(e.attempt)) : ""),
    el("td", { class: "num" }, num(e.part) ? String(num(e.part)) : ""), el("td", {}, str(e.worker_id)),
    el("td", {}, str(e.detail)), el("td", { class: "muted" }, str(e.stimulus))));
  return section("op-story", "Story",
    el("table", { class: "grid story", id: "op-story-table" },
      el("thead", {}, el("tr", {}, ...["time", "", "event", "att.", "part", "worker", "detail", "stimulus"].map((h) => el("th", {}, h)))),
      el("tbody", {}, ...rows)),
    story.truncated ? el("p", { class: "muted" }, "(older entries not kept)") : null);
}

// ---------------------------------------------------------------------------
// Wiring

function wire() {
  for (const b of document.querySelectorAll("#tabs button")) b.addEventListener("click", () => selectTab(b.dataset.tab));
  // Filters redraw at once rather than at the next live message.
  for (const id of ["filter-run", "filter-queue", "filter-worker", "filter-limit", "dag-run", "dag-collapse", "timeline-run", "timeline-minutes"]) {
    $(id).addEventListener("change", () => { panels.lastRun = 0; requestPanelRefresh(); });
  }
  for (const id of Object.values(TAB_RUN_SELECT)) $(id).addEventListener("change", () => { wanted.run = ""; syncAddress(); });
  $("filter-states").addEventListener("change", () => { panels.lastRun = 0; requestPanelRefresh(); });
  $("ops-filters").addEventListener("submit", (e) => e.preventDefault());
  $("op-close").addEventListener("click", closeOp);
  document.addEventListener("keydown", (e) => { if (e.key === "Escape" && opView.key) closeOp(); });
  window.addEventListener("hashchange", routeFromHash);
}

wire();
routeFromHash();
api("/api/summary").then(onSummary).catch((e) => showError(`summary: ${e.message}`));
connectLive();
