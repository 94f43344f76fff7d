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
 *
 * Bytes are the answers' bodies; a walk reports its pages, its largest page
 * and its total. Writes bench/results/topics-10k.{json,md} (other runs than
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
import { machine, startNpmStart, TOKEN } from "./lib/npm-start.js";

const { values: args } = parseArgs({
  options: {
    topics: { type: "string", default: "10000" },
    "walk-1440": { type: "string", default: "true" },
  },
});
const TOPICS = Number(args.topics);
const full = TOPICS === 10_000;
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
  detail?: string;
}

const stack = await startNpmStart({ name: "topics-10k", settings: { MAX_TOPICS: String(Math.max(TOPICS, 10_000)) } });
const reads: Read[] = [];
let createMs = 0;
try {
  log(`stack up on :${stack.port}`);
  const t0 = Date.now();
  for (let at = 0; at < TOPICS; at += 1_000) {
    const jobs = Array.from({ length: Math.min(1_000, TOPICS - at) }, (_, i) => ({ topic: topicName(at + i), payload: { i: at + i }, delay: "1h" }));
    await stack.client.enqueueBatch(jobs);
  }
  createMs = Date.now() - t0;
  log(`${TOPICS} topics created in ${createMs} ms`);

  /** One GET: status, body bytes, ms, and the body when it is JSON. */
  async function get(path: string) {
    const t = performance.now();
    const res = await fetch(`${stack.url}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    const body = Buffer.from(await res.arrayBuffer());
    const ms = performance.now() - t;
    let json: { topics?: unknown[]; nextCursor?: string | null; detail?: string } | null = null;
    try {
      json = JSON.parse(body.toString("utf8"));
    } catch {}
    return { status: res.status, bytes: body.length, ms, json, text: body };
  }

  /** A first page (or /metrics), or a walk over every page following nextCursor. */
  async function measure(what: string, path: string, walk: boolean): Promise<void> {
    const t = performance.now();
    let cursor: string | null = null;
    const r: Read = { what, status: 0, pages: 0, bytes: 0, largestPageBytes: 0, ms: 0, topics: 0 };
    do {
      const sep = path.includes("?") ? "&" : "?";
      const page = await get(cursor === null ? path : `${path}${sep}cursor=${encodeURIComponent(cursor)}`);
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
    reads.push(r);
    log(
      `${what}: ${r.status}, ${r.pages} page(s), ${r.bytes.toLocaleString("en")} bytes (largest ${r.largestPageBytes.toLocaleString("en")}), ${r.topics} topics, ${r.ms} ms${r.detail ? ` — ${r.detail}` : ""}`,
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
} finally {
  await stack.stop();
}

const result = { at: new Date().toISOString(), topics: TOPICS, createMs, machine: machine(), reads };
const dir = full ? join(root, "bench/results") : join(root, "bench/results/tmp");
mkdirSync(dir, { recursive: true });
writeFileSync(join(dir, "topics-10k.json"), `${JSON.stringify(result, null, 2)}\n`);
const md = [
  `# Stats endpoints at ${TOPICS.toLocaleString("en")} topics`,
  "",
  `${result.at}, ${result.machine.cpus} CPUs (${result.machine.model}), load ${JSON.stringify(result.machine.loadavg)}; topics created in ${createMs} ms.`,
  "",
  "| read | status | pages | bytes | largest page | topics | ms |",
  "|---|---|---|---|---|---|---|",
  ...reads.map(
    (r) =>
      `| ${r.what} | ${r.status} | ${r.pages} | ${r.bytes.toLocaleString("en")} | ${r.largestPageBytes.toLocaleString("en")} | ${r.topics.toLocaleString("en")} | ${r.ms.toLocaleString("en")} |`,
  ),
  "",
].join("\n");
writeFileSync(join(dir, "topics-10k.md"), md);
console.log(md);
