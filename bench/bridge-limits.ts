/**
 * `npm run bench:bridge-limits`: what Upstash's limits cost the bridge per
 * request. Two bridges in front of one redis-server, one with the limits at
 * Upstash's values (the default) and one with every limit off, take the same
 * sequential requests in alternating rounds: a small SET, a GET, and a job
 * enqueue (EVALSHA of enqueue.lua, six KEYS: the record check measures each).
 * Prints and writes bench/results/bridge-limits.{json,md}.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { startBridge } from "../dev/bridge/server.js";
import { startRedis } from "../dev/redis-launcher.js";
import { Queue } from "../src/queue/queue.js";
import { createRedis } from "../src/queue/redis.js";

const ROUNDS = 6;
const PER_ROUND = 500;
const OFF = { maxRequestBytes: 0, maxReplyBytes: 0, maxRecordBytes: 0, commandsPerSecond: 0, maxRequests: 0 };

const redis = await startRedis();
const token = `bench-${crypto.randomUUID()}`;
const on = await startBridge({ redisUrl: redis.url, token });
const off = await startBridge({ redisUrl: redis.url, token, limits: OFF });

async function post(url: string, body: unknown): Promise<void> {
  const res = await fetch(url, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: JSON.stringify(body) });
  await res.arrayBuffer();
}

type Work = (url: string, i: number) => Promise<void>;
const queues = new Map<string, Queue>();
const queueFor = (url: string) => {
  let q = queues.get(url);
  if (!q) {
    q = new Queue({ redis: createRedis({ redisUrl: url, redisToken: token, redisTimeoutMs: 30_000 }), prefix: `bench-limits-${url.split(":").at(-1)}` });
    queues.set(url, q);
  }
  return q;
};
const workloads: Record<string, Work> = {
  "SET 100 B": (url, i) => post(url, ["SET", `bl:${url}:${i % 100}`, "v".repeat(100)]),
  "GET 100 B": (url, i) => post(url, ["GET", `bl:${url}:${i % 100}`]),
  "enqueue (EVALSHA, 6 KEYS)": async (url, i) => {
    await queueFor(url).enqueue({ topic: "t", payload: { i, pad: "x".repeat(200) }, delayMs: 3_600_000 });
  },
};

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};

const rows: Array<{ workload: string; limits: "on" | "off"; medianUs: number; p99Us: number; meanUs: number }> = [];
for (const [name, work] of Object.entries(workloads)) {
  const samples: Record<"on" | "off", number[]> = { on: [], off: [] };
  // Warm both (connections, script cache).
  for (const b of [on, off]) for (let i = 0; i < 50; i++) await work(b.url, i);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [label, b] of (round % 2
      ? [
          ["off", off],
          ["on", on],
        ]
      : [
          ["on", on],
          ["off", off],
        ]) as Array<["on" | "off", typeof on]>) {
      for (let i = 0; i < PER_ROUND; i++) {
        const t = performance.now();
        await work(b.url, i);
        samples[label].push((performance.now() - t) * 1000);
      }
    }
  }
  for (const label of ["on", "off"] as const) {
    const xs = samples[label];
    rows.push({
      workload: name,
      limits: label,
      medianUs: Math.round(quantile(xs, 0.5)),
      p99Us: Math.round(quantile(xs, 0.99)),
      meanUs: Math.round(xs.reduce((a, b) => a + b, 0) / xs.length),
    });
  }
}

await Promise.all([on.close(), off.close()]);
await redis.stop();

const lines = [
  "# The bridge's Upstash limits: added latency per request",
  "",
  `Sequential requests on loopback, ${ROUNDS} alternating rounds of ${PER_ROUND} per side; limits at Upstash's values vs all off.`,
  "",
  "| workload | limits | median µs | p99 µs | mean µs |",
  "|---|---|---:|---:|---:|",
  ...rows.map((r) => `| ${r.workload} | ${r.limits} | ${r.medianUs} | ${r.p99Us} | ${r.meanUs} |`),
  "",
];
const dir = join(import.meta.dirname, "results");
writeFileSync(join(dir, "bridge-limits.json"), `${JSON.stringify(rows, null, 2)}\n`);
writeFileSync(join(dir, "bridge-limits.md"), lines.join("\n"));
console.log(lines.join("\n"));
