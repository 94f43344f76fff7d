/**
 * The dashboard: topics at a glance, the last hour as charts, the tick's
 * heartbeat, a job browser per topic and state with cancel, a job view with
 * payload and attempt history, a search by id, a dead-letter browser
 * with replay and purge (each bulk action after a preview of its dry run),
 * a shaped topic's busiest flow keys with pause and
 * resume per key, and the recurring schedules with pause, resume and
 * delete. It talks to
 * the API with the typed client and the token the operator pastes, which it
 * keeps in sessionStorage (this tab only). It refreshes itself 5 s after its
 * last refresh ended, so no two stats requests are ever in flight; topics come
 * a page of 50 at a time ("More topics"), and a refresh reloads as many pages.
 */
import uPlot from "uplot";
import { Delayline, DelaylineError, type DeadLetter, type Stats } from "../src/client/index.js";
import { LATENESS_BOUNDS_MS, quantile } from "../src/queue/metrics.js";
import { confirmBulk } from "./bulk-preview.js";
import { byId, el, fmtAgo, fmtCount, fmtMs, fmtTime } from "./dom.js";
import { keysCell, KeysPanel } from "./flow-keys.js";
import { JobBrowser } from "./job-browser.js";
import { ScheduleTable } from "./schedules.js";

const TOKEN_KEY = "delayline.token";
const REFRESH_MS = 5_000;
const MINUTES = 60;
/** A cron heartbeat older than this means the tick is not being invoked. */
const HEARTBEAT_STALE_MS = 2.5 * 60_000;
const DEAD_PAGE = 50;
/** Topics per stats page (the API's default; at most 100). */
const TOPIC_PAGE = 50;

// ---- charts ------------------------------------------------------------

interface Chart {
  plot: uPlot;
  box: HTMLElement;
}

const COLORS = ["#2f6fde", "#c77c02", "#d64545", "#1f9d55"];

function makeChart(boxId: string, series: Array<{ label: string; unit?: string }>): Chart {
  const box = byId(boxId);
  const options: uPlot.Options = {
    width: Math.max(300, box.clientWidth),
    height: 220,
    series: [
      {},
      ...series.map((s, i) => ({
        label: s.label,
        stroke: COLORS[i % COLORS.length]!,
        width: 2,
        spanGaps: false,
        points: { show: true, size: 4 },
        value: (_u: uPlot, v: number | null) => (v === null ? "–" : `${fmtCount(Math.round(v))}${s.unit ?? ""}`),
      })),
    ],
    axes: [{}, { size: 60 }],
    scales: { x: { time: true }, y: { range: (_u, min, max) => [Math.min(0, min), Math.max(1, max * 1.1)] } },
    legend: { live: true },
  };
  const plot = new uPlot(options, [[], ...series.map(() => [])], box);
  box.dataset.points = "0";
  return { plot, box };
}

/** Draws a chart's data; the container says how many points it holds (the browser test reads it). */
function draw(chart: Chart, data: uPlot.AlignedData): void {
  chart.plot.setData(data);
  const points = data.slice(1).reduce((n, s) => n + (s as Array<number | null>).filter((v) => v !== null && Number.isFinite(v)).length, 0);
  chart.box.dataset.points = String(points);
}

// ---- state -------------------------------------------------------------

let client: Delayline | null = null;
let stats: Stats | null = null;
let chartTopic = "";
let deadTopic: string | null = null;
let deadCursor: string | null = null;
let timer: ReturnType<typeof setTimeout> | undefined;
/** Pages of topics shown: a refresh reads as many, so "More topics" survives it. */
let topicPages = 1;
/** The refresh under way, if any: a refresh asked for meanwhile runs once after it, never beside it. */
let refreshing: Promise<void> | null = null;
let refreshAgain = false;
let charts: { throughput: Chart; backlog: Chart; lateness: Chart } | null = null;

