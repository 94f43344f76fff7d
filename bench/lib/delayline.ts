/**
 * delayline as the benchmarks run it: the whole stack the way `npm start`
 * runs it (dev/start.ts: the Worker in workerd through miniflare, the cron
 * driver), with the bench Worker (bench/worker/) and the bench's own Redis
 * and bridge; and the Queue in Node against the same bridge, for numbers
 * that need no Worker.
 */
import { spawn } from "node:child_process";
import type { Redis } from "@upstash/redis/cloudflare";
import type IORedis from "ioredis";
import { appendFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../../dev/ports.js";
import { Delayline } from "../../src/client/index.js";
import { Queue } from "../../src/queue/queue.js";
import { createRedis } from "../../src/queue/redis.js";
import { sleep } from "./infra.js";

const root = join(import.meta.dirname, "../..");
export const BENCH_TOKEN = "bench-token-0123456789";
/** The prefix the bench Worker uses (bench/worker/wrangler.toml). */
export const PREFIX = "dl:{main}";

/** Where the stack's Redis is: the bench's bridge (Upstash protocol), or a Redis the stack bridges itself. */
export type StackRedis = { restUrl: string; restToken: string } | { redisUrl: string };

export interface Stack {
  url: string;
  client: Delayline;
  /** What the bench handlers noted since the last call (and forgets it). */
  samples(): Promise<{ handled: number; lastAt: number; samples: Array<[string, number, number]> }>;
  stop(): Promise<void>;
}

/**
 * Starts `npm start`'s stack with the bench Worker and `settings` (any of the
 * Worker's settings, e.g. TICK_POLL_MS) and resolves once it is ready.
 */
export async function startStack(
  redis: StackRedis,
  settings: Record<string, string>,
  log: (line: string) => void = () => {},
  /** Appends everything the stack prints here (for looking into a failed run). */
  logFile?: string,
): Promise<Stack> {
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), "delayline-bench-"));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...settings,
    PORT: String(port),
    DELAYLINE_DATA_DIR: dataDir,
    DELAYLINE_TOKEN: BENCH_TOKEN,
    WRANGLER_CONFIG: "bench/worker/wrangler.toml",
  };
  if ("restUrl" in redis) {
    env.UPSTASH_REDIS_REST_URL = redis.restUrl;
    env.UPSTASH_REDIS_REST_TOKEN = redis.restToken;
  } else {
    env.REDIS_URL = redis.redisUrl;
    delete env.UPSTASH_REDIS_REST_URL;
    delete env.UPSTASH_REDIS_REST_TOKEN;
  }
  const child = spawn(process.execPath, ["--import", "tsx", "dev/start.ts"], { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  let ready = false;
  const onData = (c: Buffer) => {
    const text = c.toString();
    output = (output + text).slice(-20_000);
    if (logFile) appendFileSync(logFile, text.replace(/^(?=.)/gm, `${Date.now()} `));
    if (text.includes("[delayline] ready")) ready = true;
    for (const line of text.split("\n")) if (/\[delayline\]|error/i.test(line)) log(line.trim());
  };
  child.stdout!.on("data", onData);
  child.stderr!.on("data", onData);
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      await Promise.race([exited, sleep(15_000)]);
    }
    rmSync(dataDir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 90_000;
  while (!ready) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`the delayline stack did not become ready:\n${output}`);
    }
    await sleep(100);
  }
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    client: new Delayline({ baseUrl: url, token: BENCH_TOKEN }),
    async samples() {
      const res = await fetch(`${url}/__bench/samples`, { headers: { authorization: `Bearer ${BENCH_TOKEN}` } });
      if (!res.ok) throw new Error(`/__bench/samples: ${res.status}`);
      return (await res.json()) as { handled: number; lastAt: number; samples: Array<[string, number, number]> };
    },
    stop,
  };
}

/** delayline's Queue in Node, through the bench's bridge. */
export function nodeQueue(restUrl: string, restToken: string, prefix = PREFIX): Queue {
  return new Queue({ redis: createRedis({ redisUrl: restUrl, redisToken: restToken, redisTimeoutMs: 60_000 }), prefix });
}

/**
 * delayline's Queue over a direct ioredis connection: the same scripts with
 * the same arguments, without the REST round trip. Only for storing large
 * fixtures quickly (the scale benchmark's million future jobs); every
 * measured operation goes through the bridge.
 */
export function directQueue(client: IORedis, prefix: string): Queue {
  const redis = {
    evalsha: (sha: string, keys: string[], args: string[]) => client.evalsha(sha, keys.length, ...keys, ...args),
    eval: (source: string, keys: string[], args: string[]) => client.eval(source, keys.length, ...keys, ...args),
  };
  return new Queue({ redis: redis as unknown as Redis, prefix });
}
