/**
 * How soon a job with no delay starts: an ordinary enqueue (`POST /v1/jobs`)
 * beside webhook ingest (`POST /v1/hooks/:topic`, with the bearer token and
 * signed with the topic's webhookSecret), interleaved one after another on
 * one fresh `npm start` (deployment defaults) delivering to a loopback
 * receiver through each topic's URL. Wait = when the receiver saw the
 * request − the job's `createdAt` (its due time: no delay). One job at a
 * time, each sent once the tick has marked itself asleep (a lone job: the
 * producer starts it, src/tick/wake.ts); with `--awake`, `--gap` ms (plus
 * jitter) apart while the tick polls.
 *
 * `--burst N` sends N back to back each time (each once the one before was
 * answered), as a sender's loop does.
 *
 *   npm run bench:ingest [-- --rounds 20 --burst 5 --awake --gap 400]
 *
 * Writes bench/results/tmp/ingest-lateness.{json,md} (git-ignored); the
 * figures go into the note of the change that took them.
 */
import { execFile } from "node:child_process";
import { createHmac } from "node:crypto";
import { promisify } from "node:util";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import IORedis from "ioredis";
import { Keys } from "../src/queue/keys.js";
import { sleep } from "../harness/util.js";
import { machine, startNpmStart, startReceiver } from "./lib/npm-start.js";
import { summarize } from "./stats.js";

const { values: args } = parseArgs({
  options: {
    rounds: { type: "string", default: "20" },
    gap: { type: "string", default: "400" },
    awake: { type: "boolean", default: false },
    burst: { type: "string", default: "1" },
  },
});
// By default each job is sent once the tick sleeps (a lone job, the case the issue measured); --awake sends them back to back.
const ASLEEP = !args.awake;
const BURST = Number(args.burst);
const ROUNDS = Number(args.rounds);
const GAP = Number(args.gap);
const SECRET = "bench-webhook-secret-0123456789";
const run = promisify(execFile);
const log = (line: string) => console.error(`[bench:ingest] ${line}`);

const receiver = await startReceiver();
const stack = await startNpmStart({ name: "ingest-lateness", settings: {} });
const redis = new IORedis({ port: stack.redisPort, host: "127.0.0.1", maxRetriesPerRequest: null });
const asleepKey = new Keys("dl:{main}").tickAsleep;
/** Waits until the tick has marked itself asleep (and a little more, so every producer has seen it): the path a lone job takes. */
async function tickAsleep() {
  const deadline = Date.now() + 60_000;
  while ((await redis.exists(asleepKey)) === 0 && Date.now() < deadline) await sleep(100);
  await sleep(1_200);
}
const api = (path: string, init: RequestInit & { token?: boolean } = {}) =>
  fetch(`${stack.url}${path}`, {
    ...init,
    headers: { ...(init.token === false ? {} : { authorization: `Bearer ${stack.token}` }), ...(init.headers as Record<string, string>) },
  });