function showBanner(message: string | null): void {
  const banner = byId("banner");
  banner.hidden = message === null;
  banner.textContent = message ?? "";
}

function describe(err: unknown): string {
  if (err instanceof DelaylineError) return `${err.status} ${err.problem.title}: ${err.problem.detail}`;
  return err instanceof Error ? err.message : String(err);
}

/** Runs an action from a button; a 401 signs out, other errors show in the banner. */
async function act(work: () => Promise<unknown>): Promise<void> {
  try {
    await work();
    showBanner(null);
  } catch (err) {
    if (err instanceof DelaylineError && err.status === 401) return signOut("The token is no longer accepted.");
    showBanner(describe(err));
  }
}

const browser = new JobBrowser({ client: () => client, act, changed: () => refresh() });
const keys = new KeysPanel({ client: () => client, act, changed: () => refresh() });
const schedules = new ScheduleTable({ client: () => client, act, openJob: (id) => browser.openJob(id) });

// ---- rendering -----------------------------------------------------------

function renderHeartbeat(s: Stats, now: number): void {
  const box = byId("heartbeat");
  box.hidden = false;
  // The main shard's tick; null when main did not answer (the shards item says which did not).
  const tick = s.tick;
  const status = tick?.status ?? null;
  const stale = tick?.lastScheduledAt == null || now - Date.parse(tick.lastScheduledAt) > HEARTBEAT_STALE_MS;
  const state = !tick
    ? "main shard not answering"
    : stale
      ? "no recent cron"
      : status === null
        ? "no loop yet"
        : status.ended !== null
          ? `ended (${status.ended})`
          : status.asleep
            ? "asleep"
            : "running";
  const dot = el("span", { className: `dot${stale ? " stale" : status?.asleep ? " asleep" : ""}` });
  const item = (label: string, value: string) => el("span", { data: { item: label } }, `${label} `, el("b", { text: value }));
  box.replaceChildren(
    el("span", { data: { item: "tick" } }, dot, el("b", { text: state })),
    item("last cron", tick ? fmtAgo(tick.lastScheduledAt, now) : "–"),
    item("rounds", status ? fmtCount(status.rounds) : "–"),
    item("claimed", status ? fmtCount(status.claimed) : "–"),
    item("budget used", status ? `${fmtCount(status.subrequests)} / ${fmtCount(status.budget)}` : "–"),
    item("reported", status ? fmtAgo(status.updatedAt, now) : "–"),
    ...(s.partial
      ? [item("shards", `${s.shards.length} of ${s.shards.length + s.missingShards.length} answering; not ${s.missingShards.join(", ")}`)]
      : s.shards.length > 1
        ? [item("shards", `${s.shards.length} answering`)]
        : []),
  );
}

