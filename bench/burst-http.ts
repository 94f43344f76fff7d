/**
 * A burst of http deliveries due in the same millisecond through `npm start`
 * (redis-server, the bridge, the Worker of wrangler.toml in workerd, the cron
 * driver), side by side with the same Worker served by miniflare directly
 * (the direct rate): wrangler's deploy bundle in workerd through miniflare's
 * API, no static assets, its own redis-server and bridge (a process of its
 * own, as in npm start), its scheduled handler run through miniflare's
 * /cdn-cgi/handler/scheduled at start and at every minute.
 *
 * Per run, on a stack started fresh at its default settings: N jobs with
 * `runAt` = the same millisecond (LEAD ms after the enqueue starts), stored
 * with `POST /v1/jobs/batch` (1,000 per call), each with `target.url` = a
 * loopback receiver. The rate = N ÷ (last first-arrival − the due time). The
 * open files of the stack's workerd processes (/proc/<pid>/fd) are sampled
 * every 100 ms from the enqueue to the last delivery, and their CPU time
 * (/proc/<pid>/stat) over the burst.
 *
 * Then, on the same stacks, the inbound request rate and the workerd CPU
 * per request: autocannon (a process of its own) on `POST /v1/jobs` (jobs due
 * in an hour) for 10 s through npm start and the direct Worker; and, on the
 * direct stack restarted twice (a new workerd, no tick running), the Worker
 * alone and the Worker with its static assets on it (miniflare's asset router
 * in front of every request, as `wrangler dev` ran them): what npm start's
 * choice to keep the assets beside the Worker, behind its ASSETS binding, is
 * measured by.
 *
 * Runs alternate (npm start, direct; direct, npm start; …); the tables show
 * medians and ranges and the machine load before each run.
 *
 *   npm run bench:burst [-- --jobs 10000 --runs 3 --no-inbound]
 *
 * The full run (default sizes) writes bench/results/burst-http.{json,md};
 * any other to bench/results/tmp/ (git-ignored). {@link runBurstHttp} is the
 * same run, for bench/run.ts.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpuMs } from "../harness/process-cpu.js";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { Miniflare, type WorkerOptions } from "miniflare";
import { unstable_getMiniflareWorkerOptions } from "wrangler";
import { freePort } from "../dev/ports.js";
import { descendantsOf } from "../dev/process-tree.js";
import { bundleWorker, workerName } from "../dev/miniflare-worker.js";
import { startRedis } from "../dev/redis-launcher.js";
import { waitForHealthy } from "../dev/worker-process.js";
import { Delayline } from "../src/client/index.js";
import { sleep } from "../harness/util.js";
import { machine, startNpmStart, startReceiver, TOKEN } from "./lib/npm-start.js";

const root = join(import.meta.dirname, "..");
const CONFIG = join(root, "wrangler.toml");

export interface BurstHttpOptions {
  /** Jobs due in the same millisecond. Default 10,000. */
  jobs?: number;
  /** Measured runs of each stack, alternating. Default 3. */
  runs?: number;
  /** How long after the enqueue starts the jobs fall due, ms. Default 20,000. */
  leadMs?: number;
  /** Measure the inbound request rate too. Default true. */
  inbound?: boolean;
  /** Seconds of autocannon per inbound measurement. Default 10. */
  inboundSeconds?: number;
  /** Progress lines. Default stderr. */
  log?: (line: string) => void;
}

type Kind = "npm start" | "direct";

/** A running stack, whichever kind. */
interface Stack {
  url: string;
  client: Delayline;
  /** Error lines the Worker or workerd printed since the start. */
  problems(): string[];
  /** A new workerd with the Worker, its static assets on it (miniflare's asset router in front) or not, and no tick running; direct only. */
  restart?(withAssets: boolean): Promise<void>;
  stop(): Promise<void>;
}

