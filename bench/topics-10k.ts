/**
 * The stats endpoints at the default topic cap, through `npm start` (one fresh
 * stack, deployment defaults; MAX_TOPICS=10,000 is the default): 10,000
 * topics are created with one scheduled job each (POST /v1/jobs/batch, 1,000
 * jobs a request, due in an hour), then each read is timed and its answer's
 * bytes counted, one after another:
 *
 *   GET /v1/stats                    the first page (default limit 50, minutes=60)
 *   GET /v1/stats walk               every page, following nextCursor (limit 100)
 *   GET /v1/stats?minutes=1440       the first page, and a walk (4 topics a page)
 *   GET /v1/topics                   the first page (default limit 100), and a walk (limit 500)
 *   GET /metrics                     the busiest METRICS_TOPICS (default 100) and the rest summed
 *   the dashboard                    in headless Chromium (1400×900): from the sign-in click to its
 *                                    first topic row, and the most stats requests it had in flight
 *                                    over the next 20 s
 *
 * Bytes are the answers' bodies; a walk reports its pages, its largest page
 * and its total, and the Redis REST requests the Worker made for it (counted
 * at the bridge, harness/count-requests.ts) with the largest one's reply: an
 * upper bound of any one command's reply, which Upstash caps at 10 MB. Writes bench/results/topics-10k.{json,md} (other runs than
 * the full one: bench/results/tmp/).
 *
 *   npm run bench:topics-10k [-- --topics 10000 --walk-1440 true]
 *
 * bench/results/topics-10k-before.json and the second table of topics-10k.md are
 * this script run against a02fd52 (before the paging), on the same machine.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { countRequests, launchChromium } from "../test/browser.js";
import { machine, startNpmStart, TOKEN } from "./lib/npm-start.js";

const { values: args } = parseArgs({
  options: {
    topics: { type: "string", default: "10000" },
    "walk-1440": { type: "string", default: "true" },
  },
});
const TOPICS = Number(args.topics);
const full = TOPICS === 10_000 && args["walk-1440"] === "true";
const root = join(import.meta.dirname, "..");
const log = (line: string) => console.error(`[bench:topics-10k] ${new Date().toISOString().slice(11, 19)} ${line}`);
const topicName = (i: number) => `t-${String(i).padStart(5, "0")}`;

interface Read {
  what: string;
  status: number;
  pages: number;
  bytes: number;
  largestPageBytes: number;
  ms: number;
  topics: number;
  /** Redis REST requests (pipelines or single commands) the read made, and the largest reply among them, bytes. */
  redisRequests: number;
  largestRedisReplyBytes: number;
  detail?: string;
}