function renderTopics(s: Stats): void {
  const body = byId("topics").querySelector("tbody")!;
  byId("no-topics").hidden = s.topics.length > 0;
  body.replaceChildren(
    ...s.topics.map((t) => {
      const state = t.paused ? "paused" : t.mode === "pull" ? "pull" : "active";
      const select = el("button", { text: t.topic, className: "link", title: "chart this topic" });
      select.addEventListener("click", () => selectChartTopic(t.topic));
      const dead = el("button", { text: fmtCount(t.dead), className: `link dead-count${t.dead > 0 ? " some" : ""}`, title: "browse dead letters" });
      dead.addEventListener("click", () => void openDead(t.topic));
      const toggle = el("button", { text: t.paused ? "Resume" : "Pause", className: "quiet", data: { action: t.paused ? "resume" : "pause" } });
      toggle.addEventListener(
        "click",
        () =>
          void act(async () => {
            toggle.disabled = true;
            await (t.paused ? client!.topics.resume(t.topic) : client!.topics.pause(t.topic));
            await refresh();
          }),
      );
      const cell = (text: string, field: string, className = "num") => el("td", { text, className, data: { field } });
      const browse = (state: "scheduled" | "inflight", count: number) => {
        const button = el("button", {
          text: fmtCount(count),
          className: "link",
          title: `browse ${state === "inflight" ? "jobs in flight" : "scheduled jobs"}`,
        });
        button.addEventListener("click", () => void act(() => browser.open(t.topic, state)));
        return el("td", { className: "num", data: { field: state } }, button);
      };
      return el(
        "tr",
        { className: chartTopic === t.topic ? "selected" : "", data: { topic: t.topic } },
        el("td", {}, select),
        el("td", { data: { field: "state" } }, el("span", { className: `badge ${state}`, text: state })),
        browse("scheduled", t.scheduled),
        cell(fmtCount(t.ready), "ready"),
        browse("inflight", t.inflight),
        keysCell(t.topic, t.flowKeys, (topic) => void act(() => keys.open(topic))),
        el("td", { className: "num", data: { field: "dead" } }, dead),
        cell(t.ready > 0 ? fmtMs(t.lagMs) : "–", "lag"),
        cell(t.ratePerMinute.toFixed(t.ratePerMinute < 10 ? 1 : 0), "rate"),
        cell(`${fmtMs(t.lateness.p50)} / ${fmtMs(t.lateness.p99)}`, "lateness"),
        el("td", { className: "num" }, toggle),
      );
    }),
  );
  const picker = byId<HTMLSelectElement>("chart-topic");
  const options = ["", ...s.topics.map((t) => t.topic)];
  if ([...picker.options].map((o) => o.value).join("\n") !== options.join("\n")) {
    picker.replaceChildren(...options.map((v) => el("option", { text: v === "" ? "all topics shown" : v })));
    for (const [i, o] of [...picker.options].entries()) o.value = options[i]!;
  }
  if (!options.includes(chartTopic)) chartTopic = "";
  picker.value = chartTopic;
}

/** Sums the chosen topics' series minute by minute; lateness quantiles come from the merged buckets. */
function renderCharts(s: Stats): void {
  if (!charts) return;
  const topics = s.topics.filter((t) => chartTopic === "" || t.topic === chartTopic);
  const length = Math.max(0, ...topics.map((t) => t.series.length));
  const xs: number[] = [];
  const col = () => new Array<number | null>(length).fill(null);
  const [succeeded, retried, dead, scheduled, ready, inflight, p50, p99] = [col(), col(), col(), col(), col(), col(), col(), col()];
  const add = (arr: Array<number | null>, i: number, v: number | null) => {
    if (v !== null) arr[i] = (arr[i] ?? 0) + v;
  };
  for (let i = 0; i < length; i++) {
    const points = topics.map((t) => t.series[i]).filter((p) => p !== undefined);
    xs.push(Date.parse(points[0]?.at ?? new Date().toISOString()) / 1_000);
    const buckets = new Array<number>(LATENESS_BOUNDS_MS.length + 1).fill(0);
    for (const p of points) {
      add(succeeded, i, p.succeeded);
      add(retried, i, p.retried);
      add(dead, i, p.dead);
      add(scheduled, i, p.scheduled);
      add(ready, i, p.ready);
      add(inflight, i, p.inflight);
      for (const [b, c] of p.latenessBuckets.entries()) buckets[b]! += c;
    }
    const h = { bounds: [...LATENESS_BOUNDS_MS, Infinity], counts: buckets, count: buckets.reduce((a, b) => a + b, 0), sumMs: 0 };
    p50[i] = quantile(h, 0.5);
    p99[i] = quantile(h, 0.99);
  }
  draw(charts.throughput, [xs, succeeded, retried, dead]);
  draw(charts.backlog, [xs, scheduled, ready, inflight]);
  draw(charts.lateness, [xs, p50, p99]);
}

function selectChartTopic(topic: string): void {
  chartTopic = topic;
  if (stats) {
    renderTopics(stats);
    renderCharts(stats);
  }
}