/** The processes under this one (one stack runs at a time), by what they are. */
function stackProcesses(): Record<"workerd" | "redis" | "node", number[]> {
  const found = { workerd: [] as number[], redis: [] as number[], node: [] as number[] };
  for (const r of descendantsOf(process.pid)) {
    const command = r.args.split(" ")[0]!;
    if (/\bworkerd$/.test(command)) found.workerd.push(r.pid);
    else if (/redis-server/.test(command)) found.redis.push(r.pid);
    // The stack's Node processes (npm start and its Worker's host, or the direct stack's bridge), not autocannon or wrangler's bundler.
    else if (/dev\/(start|worker-host|bridge\/main)\.ts/.test(r.args)) found.node.push(r.pid);
  }
  return found;
}

function openFds(pids: number[]): number {
  let n = 0;
  for (const pid of pids) {
    try {
      n += readdirSync(`/proc/${pid}/fd`).length;
    } catch {
      // gone
    }
  }
  return n;
}

const PROBLEM = /"level":"error"|EMFILE|Too many open files|Your worker restarted|Address already in use/;

async function startNpm(): Promise<Stack> {
  const stack = await startNpmStart({ name: "burst-http", settings: {} });
  return {
    url: stack.url,
    client: stack.client,
    problems: () =>
      existsSync(stack.logFile)
        ? readFileSync(stack.logFile, "utf8")
            .split("\n")
            .filter((l) => PROBLEM.test(l))
        : [],
    stop: () => stack.stop(),
  };
}