const stack = await startNpmStart({ name: "topics-10k", settings: { MAX_TOPICS: String(Math.max(TOPICS, 10_000)) }, countRequests: true });
const reads: Read[] = [];
let createMs = 0;
let dashboard: { firstRowMs: number; rows: number; statsRequests: number; mostStatsInFlight: number } | null = null;
try {
  log(`stack up on :${stack.port}`);
  const t0 = Date.now();
  for (let at = 0; at < TOPICS; at += 1_000) {
    const jobs = Array.from({ length: Math.min(1_000, TOPICS - at) }, (_, i) => ({ topic: topicName(at + i), payload: { i: at + i }, delay: "1h" }));
    await stack.client.jobs.enqueueBatch(jobs);
  }
  createMs = Date.now() - t0;
  log(`${TOPICS} topics created in ${createMs} ms`);

  type Answer = { status: number; bytes: number; ms: number; json: { topics?: unknown[]; nextCursor?: string | null; detail?: string } | null; text: Buffer };

  /** One GET: status, body bytes, ms, and the body when it is JSON. */
  async function get(path: string): Promise<Answer> {
    const t = performance.now();
    const res = await fetch(`${stack.url}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    const body = Buffer.from(await res.arrayBuffer());
    const ms = performance.now() - t;
    let json: Answer["json"] = null;
    try {
      json = JSON.parse(body.toString("utf8"));
    } catch {}
    return { status: res.status, bytes: body.length, ms, json, text: body };
  }

  /** A first page (or /metrics), or a walk over every page following nextCursor. */
  async function measure(what: string, path: string, walk: boolean): Promise<void> {
    const t = performance.now();
    let cursor: string | null = null;
    await stack.bridgeRequests().catch(() => []);
    const r: Read = { what, status: 0, pages: 0, bytes: 0, largestPageBytes: 0, ms: 0, topics: 0, redisRequests: 0, largestRedisReplyBytes: 0 };
    do {
      const sep = path.includes("?") ? "&" : "?";
      const page: Answer | Error = await get(cursor === null ? path : `${path}${sep}cursor=${encodeURIComponent(cursor)}`).catch((err: Error) => err);
      if (page instanceof Error) {
        // The Worker dropped the connection (what the unpaged code did under a day of series at 10,000 topics).
        r.detail = `${page.message}: ${String((page.cause as Error | undefined)?.message ?? "")}`;
        break;
      }
      r.status = page.status;
      r.pages++;
      r.bytes += page.bytes;
      r.largestPageBytes = Math.max(r.largestPageBytes, page.bytes);
      r.topics += page.json?.topics?.length ?? 0;
      if (page.status !== 200) {
        r.detail = page.json?.detail ?? page.text.toString("utf8").slice(0, 200);
        break;
      }
      if (path === "/metrics") r.topics = (page.text.toString("utf8").match(/^delayline_jobs_scheduled\{/gm) ?? []).length;
      cursor = walk ? (page.json?.nextCursor ?? null) : null;
    } while (cursor !== null);
    r.ms = Math.round(performance.now() - t);
    // The tick's own requests in the same span are counted too; they are small.
    // A stack too busy to write its request log in 5 s (the unpaged code under a day of series) reads as none counted.
    const redis = await stack.bridgeRequests().catch(() => [] as Array<[number, string, number]>);
    r.redisRequests = redis.length;
    r.largestRedisReplyBytes = Math.max(0, ...redis.map(([, , bytes]) => bytes));
    reads.push(r);
    log(
      `${what}: ${r.status}, ${r.pages} page(s), ${r.bytes.toLocaleString("en")} bytes (largest ${r.largestPageBytes.toLocaleString("en")}), ${r.topics} topics, ${r.ms} ms; ${r.redisRequests} Redis requests, largest reply ${r.largestRedisReplyBytes.toLocaleString("en")} bytes${r.detail ? ` — ${r.detail}` : ""}`,
    );
  }

  await measure("GET /v1/stats (first page)", "/v1/stats", false);
  await measure("GET /v1/stats walk (limit 100)", "/v1/stats?limit=100", true);
  await measure("GET /v1/stats?minutes=1440 (first page)", "/v1/stats?minutes=1440", false);
  if (args["walk-1440"] === "true") await measure("GET /v1/stats?minutes=1440 walk", "/v1/stats?minutes=1440&limit=100", true);
  await measure("GET /v1/stats?minutes=0 walk (limit 100)", "/v1/stats?minutes=0&limit=100", true);
  await measure("GET /v1/topics (first page)", "/v1/topics", false);
  await measure("GET /v1/topics walk (limit 500)", "/v1/topics?limit=500", true);
  await measure("GET /metrics", "/metrics", false);

  // The dashboard: time to its first topic row, and how many stats requests it keeps in flight.
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    const stats = countRequests(page, "/v1/stats");
    await page.goto(`${stack.url}/dashboard`);
    await page.locator("#token").fill(TOKEN);
    const t = performance.now();
    await page.locator("#login button[type=submit]").click();
    await page.locator("#topics tbody tr").first().waitFor({ timeout: 120_000 });
    const firstRowMs = Math.round(performance.now() - t);
    await new Promise((r) => setTimeout(r, 20_000));
    dashboard = { firstRowMs, rows: await page.locator("#topics tbody tr").count(), statsRequests: stats.started, mostStatsInFlight: stats.mostInFlight };
    log(
      `dashboard: first row after ${firstRowMs} ms, ${dashboard.rows} rows, ${stats.started} stats requests in ~20 s, at most ${stats.mostInFlight} in flight`,
    );
  } finally {
    await browser.close();
  }
} finally {
  await stack.stop();
}

const result = { at: new Date().toISOString(), topics: TOPICS, createMs, machine: machine(), reads, dashboard };
const dir = full ? join(root, "bench/results") : join(root, "bench/results/tmp");
mkdirSync(dir, { recursive: true });
writeFileSync(join(dir, "topics-10k.json"), `${JSON.stringify(result, null, 2)}\n`);
const md = [
  `# Stats endpoints at ${TOPICS.toLocaleString("en")} topics`,
  "",
  `${result.at}, ${result.machine.cpus} CPUs (${result.machine.model}), load ${JSON.stringify(result.machine.loadavg)}; topics created in ${createMs} ms.`,
  "",
  "| read | status | pages | bytes | largest page | topics | ms | Redis requests | largest Redis reply |",
  "|---|---|---|---|---|---|---|---|---|",
  ...reads.map(
    (r) =>
      `| ${r.what} | ${r.status} | ${r.pages} | ${r.bytes.toLocaleString("en")} | ${r.largestPageBytes.toLocaleString("en")} | ${r.topics.toLocaleString("en")} | ${r.ms.toLocaleString("en")} | ${r.redisRequests.toLocaleString("en")} | ${r.largestRedisReplyBytes.toLocaleString("en")} |`,
  ),
  "",
  dashboard
    ? `Dashboard (Chromium, 1400×900): first topic row ${dashboard.firstRowMs.toLocaleString("en")} ms after signing in; ${dashboard.rows.toLocaleString("en")} rows; ${dashboard.statsRequests} stats requests in the ~20 s after, at most ${dashboard.mostStatsInFlight} in flight.`
    : "",
  "",
].join("\n");
writeFileSync(join(dir, "topics-10k.md"), md);
console.log(md);