/** A job id that opens the job view. */
function openJob(id: string): HTMLButtonElement {
  const button = el("button", { text: id, className: "link mono", data: { action: "open" } });
  button.addEventListener("click", () => void act(() => browser.openJob(id)));
  return button;
}

function renderDeadEntries(entries: DeadLetter[], append: boolean): void {
  const body = byId("dead-list").querySelector("tbody")!;
  const rows = entries.map((e) => {
    const replay = el("button", { text: "Replay", className: "quiet", data: { action: "replay" } });
    replay.addEventListener(
      "click",
      () =>
        void act(async () => {
          replay.disabled = true;
          await client!.deadLetters.replay(deadTopic!, { ids: [e.id] });
          await Promise.all([openDead(deadTopic!), refresh()]);
        }),
    );
    const payload = JSON.stringify(e.payload) ?? "null";
    return el(
      "tr",
      { data: { job: e.id } },
      el("td", {}, openJob(e.id)),
      el("td", { text: String(e.attempts), className: "num" }),
      el("td", { text: fmtTime(e.failedAt), title: e.failedAt }),
      el("td", { text: e.lastError ?? "–" }),
      el("td", { text: payload.length > 200 ? `${payload.slice(0, 200)}…` : payload, className: "payload mono" }),
      el("td", { className: "num" }, replay),
    );
  });
  if (append) body.append(...rows);
  else body.replaceChildren(...rows);
  byId("dead-empty").hidden = body.children.length > 0;
}

async function openDead(topic: string, more = false): Promise<void> {
  if (!client) return;
  const page = await client.deadLetters.list(topic, { limit: DEAD_PAGE, ...(more && deadCursor ? { cursor: deadCursor } : {}) });
  deadTopic = topic;
  deadCursor = page.nextCursor;
  byId("dead").hidden = false;
  byId("dead-topic").textContent = topic;
  byId("dead-more").hidden = page.nextCursor === null;
  renderDeadEntries(page.entries, more);
  if (!more) byId("dead").scrollIntoView({ block: "start" });
}

// ---- lifecycle -----------------------------------------------------------

/** The stats of the pages of topics shown, page after page (one stats request at a time), with the first page's heartbeat. */
async function readStats(c: Delayline): Promise<Stats> {
  let first: Stats | null = null;
  const topics: Stats["topics"] = [];
  let cursor: string | null = null;
  for (let page = 0; page < topicPages; page++) {
    const got: Stats = await c.stats.get({ minutes: MINUTES, limit: TOPIC_PAGE, ...(cursor === null ? {} : { cursor }) });
    first ??= got;
    topics.push(...got.topics);
    cursor = got.nextCursor;
    if (cursor === null) break;
  }
  return { ...first!, topics, nextCursor: cursor };
}

/**
 * Reads and draws the stats once. A refresh asked for while one runs (a
 * button's action, "More topics") runs once after it, so the page never has
 * two stats requests in flight; the next poll is set only when it is done.
 */
function refresh(): Promise<void> {
  if (refreshing) {
    refreshAgain = true;
    return refreshing;
  }
  clearTimeout(timer);
  refreshing = (async () => {
    do {
      refreshAgain = false;
      await refreshOnce();
    } while (refreshAgain && client);
  })().finally(() => {
    refreshing = null;
    if (client) timer = setTimeout(() => void refresh(), REFRESH_MS);
  });
  return refreshing;
}

async function refreshOnce(): Promise<void> {
  const c = client;
  if (!c) return;
  try {
    // Both at once: a refresh takes one round trip, and a failure of either shows in the banner.
    const [fresh] = await Promise.all([readStats(c), schedules.refresh()]);
    if (client !== c) return;
    stats = fresh;
    const now = Date.parse(stats.now);
    renderHeartbeat(stats, now);
    renderTopics(stats);
    renderCharts(stats);
    byId("topics-count").textContent = `${fmtCount(stats.topics.length)} of ${fmtCount(stats.total)}`;
    byId("topics-more").hidden = stats.nextCursor === null;
    byId("updated").textContent = `updated ${fmtTime(now)}`;
    showBanner(null);
  } catch (err) {
    if (err instanceof DelaylineError && err.status === 401) return signOut("The token is no longer accepted.");
    showBanner(`Could not refresh: ${describe(err)}`);
  }
}