// The -curl variants send with curl (a new connection each, closed after the answer), as a user's shell does.
const variants = ["ordinary", "ingest-token", "ingest-signed", "ordinary-curl", "ingest-curl"] as const;
type Variant = (typeof variants)[number];
const waits = Object.fromEntries(variants.map((v) => [v, [] as number[]])) as Record<Variant, number[]>;
const curl = async (path: string, body: string): Promise<string> => {
  const { stdout } = await run("curl", [
    "-sS",
    "-X",
    "POST",
    "-H",
    `authorization: Bearer ${stack.token}`,
    "-H",
    "content-type: application/json",
    "--data-binary",
    body,
    `${stack.url}${path}`,
  ]);
  return (JSON.parse(stdout) as { id: string }).id;
};
try {
  for (const v of variants) {
    const r = await api(`/v1/topics/${v}`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ url: receiver.url, ...(v === "ingest-signed" ? { webhookSecret: SECRET } : {}) }),
    });
    if (!r.ok) throw new Error(`PUT topic ${v}: ${r.status} ${await r.text()}`);
  }
  const send = async (v: Variant, i: number): Promise<string> => {
    const body = JSON.stringify({ i, v, n: crypto.randomUUID() });
    if (v === "ordinary-curl") return curl("/v1/jobs", JSON.stringify({ topic: v, payload: { i } }));
    if (v === "ingest-curl") return curl(`/v1/hooks/${v}`, body);
    let r: Response;
    if (v === "ordinary") {
      r = await api("/v1/jobs", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ topic: v, payload: { i } }) });
    } else if (v === "ingest-token") {
      r = await api(`/v1/hooks/${v}`, { method: "POST", headers: { "content-type": "application/json" }, body });
    } else {
      const t = Math.floor(Date.now() / 1000);
      const mac = createHmac("sha256", SECRET).update(`${t}.${body}`).digest("hex");
      r = await api(`/v1/hooks/${v}`, {
        method: "POST",
        token: false,
        headers: { "content-type": "application/json", "x-delayline-signature": `t=${t},v1=${mac}` },
        body,
      });
    }
    if (!r.ok) throw new Error(`${v}: ${r.status} ${await r.text()}`);
    return ((await r.json()) as { id: string }).id;
  };
  // A first of each, not measured: the isolate's first requests pay for warming up.
  for (let i = 0; i < ROUNDS + 1; i++) {
    for (const v of variants) {
      if (ASLEEP) await tickAsleep();
      // --burst: several back to back, each sent once the one before was answered (a sender's loop).
      const ids: string[] = [];
      for (let b = 0; b < BURST; b++) ids.push(await send(v, i * BURST + b));
      const deadline = Date.now() + 5_000;
      while (!ids.every((id) => receiver.arrivals.has(id)) && Date.now() < deadline) await sleep(2);
      for (const id of ids) {
        const job = (await (await api(`/v1/jobs/${id}`)).json()) as { createdAt: string };
        const arrived = receiver.arrivals.get(id)?.[0];
        if (i > 0) waits[v].push(arrived === undefined ? Number.NaN : arrived - Date.parse(job.createdAt));
      }
      await sleep(GAP + Math.floor(Math.random() * GAP));
    }
  }
} finally {
  redis.disconnect();
  await stack.stop();
  await receiver.close();
}

const stats = Object.fromEntries(variants.map((v) => [v, summarize(waits[v].filter((w) => !Number.isNaN(w)))])) as Record<
  Variant,
  ReturnType<typeof summarize>
>;
const missing = Object.fromEntries(variants.map((v) => [v, waits[v].filter((w) => Number.isNaN(w)).length]));
const ratio = (v: Variant, p: "p50" | "p99") => Math.round((stats[v][p] / Math.max(1, stats.ordinary[p])) * 100) / 100;
const out = {
  benchmark: "wait of a no-delay job: ordinary enqueue vs webhook ingest, npm start",
  date: new Date().toISOString(),
  machine: machine(),
  mode: ASLEEP ? "each sent once the tick sleeps" : "sent while the tick polls",
  burst: BURST,
  rounds: ROUNDS,
  gapMs: GAP,
  stats,
  missing,
  waits,
};
const md =
  `# Wait of a no-delay job through \`npm start\`: ordinary vs ingest\n\n${out.date}, ${out.machine.cpus} × ${out.machine.model}; ${ROUNDS} rounds, ` +
  `${BURST} job(s) of each variant a round, ${out.mode}${ASLEEP ? "" : `, ${GAP}–${2 * GAP} ms apart`}. Wait = receiver arrival − createdAt.\n\n| variant | n | missing | p50 | p99 | max | p50 ÷ ordinary | p99 ÷ ordinary |\n|---|---|---|---|---|---|---|---|\n` +
  variants
    .map(
      (v) =>
        `| ${v} | ${stats[v].n} | ${missing[v]} | ${stats[v].p50} ms | ${stats[v].p99} ms | ${stats[v].max} ms | ${ratio(v, "p50")} | ${ratio(v, "p99")} |`,
    )
    .join("\n") +
  "\n";
console.log(JSON.stringify(out, null, 2));
const dir = join(import.meta.dirname, "results/tmp");
writeFileSync(join(dir, "ingest-lateness.json"), `${JSON.stringify(out, null, 2)}\n`);
writeFileSync(join(dir, "ingest-lateness.md"), md);
log(md);
