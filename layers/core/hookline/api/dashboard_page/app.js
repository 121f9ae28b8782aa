// Hookline dashboard: a client of the public API, nothing more. Every number comes from a /v1 route.
// The key lives in this tab's sessionStorage only; every node is built with textContent (no HTML injection).
"use strict";

const KEY_STORAGE = "hookline.apiKey";
// The API is served beside this page: /dashboard -> /, and /<stage>/dashboard -> /<stage> on API Gateway.
const BASE = location.pathname.replace(/\/dashboard\/?$/, "");
const PAGE_SIZE = 25;
const SEARCH_MAX_PAGES = 10; // a URL-prefix search reads at most this many pages of jobs
const REFRESH_MS = 10000;
const state = { jobsCursors: [null], deadCursors: [null], schedulesCursors: [null], refresh: null, schedule: null };

class ApiError extends Error {
  constructor(status, body, requestId) {
    const envelope = body && body.error ? body.error : { code: "http_error", message: (body && body.message) || "" };
    super(`${status} ${envelope.code}: ${envelope.message}`);
    this.status = status;
    this.requestId = requestId;
  }
}

async function api(method, path, body) {
  const headers = { Authorization: `Bearer ${sessionStorage.getItem(KEY_STORAGE) || ""}` };
  const init = { method, headers };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(BASE + path, init);
  const text = await response.text();
  const parsed = text ? JSON.parse(text) : null;
  if (!response.ok) throw new ApiError(response.status, parsed, response.headers.get("X-Request-Id"));
  return parsed;
}

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (name === "onclick") node.addEventListener("click", value);
    else if (value !== undefined && value !== null && value !== false) node.setAttribute(name, value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function svg(tag, attrs, ...children) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
  for (const child of children.flat(Infinity)) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

const $ = (id) => document.getElementById(id);
const badge = (text) => el("span", { class: `badge ${text}` }, text);
const short = (time) => (time ? time.replace("T", " ").replace(/\.\d+Z$/, "Z") : "");

function showError(error) {
  const box = $("error");
  if (!error) {
    box.hidden = true;
    box.textContent = "";
    return;
  }
  box.textContent = error.requestId ? `${error.message} (request ${error.requestId})` : String(error.message || error);
  box.hidden = false;
}

function notice(text) {
  // A short confirmation of what an action did (the error banner says what went wrong).
  const box = $("notice");
  box.textContent = text || "";
  box.hidden = !text;
}

async function guarded(action) {
  try {
    showError(null);
    notice(null);
    await action();
  } catch (error) {
    showError(error);
    if (error.status === 401) signOut(false);
  }
}

// --- sign in --------------------------------------------------------------------------------------

async function signIn(event) {
  event.preventDefault();
  const key = $("api-key").value.trim();
  sessionStorage.setItem(KEY_STORAGE, key);
  await guarded(async () => {
    await api("GET", "/v1/stats"); // proves the key before showing anything
    $("api-key").value = "";
    location.hash = "#overview";
    route();
  });
}

function signOut(clearError = true) {
  sessionStorage.removeItem(KEY_STORAGE);
  if (clearError) showError(null);
  location.hash = "";
  route();
}

function route() {
  const signedIn = Boolean(sessionStorage.getItem(KEY_STORAGE));
  const page = signedIn ? (location.hash.slice(1) || "overview") : "signin";
  for (const section of document.querySelectorAll(".page")) section.hidden = section.id !== `page-${page}`;
  for (const link of document.querySelectorAll("#nav a")) link.classList.toggle("active", link.dataset.page === page);
  $("nav").hidden = !signedIn;
  $("sign-out").hidden = !signedIn;
  $("who").textContent = signedIn ? `key ${sessionStorage.getItem(KEY_STORAGE).split("_")[1] || "?"}` : "";
  clearInterval(state.refresh);
  if (page === "overview") {
    guarded(loadOverview);
    state.refresh = setInterval(() => guarded(loadOverview), REFRESH_MS);
  } else if (page === "jobs") guarded(() => loadJobs(true));
  else if (page === "dead") guarded(() => loadDead(true));
  else if (page === "schedules") guarded(() => loadSchedules(true));
  else if (page === "queues") {
    guarded(loadQueues);
    state.refresh = setInterval(() => guarded(loadQueues), REFRESH_MS);
  }
  else if (page === "secret") resetRotation();
}

// --- overview -------------------------------------------------------------------------------------

function metric(id, label, value) {
  return el("div", { class: "card metric", id }, el("div", { class: "value" }, value), el("div", { class: "label" }, label));
}

async function loadOverview() {
  const stats = await api("GET", "/v1/stats");
  const counts = stats.last_hour;
  const rate = stats.success_rate === null ? "–" : `${(stats.success_rate * 100).toFixed(1)}%`;
  const lag = stats.fire_lag_ms_avg === null ? "–" : `${Math.round(stats.fire_lag_ms_avg)} ms`;
  $("overview-cards").replaceChildren(
    metric("metric-dead", "dead letters now", stats.dead_letters),
    metric("metric-ready", "ready backlog (deployment)", stats.backlog.ready),
    metric("metric-due", "due backlog (deployment)", stats.backlog.due),
    metric("metric-submitted", "submitted, last hour", counts.submitted),
    metric("metric-success", "success rate, last hour", rate),
    metric("metric-lag", "mean fire lag, last hour", lag),
  );
  const outcomes = ["submitted", "succeeded", "retried", "dead", "cancelled", "replayed"];
  $("chart-outcomes").replaceChildren(barChart(outcomes.map((name) => [name, counts[name]])));
  $("chart-success").replaceChildren(lineChart(stats.minutes.map((m) => m.success_rate), 1, (v) => `${Math.round(v * 100)}%`));
  const lags = stats.minutes.map((m) => m.fire_lag_ms_avg);
  const lagMax = Math.max(10, ...lags.filter((v) => v !== null));
  $("chart-lag").replaceChildren(lineChart(lags, lagMax, (v) => `${Math.round(v)}`));
  $("overview-updated").textContent = `as of ${short(stats.generated_at)}`;
}

const CHART_W = 360;
const CHART_H = 150;
const COLORS = { submitted: "#2f6fed", succeeded: "#16a34a", retried: "#d97706", dead: "#dc2626", cancelled: "#94a3b8", replayed: "#7c3aed" };

function barChart(pairs) {
  const top = Math.max(1, ...pairs.map(([, v]) => v));
  const slot = CHART_W / pairs.length;
  const bars = pairs.map(([name, value], i) => {
    const h = Math.round((value / top) * (CHART_H - 40));
    const x = i * slot + 8;
    return svg("g", { "data-outcome": name },
      svg("rect", { x, y: CHART_H - 20 - h, width: slot - 16, height: h, fill: COLORS[name] || "#2f6fed", rx: 2 }),
      svg("text", { x: x + (slot - 16) / 2, y: CHART_H - 24 - h, "text-anchor": "middle" }, value),
      svg("text", { x: x + (slot - 16) / 2, y: CHART_H - 6, "text-anchor": "middle" }, name));
  });
  return svg("svg", { viewBox: `0 0 ${CHART_W} ${CHART_H}`, width: "100%", role: "img" }, bars);
}

function lineChart(values, top, label) {
  // One point per minute, oldest left; a minute with no data leaves a gap rather than a false zero.
  const step = CHART_W / Math.max(1, values.length - 1);
  const y = (v) => 10 + (CHART_H - 30) * (1 - Math.min(v, top) / top);
  let path = "";
  values.forEach((v, i) => {
    if (v === null) return;
    const continued = i > 0 && values[i - 1] !== null;
    path += `${continued ? "L" : "M"}${(i * step).toFixed(1)},${y(v).toFixed(1)} `;
  });
  const dots = values.map((v, i) => (v === null ? null : svg("circle", { cx: (i * step).toFixed(1), cy: y(v).toFixed(1), r: 2, fill: "#2f6fed" })));
  return svg("svg", { viewBox: `0 0 ${CHART_W} ${CHART_H}`, width: "100%", role: "img" },
    svg("line", { x1: 0, y1: y(top), x2: CHART_W, y2: y(top), stroke: "#e4e7ec" }),
    svg("line", { x1: 0, y1: y(0), x2: CHART_W, y2: y(0), stroke: "#e4e7ec" }),
    svg("text", { x: 2, y: y(top) + 10 }, label(top)),
    svg("text", { x: 2, y: y(0) - 2 }, label(0)),
    svg("text", { x: CHART_W - 2, y: CHART_H - 4, "text-anchor": "end" }, "now"),
    svg("text", { x: 2, y: CHART_H - 4 }, "-60 min"),
    svg("path", { d: path.trim() || "M0,0", fill: "none", stroke: "#2f6fed", "stroke-width": 1.5 }),
    dots.filter(Boolean));
}

// --- jobs -----------------------------------------------------------------------------------------

function jobRow(job) {
  const row = el("tr", { class: "clickable", "data-job-id": job.id, onclick: () => guarded(() => showJob(job.id)) },
    el("td", { class: "mono" }, job.id), el("td", {}, badge(job.status)), el("td", {}, `${job.attempt}/${job.max_attempts}`),
    el("td", {}, short(job.run_at)), el("td", {}, job.last_status_code || job.last_error || ""), el("td", { class: "url" }, job.url));
  return row;
}

function rows(tbody, items, render, emptyText) {
  tbody.replaceChildren(...(items.length ? items.map(render) : [el("tr", {}, el("td", { colspan: 7, class: "empty" }, emptyText))]));
}

async function loadJobs(reset) {
  if (reset) state.jobsCursors = [null];
  const search = $("jobs-search").value.trim();
  const status = $("jobs-status").value;
  $("job-detail").hidden = true;
  $("jobs-schedule").hidden = !state.schedule;
  $("jobs-schedule-id").textContent = state.schedule || "";
  if (state.schedule) {
    // One schedule's occurrences, newest first (GET /v1/schedules/{id}/jobs); status and search do not apply.
    const query = new URLSearchParams({ limit: PAGE_SIZE });
    const cursor = state.jobsCursors[state.jobsCursors.length - 1];
    if (cursor) query.set("cursor", cursor);
    const page = await api("GET", `/v1/schedules/${encodeURIComponent(state.schedule)}/jobs?${query}`);
    rows($("jobs-rows"), page.jobs, jobRow, "No job from this schedule yet");
    state.jobsNext = page.next;
    $("jobs-next").disabled = !page.next;
    $("jobs-first").disabled = state.jobsCursors.length === 1;
    return;
  }
  if (search && !/^https?:\/\//i.test(search)) {
    // Not a URL: an id. One GET; a 404 reads as "no such job" rather than an error banner.
    try {
      rows($("jobs-rows"), [await api("GET", `/v1/jobs/${encodeURIComponent(search)}`)], jobRow, "");
    } catch (error) {
      if (error.status !== 404 && error.status !== 422) throw error;
      rows($("jobs-rows"), [], jobRow, `No job ${search}`);
    }
    $("jobs-next").disabled = true;
    return;
  }
  const found = [];
  let cursor = state.jobsCursors[state.jobsCursors.length - 1];
  for (let page = 0; page < (search ? SEARCH_MAX_PAGES : 1); page++) {
    const query = new URLSearchParams({ limit: search ? 100 : PAGE_SIZE });
    if (status) query.set("status", status);
    if (cursor) query.set("cursor", cursor);
    const result = await api("GET", `/v1/jobs?${query}`);
    found.push(...result.jobs.filter((job) => !search || job.url.startsWith(search)));
    cursor = result.next;
    if (!cursor || found.length >= PAGE_SIZE) break;
  }
  rows($("jobs-rows"), found, jobRow, search ? `No job whose URL starts with ${search}` : "No jobs");
  state.jobsNext = cursor;
  $("jobs-next").disabled = !cursor;
  $("jobs-first").disabled = state.jobsCursors.length === 1;
}

function refreshRow(job) {
  // The list row of a job an action changed shows its new state without reloading the page.
  const row = document.querySelector(`#jobs-rows tr[data-job-id="${CSS.escape(job.id)}"]`);
  if (row) row.replaceWith(jobRow(job));
}

function outcomeCell(job, attempt, last) {
  // A dead job's last failed attempt ended the job: it reads "dead", not "retryable".
  if (job.status === "dead" && attempt.attempt === last && attempt.outcome !== "succeeded") {
    return [badge("dead"), ` ${attempt.outcome === "retryable" ? "attempts exhausted" : attempt.outcome}`];
  }
  return badge(attempt.outcome);
}

function requestSection(job) {
  const headers = Object.entries(job.headers || {});
  return [
    el("h2", { class: "small" }, "Request"),
    el("dl", { id: "job-headers" }, headers.length ? headers.map(([name, value]) => [el("dt", {}, name), el("dd", { class: "mono" }, value)])
      : [el("dt", {}, "headers"), el("dd", { class: "muted" }, "none")]),
    el("pre", { id: "job-body", class: "mono body" }, job.body ? prettyBody(job.body) : "(empty body)"),
  ];
}

function prettyBody(body) {
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}

async function jobAction(method, path, done) {
  const changed = await api(method, path);
  refreshRow(changed);
  await showJob(changed.id);
  notice(done);
}

async function showJob(id) {
  const [job, attempts] = await Promise.all([api("GET", `/v1/jobs/${id}`), api("GET", `/v1/jobs/${id}/executions`)]);
  const last = Math.max(0, ...attempts.executions.map((a) => a.attempt));
  const fields = ["id", "status", "url", "method", "run_at", "attempt", "max_attempts", "created_at", "updated_at",
    "idempotency_key", "schedule_id", "last_status_code", "last_error"];
  const details = el("dl", {}, fields.filter((f) => job[f] !== null && job[f] !== undefined && job[f] !== "")
    .map((f) => [el("dt", {}, f), el("dd", {}, f === "status" ? badge(job.status) : String(job[f]))]));
  const table = el("table", { class: "grid", id: "attempts" },
    el("thead", {}, el("tr", {}, ["Attempt", "Outcome", "Status code", "Latency", "Started", "Error", "Response"].map((h) => el("th", {}, h)))),
    el("tbody", {}, attempts.executions.length ? attempts.executions.map((a) => el("tr", { "data-attempt": a.attempt },
      el("td", {}, a.attempt), el("td", { class: "outcome" }, outcomeCell(job, a, last)), el("td", {}, a.status_code ?? ""), el("td", {}, `${a.latency_ms} ms`),
      el("td", {}, short(a.started_at)), el("td", {}, [a.error_class, a.error_message].filter(Boolean).join(": ")),
      el("td", { class: "mono" }, (a.response_preview || "").slice(0, 200)))) : el("tr", {}, el("td", { colspan: 7, class: "empty" }, "No attempt yet"))));
  const actions = el("div", { class: "toolbar" },
    el("h1", {}, `Job ${job.id}`),
    job.status === "scheduled" ? el("button", { id: "job-run-now", onclick: () => guarded(() => jobAction("POST", `/v1/jobs/${id}/run-now`, `Job ${id} is due now`)) }, "Run now") : null,
    job.status === "scheduled" ? el("button", { class: "danger", id: "job-cancel", onclick: () => guarded(() => jobAction("DELETE", `/v1/jobs/${id}`, `Cancelled job ${id}`)) }, "Cancel") : null,
    job.status === "dead" ? el("button", { id: "job-replay", onclick: () => guarded(() => jobAction("POST", `/v1/jobs/${id}/replay`, `Replayed job ${id}: scheduled to run now`)) }, "Replay") : null,
    el("button", { class: "secondary", onclick: () => { $("job-detail").hidden = true; } }, "Close"));
  $("job-detail").replaceChildren(actions, details, ...requestSection(job), el("h2", { class: "small" }, "Attempts"), table);
  $("job-detail").hidden = false;
  $("job-detail").scrollIntoView({ block: "nearest" });
}

// --- dead letters ---------------------------------------------------------------------------------

async function loadDead(reset) {
  if (reset) state.deadCursors = [null];
  const query = new URLSearchParams({ limit: PAGE_SIZE });
  const cursor = state.deadCursors[state.deadCursors.length - 1];
  if (cursor) query.set("cursor", cursor);
  const [page, stats] = await Promise.all([api("GET", `/v1/dead-letters?${query}`), api("GET", "/v1/stats")]);
  rows($("dead-rows"), page.jobs, (job) => el("tr", { "data-job-id": job.id },
    el("td", { class: "mono" }, job.id), el("td", {}, `${job.attempt}/${job.max_attempts}`),
    el("td", {}, job.last_status_code || job.last_error || ""), el("td", {}, short(job.updated_at)), el("td", { class: "url" }, job.url),
    el("td", {}, el("button", { class: "replay-one", onclick: () => guarded(async () => { await api("POST", `/v1/jobs/${job.id}/replay`); await loadDead(false); notice(`Replayed job ${job.id}: scheduled to run now`); }) }, "Replay"))),
  "No dead letters");
  $("dead-count").textContent = `${stats.dead_letters} dead`;
  state.deadNext = page.next;
  $("dead-next").disabled = !page.next;
  $("dead-first").disabled = state.deadCursors.length === 1;
  $("dead-replay-all").disabled = page.jobs.length === 0;
}

async function replayAll() {
  // 100 per call; stop when the API says no more, or when a batch replays nothing (all failed): bounded.
  let total = 0;
  for (let batch = 0; batch < 1000; batch++) {
    const result = await api("POST", "/v1/dead-letters/replay", { all: true });
    total += result.replayed.length;
    $("dead-count").textContent = `replayed ${total}…`;
    if (!result.more || result.replayed.length === 0) break;
  }
  await loadDead(true);
  notice(`Replayed ${total} dead letter${total === 1 ? "" : "s"}`);
}

// --- schedules ------------------------------------------------------------------------------------

async function loadSchedules(reset) {
  if (reset) state.schedulesCursors = [null];
  const query = new URLSearchParams({ limit: 20 });
  const cursor = state.schedulesCursors[state.schedulesCursors.length - 1];
  if (cursor) query.set("cursor", cursor);
  const page = await api("GET", `/v1/schedules?${query}`);
  // The list carries one next fire time; GET of each one on the page has more (20 reads at most).
  const detailed = await Promise.all(page.schedules.map((s) => api("GET", `/v1/schedules/${s.id}`)));
  rows($("schedule-rows"), detailed, (s) => el("tr", { "data-schedule-id": s.id },
    el("td", { class: "mono" }, s.id), el("td", { class: "mono" }, s.expression), el("td", {}, s.timezone),
    el("td", {}, badge(s.paused ? "paused" : "active")),
    el("td", { class: "mono next-fire" }, (s.next_fire_times || []).slice(0, 3).map(short).join("\n") || "–"),
    el("td", { class: "url" }, s.job.url || ""),
    el("td", {},
      el("button", { class: "jobs secondary", onclick: () => showScheduleJobs(s.id) }, "Jobs"),
      " ",
      el("button", { class: s.paused ? "resume" : "pause secondary", onclick: () => guarded(async () => { await api("PATCH", `/v1/schedules/${s.id}`, { paused: !s.paused }); await loadSchedules(false); }) }, s.paused ? "Resume" : "Pause"),
      " ",
      el("button", { class: "delete danger", onclick: (event) => guarded(async () => {
        // Two clicks: the first arms the button, the second deletes (no blocking confirm dialog).
        if (event.target.dataset.armed !== "1") { event.target.dataset.armed = "1"; event.target.textContent = "Confirm delete"; return; }
        await api("DELETE", `/v1/schedules/${s.id}`);
        await loadSchedules(false);
      }) }, "Delete"))),
  "No schedules");
  state.schedulesNext = page.next;
  $("schedules-next").disabled = !page.next;
  $("schedules-first").disabled = state.schedulesCursors.length === 1;
}

// --- queues ---------------------------------------------------------------------------------------

async function loadQueues() {
  const listing = await api("GET", "/v1/queues");
  // The list has no live figures; GET of each queue has them (a tenant has few queues).
  const detailed = await Promise.all(listing.queues.map((q) => api("GET", `/v1/queues/${encodeURIComponent(q.name)}`)));
  rows($("queue-rows"), detailed, (q) => {
    const path = `/v1/queues/${encodeURIComponent(q.name)}`;
    const figures = q.figures || {};
    return el("tr", { "data-queue": q.name },
      el("td", { class: "mono" }, q.name),
      el("td", { class: "state" }, badge(q.paused ? "paused" : "running"), q.paused ? ` since ${short(q.paused_since)}` : ""),
      el("td", {}, q.rate_limit ? `${q.rate_limit.limit} / ${q.rate_limit.period_s} s` : "–"),
      el("td", {}, q.max_concurrency ? String(q.max_concurrency) : "–"),
      el("td", { class: "waiting" }, String(figures.waiting ?? "–")),
      el("td", { class: "in-flight" }, String(figures.in_flight ?? "–")),
      el("td", { class: "in-window" }, String(figures.in_rate_window ?? "–")),
      el("td", {},
        el("button", { class: q.paused ? "resume" : "pause secondary", onclick: () => guarded(async () => {
          await api("POST", `${path}/${q.paused ? "resume" : "pause"}`);
          await loadQueues();
          notice(`${q.paused ? "Resumed" : "Paused"} queue ${q.name}`);
        }) }, q.paused ? "Resume" : "Pause")));
  }, "No queues (create one with PUT /v1/queues/{name} or hookline queues put)");
}

function showScheduleJobs(id) {
  state.schedule = id;
  if (location.hash === "#jobs") guarded(() => loadJobs(true));
  else location.hash = "#jobs";
}

// --- wiring ---------------------------------------------------------------------------------------

function pager(name, load) {
  $(`${name}-next`).addEventListener("click", () => guarded(async () => {
    state[`${name}Cursors`].push(state[`${name}Next`]);
    await load(false);
  }));
  $(`${name}-first`).addEventListener("click", () => guarded(() => load(true)));
}

// --- signing secret -------------------------------------------------------------------------------

function resetRotation() {
  // The secret is shown once: leaving the page forgets it, and the button needs arming again.
  $("secret-result").hidden = true;
  $("secret-value").textContent = "";
  $("secret-rotate").dataset.armed = "";
  $("secret-rotate").textContent = "Rotate";
}

async function rotateSecret(event) {
  event.preventDefault();
  const button = $("secret-rotate");
  // Two clicks: the first arms the button, the second rotates (no blocking confirm dialog).
  if (button.dataset.armed !== "1") { button.dataset.armed = "1"; button.textContent = "Confirm rotation"; return; }
  const rotation = await api("POST", "/v1/signing-secret/rotate", { overlap_s: Number($("secret-overlap").value) });
  resetRotation();
  $("secret-value").textContent = rotation.secret;
  $("secret-overlap-end").textContent = rotation.previous_signs_until
    ? `The old secret signs too until ${rotation.previous_signs_until}.` : "Only the new secret signs.";
  $("secret-result").hidden = false;
  notice("Signing secret rotated");
}

$("signin-form").addEventListener("submit", signIn);
$("sign-out").addEventListener("click", () => signOut());
$("overview-refresh").addEventListener("click", () => guarded(loadOverview));
$("jobs-go").addEventListener("click", () => guarded(() => loadJobs(true)));
$("jobs-schedule-clear").addEventListener("click", () => { state.schedule = null; guarded(() => loadJobs(true)); });
$("jobs-status").addEventListener("change", () => guarded(() => loadJobs(true)));
$("jobs-search").addEventListener("keydown", (event) => { if (event.key === "Enter") guarded(() => loadJobs(true)); });
$("dead-replay-all").addEventListener("click", () => guarded(replayAll));
$("secret-form").addEventListener("submit", (event) => guarded(() => rotateSecret(event)));
pager("jobs", loadJobs);
pager("dead", loadDead);
pager("schedules", loadSchedules);
window.addEventListener("hashchange", route);
route();