function start(token: string): void {
  client = new Delayline({ baseUrl: location.origin, token });
  topicPages = 1;
  byId("login").hidden = true;
  byId("app").hidden = false;
  byId("sign-out").hidden = false;
  charts ??= {
    throughput: makeChart("chart-throughput", [{ label: "succeeded" }, { label: "retried" }, { label: "dead" }]),
    backlog: makeChart("chart-backlog", [{ label: "scheduled" }, { label: "ready" }, { label: "in flight" }]),
    lateness: makeChart("chart-lateness", [
      { label: "p50", unit: " ms" },
      { label: "p99", unit: " ms" },
    ]),
  };
  void refresh();
}

function signOut(message?: string): void {
  sessionStorage.removeItem(TOKEN_KEY);
  clearTimeout(timer);
  client = null;
  byId("app").hidden = true;
  byId("sign-out").hidden = true;
  byId("heartbeat").hidden = true;
  byId("login").hidden = false;
  const error = byId("login-error");
  error.hidden = message === undefined;
  error.textContent = message ?? "";
}

byId("login").addEventListener("submit", (event) => {
  event.preventDefault();
  const token = byId<HTMLInputElement>("token").value.trim();
  const error = byId("login-error");
  // Check the token before keeping it: a wrong one should say so here, not later.
  new Delayline({ baseUrl: location.origin, token }).stats
    .get({ minutes: 0, limit: 1 })
    .then(() => {
      sessionStorage.setItem(TOKEN_KEY, token);
      error.hidden = true;
      start(token);
    })
    .catch((err: unknown) => {
      error.hidden = false;
      error.textContent = err instanceof DelaylineError && err.status === 401 ? "That token is not accepted." : describe(err);
    });
});
byId("sign-out").addEventListener("click", () => signOut());
byId("topics-more").addEventListener("click", () => {
  topicPages++;
  void refresh();
});
byId<HTMLSelectElement>("chart-topic").addEventListener("change", (e) => selectChartTopic((e.target as HTMLSelectElement).value));
byId("dead-close").addEventListener("click", () => {
  byId("dead").hidden = true;
  deadTopic = null;
});
byId("dead-more").addEventListener("click", () => void act(() => openDead(deadTopic!, true)));
byId("dead-replay-all").addEventListener(
  "click",
  () =>
    void act(async () => {
      const topic = deadTopic!;
      const dry = await client!.deadLetters.replay(topic, { all: true, dryRun: true });
      if (!(await confirmBulk({ verb: "Replay", noun: "dead letters", topic }, { count: dry.replayed, ids: dry.ids ?? [] }))) return;
      await client!.deadLetters.replay(topic, { all: true });
      await Promise.all([openDead(topic), refresh()]);
    }),
);
byId("dead-purge").addEventListener(
  "click",
  () =>
    void act(async () => {
      const topic = deadTopic!;
      const dry = await client!.deadLetters.purge(topic, { dryRun: true });
      const action = { verb: "Purge", noun: "dead letters", topic, warning: "They are dropped for good: this cannot be undone." };
      if (!(await confirmBulk(action, { count: dry.purged, ids: dry.ids }))) return;
      await client!.deadLetters.purge(topic);
      await Promise.all([openDead(topic), refresh()]);
    }),
);
window.addEventListener("resize", () => {
  for (const c of Object.values(charts ?? {})) c.plot.setSize({ width: Math.max(300, c.box.clientWidth), height: 220 });
});

const saved = sessionStorage.getItem(TOKEN_KEY);
if (saved) start(saved);
else signOut();