/** The Worker as `wrangler deploy` bundles it, in workerd through miniflare, on a redis-server and bridge of its own. */
async function startDirect(): Promise<Stack> {
  const dir = mkdtempSync(join(tmpdir(), "delayline-burst-direct-"));
  const redis = await startRedis({ port: 0, dataDir: join(dir, "redis") });
  const bridgeToken = randomBytes(24).toString("hex");
  const bridgePort = await freePort();
  const bridge = spawn(process.execPath, ["--import", "tsx", "dev/bridge/main.ts"], {
    cwd: root,
    env: { ...process.env, REDIS_URL: redis.url, BRIDGE_TOKEN: bridgeToken, BRIDGE_PORT: String(bridgePort) },
    stdio: ["ignore", "pipe", "inherit"],
  });
  await new Promise<void>((res, rej) => {
    bridge.stdout!.on("data", (c: Buffer) => c.toString().includes("Upstash REST on") && res());
    bridge.once("exit", (code) => rej(new Error(`the bridge exited ${code}`)));
  });
  const { entry } = await bundleWorker(CONFIG, join(dir, "bundle"));
  const name = await workerName(CONFIG);
  const { assets, ...fromConfig } = unstable_getMiniflareWorkerOptions(CONFIG).workerOptions;
  const port = await freePort();
  const problems: string[] = [];
  const worker = (withAssets: boolean): WorkerOptions => ({
    ...fromConfig,
    name,
    modules: true,
    modulesRoot: dirname(entry),
    scriptPath: entry,
    bindings: {
      ...fromConfig.bindings,
      ALLOW_PRIVATE_TARGETS: "true",
      UPSTASH_REDIS_REST_URL: `http://127.0.0.1:${bridgePort}`,
      UPSTASH_REDIS_REST_TOKEN: bridgeToken,
      DELAYLINE_TOKEN: TOKEN,
    },
    serviceBindings: { TICK_RUNNER: { name, entrypoint: "TickChunk" } },
    // Outbound fetches straight out, as npm start's Worker and on Cloudflare (dev/miniflare-worker.ts).
    stripCfConnectingIp: false,
    ...(withAssets && assets ? { assets } : {}),
  });
  const shared = {
    host: "127.0.0.1",
    port,
    cf: false,
    logRequests: false,
    unsafeTriggerHandlers: true,
    handleStructuredLogs: ({ message }: { level: string; message: string }) => {
      if (PROBLEM.test(message)) problems.push(message);
    },
  };
  const mf = new Miniflare({ ...shared, workers: [worker(false)] });
  const url = (await mf.ready).origin;
  await waitForHealthy(url, 60_000);
  // Cloudflare's cron: at start, then at every minute boundary, overlapping.
  const fire = (time: number) => {
    fetch(`${url}/cdn-cgi/handler/scheduled?cron=${encodeURIComponent("* * * * *")}&time=${time}`).then(
      (r) => r.arrayBuffer(),
      () => {},
    );
  };
  fire(Date.now());
  let cron: ReturnType<typeof setTimeout>;
  const arm = () => {
    const next = Math.floor(Date.now() / 60_000) * 60_000 + 60_000;
    cron = setTimeout(() => {
      fire(next);
      arm();
    }, next - Date.now());
  };
  arm();
  return {
    url,
    client: new Delayline({ baseUrl: url, token: TOKEN }),
    problems: () => problems,
    async restart(withAssets: boolean) {
      await mf.setOptions({ ...shared, workers: [worker(withAssets)] });
      await waitForHealthy(url, 60_000);
    },
    async stop() {
      clearTimeout(cron);
      await mf.dispose();
      bridge.kill("SIGTERM");
      await redis.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The burst on `stack`: every job stored, then timed from the due millisecond to the last first arrival. */
async function burst(stack: Stack, jobs: number, leadMs: number) {
  const receiver = await startReceiver();
  try {
    const processes = stackProcesses();
    const pids = processes.workerd;
    const cpuNow = () => ({ workerd: cpuMs(...pids), node: cpuMs(...processes.node), redis: cpuMs(...processes.redis) });
    const fdsIdle = openFds(pids);
    const enqueueStarted = Date.now();
    const dueAt = enqueueStarted + leadMs;
    const ids = new Set<string>();
    let fdsPeak = fdsIdle;
    const sampler = setInterval(() => (fdsPeak = Math.max(fdsPeak, openFds(pids))), 100);
    let cpuAtDue = cpuNow();
    try {
      for (let i = 0; i < jobs; i += 1_000) {
        const batch = Array.from({ length: Math.min(1_000, jobs - i) }, (_, j) => ({
          topic: "burst",
          runAt: dueAt,
          payload: { i: i + j },
          target: { url: receiver.url },
        }));
        for (const r of await stack.client.jobs.enqueueBatch(batch)) ids.add(r.id);
      }
      const enqueueMs = Date.now() - enqueueStarted;
      const storedBeforeDue = Date.now() < dueAt;
      await sleep(dueAt - Date.now());
      cpuAtDue = cpuNow();
      const deadline = Date.now() + 300_000;
      const delivered = () => [...receiver.arrivals.keys()].filter((id) => ids.has(id)).length;
      while (delivered() < ids.size && Date.now() < deadline) await sleep(50);
      const cpuAfter = cpuNow();
      const first = [...receiver.arrivals.entries()].filter(([id]) => ids.has(id)).map(([, t]) => t[0]!);
      const lastAt = Math.max(...first);
      // Acknowledged: every attempt settled as a success. A stack out of file descriptors may answer nothing.
      const counters = () =>
        stack.client.topics.get("burst").then(
          (t) => t.counters,
          () => ({ succeeded: Number.NaN, retried: Number.NaN, dead: Number.NaN }),
        );
      let view = { counters: await counters() };
      for (let i = 0; i < 100 && !(view.counters.succeeded >= ids.size); i++) {
        await sleep(100);
        view = { counters: await counters() };
      }
      const duplicates = [...receiver.arrivals.entries()].filter(([id]) => ids.has(id)).reduce((n, [, t]) => n + t.length - 1, 0);
      return {
        enqueueMs,
        storedBeforeDue,
        delivered: first.length,
        duplicates,
        succeeded: view.counters.succeeded,
        retried: view.counters.retried,
        dead: view.counters.dead,
        firstAfterDueMs: Math.min(...first) - dueAt,
        lastAfterDueMs: lastAt - dueAt,
        ratePerSec: Math.round((first.length / Math.max(1, lastAt - dueAt)) * 1000),
        workerdProcesses: pids.length,
        fds: { idle: fdsIdle, peak: fdsPeak },
        /** CPU the stack's processes spent from the due time to the last delivery, per delivery: the Worker's (workerd), the bridge's (Node), Redis'. */
        cpuMsPerDelivery: {
          workerd: Math.round(((cpuAfter.workerd - cpuAtDue.workerd) / Math.max(1, first.length)) * 1000) / 1000,
          node: Math.round(((cpuAfter.node - cpuAtDue.node) / Math.max(1, first.length)) * 1000) / 1000,
          redis: Math.round(((cpuAfter.redis - cpuAtDue.redis) / Math.max(1, first.length)) * 1000) / 1000,
        },
      };
    } finally {
      clearInterval(sampler);
    }
  } finally {
    await receiver.close();
  }
}

const autocannonBin = join(dirname(createRequire(import.meta.url).resolve("autocannon/package.json")), "autocannon.js");

/** `worker`: on the stack after the burst (its tick still running); direct only: `restarted` and `assetRouter`, each on a new workerd. */
interface InboundRuns {
  worker: Inbound;
  restarted?: Inbound;
  assetRouter?: Inbound;
}

interface Inbound {
  perSec: number;
  total: number;
  non2xx: number;
  errors: number;
  p50Ms: number;
  p99Ms: number;
  /** CPU per request of the stack's workerd, its Node processes, Redis, and this process (where the direct stack's miniflare lives). */
  cpuMsPerRequest: { workerd: number; node: number; redis: number; bench: number };
}

/**
 * `POST /v1/jobs` as fast as 50 keep-alive connections go for `seconds`
 * (autocannon in a process of its own), with the CPU the stack's processes
 * spent per request: on a loaded machine the rate follows the share of the
 * cores the stack got, the CPU per request much less.
 */
async function inbound(url: string, seconds: number): Promise<Inbound> {
  const processes = stackProcesses();
  const before = { workerd: cpuMs(...processes.workerd), redis: cpuMs(...processes.redis), node: cpuMs(...processes.node), bench: cpuMs(process.pid) };
  const r = await autocannon(url, seconds);
  const per = (role: keyof typeof before) => {
    const now = role === "bench" ? cpuMs(process.pid) : cpuMs(...processes[role]);
    return Math.round(((now - before[role]) / Math.max(1, r.total)) * 1000) / 1000;
  };
  return { ...r, cpuMsPerRequest: { workerd: per("workerd"), node: per("node"), redis: per("redis"), bench: per("bench") } };
}

function autocannon(url: string, seconds: number): Promise<{ perSec: number; total: number; non2xx: number; errors: number; p50Ms: number; p99Ms: number }> {
  const body = JSON.stringify({ topic: "inbound", payload: { x: 1 }, delay: "1h" });
  const args = [autocannonBin, "--json", "--no-progress", "-c", "50", "-d", String(seconds), "-m", "POST", "-b", body];
  args.push("-H", `authorization=Bearer ${TOKEN}`, "-H", "content-type=application/json", `${url}/v1/jobs`);
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (c: Buffer) => (out += c));
    child.once("exit", (code) => {
      try {
        const r = JSON.parse(out) as { requests: { average: number; total: number }; non2xx: number; errors: number; latency: { p50: number; p99: number } };
        res({
          perSec: Math.round(r.requests.average),
          total: r.requests.total,
          non2xx: r.non2xx,
          errors: r.errors,
          p50Ms: r.latency.p50,
          p99Ms: r.latency.p99,
        });
      } catch {
        rej(new Error(`autocannon exited ${code}`));
      }
    });
  });
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const range = (xs: number[]) => [Math.min(...xs), Math.max(...xs)] as [number, number];

/** The whole benchmark: alternating runs of each stack, their medians and ranges, and whether the targets are met. */
export async function runBurstHttp(options: BurstHttpOptions = {}) {
  const jobs = options.jobs ?? 10_000;
  const runs = options.runs ?? 3;
  const leadMs = options.leadMs ?? 20_000;
  const withInbound = options.inbound ?? true;
  const seconds = options.inboundSeconds ?? 10;
  const log = options.log ?? ((l: string) => console.error(`[bench:burst] ${l}`));
  const startedAt = new Date();
  const results: Array<
    { run: number; stack: Kind; load: ReturnType<typeof machine>["loadavg"]; problems: string[] } & Awaited<ReturnType<typeof burst>> & {
        inbound?: InboundRuns;
      }
  > = [];
  for (let run = 1; run <= runs; run++) {
    // Which goes first alternates too, so a load that rises or falls through the run favours neither.
    for (const kind of (run % 2 ? ["npm start", "direct"] : ["direct", "npm start"]) as Kind[]) {
      const load = machine().loadavg;
      log(`run ${run}, ${kind}: starting (load ${load["1m"]})`);
      const stack = kind === "npm start" ? await startNpm() : await startDirect();
      try {
        const b = await burst(stack, jobs, leadMs);
        log(
          `run ${run}, ${kind}: ${b.delivered}/${jobs} delivered at ${b.ratePerSec}/s, workerd fds ${b.fds.idle} → ${b.fds.peak}, CPU ms per delivery ${JSON.stringify(b.cpuMsPerDelivery)}`,
        );
        let inboundResult: InboundRuns | undefined;
        if (withInbound) {
          inboundResult = { worker: await inbound(stack.url, seconds) };
          if (stack.restart) {
            // The asset router against the same Worker without it, each on a fresh workerd with no tick beside it.
            await stack.restart(false);
            inboundResult.restarted = await inbound(stack.url, seconds);
            await stack.restart(true);
            inboundResult.assetRouter = await inbound(stack.url, seconds);
          }
          log(
            `run ${run}, ${kind}: POST /v1/jobs ${Object.entries(inboundResult)
              .map(([k, v]) => `${k} ${v.perSec}/s, CPU ms per request ${JSON.stringify(v.cpuMsPerRequest)}`)
              .join("; ")}`,
          );
        }
        results.push({ run, stack: kind, load, ...b, ...(inboundResult ? { inbound: inboundResult } : {}), problems: stack.problems().slice(0, 20) });
      } finally {
        await stack.stop();
      }
    }
  }
  const of = (kind: Kind) => results.filter((r) => r.stack === kind);
  const stat = (xs: number[]) => ({ median: median(xs), range: range(xs) });
  const inboundOf = (kind: Kind, key: keyof InboundRuns) =>
    of(kind)
      .map((r) => r.inbound?.[key])
      .filter((x): x is Inbound => x !== undefined);
  const inboundStat = (kind: Kind, key: keyof InboundRuns) => ({
    perSec: stat(inboundOf(kind, key).map((x) => x.perSec)),
    workerdCpuMsPerRequest: stat(inboundOf(kind, key).map((x) => x.cpuMsPerRequest.workerd)),
  });
  const burstStat = (kind: Kind) => ({
    ratePerSec: stat(of(kind).map((r) => r.ratePerSec)),
    workerdCpuMsPerDelivery: stat(of(kind).map((r) => r.cpuMsPerDelivery.workerd)),
    fdsPeak: range(of(kind).map((r) => r.fds.peak)),
  });
  const round2 = (x: number) => Math.round(x * 100) / 100;
  const npm = burstStat("npm start");
  const direct = burstStat("direct");
  const ratio = round2(npm.ratePerSec.median / direct.ratePerSec.median);
  const clean = (kind: Kind) => of(kind).every((r) => r.delivered === jobs && r.duplicates === 0 && r.succeeded === jobs && r.problems.length === 0);
  const summary = {
    burst: {
      npmStart: npm,
      direct,
      ratio,
      pairRatios: range(of("npm start").map((r, i) => round2(r.ratePerSec / of("direct")[i]!.ratePerSec))),
      workerdCpuRatio: round2(npm.workerdCpuMsPerDelivery.median / direct.workerdCpuMsPerDelivery.median),
    },
    ...(withInbound
      ? {
          inbound: {
            npmStart: inboundStat("npm start", "worker"),
            direct: inboundStat("direct", "worker"),
            directRestarted: inboundStat("direct", "restarted"),
            directWithAssetRouter: inboundStat("direct", "assetRouter"),
          },
        }
      : {}),
    target: { allDeliveredOnceNoErrors: clean("npm start") && clean("direct"), ratioAtLeast: 0.8, met: clean("npm start") && ratio >= 0.8 },
  };
  return {
    benchmark: "a burst of http deliveries due at once: npm start vs the same Worker served by miniflare directly",
    date: startedAt.toISOString(),
    durationS: Math.round((Date.now() - startedAt.getTime()) / 1000),
    machine: machine(),
    settings: { jobs, runs, leadMs, inboundSeconds: withInbound ? seconds : null, worker: "wrangler.toml at its defaults (ALLOW_PRIVATE_TARGETS=true)" },
    summary,
    runs: results,
  };
}

type Result = Awaited<ReturnType<typeof runBurstHttp>>;

function markdown(r: Result): string {
  const s = r.summary;
  const n = (v: number) => v.toLocaleString("en");
  const rate = (x: { median: number; range: [number, number] }) => `${n(Math.round(x.median))}/s (${x.range.map(n).join("–")})`;
  const ms = (x: { median: number; range: [number, number] }) => `${x.median} ms (${x.range.join("–")})`;
  const round2 = (x: number) => Math.round(x * 100) / 100;
  const load = (l: { "1m": number; "5m": number; "15m": number }) => `${l["1m"]} / ${l["5m"]} / ${l["15m"]}`;
  let md =
    `# A burst of http deliveries due at once: \`npm start\` vs the Worker served directly\n\n` +
    `${r.date}, ${r.machine.cpus} × ${r.machine.model}, Node ${r.machine.node}; ${r.durationS} s in all. Load (1 / 5 / 15 min) at the end: ${load(r.machine.loadavg)}.\n\n` +
    `Per run, a fresh stack at its default settings: ${n(r.settings.jobs)} jobs with the same \`runAt\`, ${r.settings.leadMs / 1000} s after the enqueue started, ` +
    `stored with \`POST /v1/jobs/batch\`, each with \`target.url\` = a loopback receiver. Rate = jobs ÷ (last first-arrival − due time); CPU = what the ` +
    `stack's workerd spent from the due time to the last delivery, per delivery (\`/proc/<pid>/stat\`). ` +
    `**npm start** is \`dev/start.ts\` (its own redis-server and bridge, the Worker in workerd through miniflare with its static assets beside it, the cron driver); ` +
    `**direct** is wrangler's deploy bundle of the same Worker in workerd through miniflare's API, no static assets, its own redis-server and bridge process, ` +
    `the scheduled handler run through \`/cdn-cgi/handler/scheduled\`. ${r.settings.runs} runs each, alternating (which goes first too); medians (ranges).\n\n` +
    `| | npm start | direct | npm start ÷ direct |\n|---|---|---|---|\n` +
    `| delivery rate | ${rate(s.burst.npmStart.ratePerSec)} | ${rate(s.burst.direct.ratePerSec)} | **${s.burst.ratio}** (per pair ${s.burst.pairRatios.join("–")}) |\n` +
    `| workerd CPU per delivery | ${ms(s.burst.npmStart.workerdCpuMsPerDelivery)} | ${ms(s.burst.direct.workerdCpuMsPerDelivery)} | ${s.burst.workerdCpuRatio} |\n` +
    `| workerd open files, peak | ${s.burst.npmStart.fdsPeak.join("–")} | ${s.burst.direct.fdsPeak.join("–")} | |\n`;
  if (s.inbound) {
    const i = s.inbound;
    md +=
      `| \`POST /v1/jobs\`, 50 connections, ${r.settings.inboundSeconds} s | ${rate(i.npmStart.perSec)} | ${rate(i.direct.perSec)} | ${round2(i.npmStart.perSec.median / i.direct.perSec.median)} |\n` +
      `| its workerd CPU per request | ${ms(i.npmStart.workerdCpuMsPerRequest)} | ${ms(i.direct.workerdCpuMsPerRequest)} | ${round2(i.npmStart.workerdCpuMsPerRequest.median / i.direct.workerdCpuMsPerRequest.median)} |\n` +
      "\nThe static assets on the Worker or beside it: `POST /v1/jobs` on the direct stack, each on a new workerd with no tick running, " +
      "the Worker alone and then with `[assets]` on it (miniflare's asset router in front of every request, as `wrangler dev` ran it):\n\n" +
      `| | the Worker alone | with the asset router | with ÷ alone |\n|---|---|---|---|\n` +
      `| rate | ${rate(i.directRestarted.perSec)} | ${rate(i.directWithAssetRouter.perSec)} | ${round2(i.directWithAssetRouter.perSec.median / i.directRestarted.perSec.median)} |\n` +
      `| workerd CPU per request | ${ms(i.directRestarted.workerdCpuMsPerRequest)} | ${ms(i.directWithAssetRouter.workerdCpuMsPerRequest)} | ` +
      `**${round2(i.directWithAssetRouter.workerdCpuMsPerRequest.median / i.directRestarted.workerdCpuMsPerRequest.median)}** |\n`;
  }
  md +=
    `\nTarget: every job delivered once and acknowledged, no error, no file-descriptor exhaustion, npm start ≥ 0.8 × the direct rate: **${s.target.met ? "met" : "missed"}** ` +
    `(${s.burst.ratio}×).\n\n` +
    `| run | stack | load before (1 / 5 / 15 min) | enqueue | delivered | duplicates | succeeded | first / last after due | rate | workerd processes | open files idle → peak | CPU per delivery: workerd / Node / Redis | POST /v1/jobs: rate, workerd CPU per request | problems |\n` +
    `|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n` +
    r.runs
      .map(
        (x) =>
          `| ${x.run} | ${x.stack} | ${load(x.load)} | ${x.enqueueMs} ms${x.storedBeforeDue ? "" : " (after the due time)"} | ${x.delivered} | ${x.duplicates} | ${x.succeeded} | ` +
          `${x.firstAfterDueMs} / ${x.lastAfterDueMs} ms | ${x.ratePerSec}/s | ${x.workerdProcesses} | ${x.fds.idle} → ${x.fds.peak} | ` +
          `${x.cpuMsPerDelivery.workerd} / ${x.cpuMsPerDelivery.node} / ${x.cpuMsPerDelivery.redis} ms | ` +
          `${
            x.inbound
              ? Object.entries(x.inbound)
                  .map(
                    ([k, v]) => `${{ worker: "", restarted: "restarted: ", assetRouter: "asset router: " }[k]}${v.perSec}/s, ${v.cpuMsPerRequest.workerd} ms`,
                  )
                  .join("; ")
              : "—"
          } | ${x.problems.length} |`,
      )
      .join("\n") +
    "\n";
  return md;
}

if (process.argv[1] && import.meta.filename === process.argv[1]) {
  const { values: args } = parseArgs({
    options: {
      jobs: { type: "string", default: "10000" },
      runs: { type: "string", default: "3" },
      lead: { type: "string", default: "20000" },
      "no-inbound": { type: "boolean", default: false },
    },
  });
  const options = { jobs: Number(args.jobs), runs: Number(args.runs), leadMs: Number(args.lead), inbound: !args["no-inbound"] };
  const result = await runBurstHttp(options);
  const full = options.jobs === 10_000 && options.runs === 3 && options.leadMs === 20_000 && options.inbound;
  const dir = join(root, full ? "bench/results" : "bench/results/tmp");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "burst-http.json"), `${JSON.stringify(result, null, 2)}\n`);
  writeFileSync(join(dir, "burst-http.md"), markdown(result));
  console.log(markdown(result));
  process.exit(result.summary.target.met ? 0 : 1);
}
