/**
 * delayline as the benchmarks run it: the whole stack the way `npm start`
 * runs it (dev/start.ts: the Worker in workerd through miniflare, the cron
 * driver), with the bench Worker (bench/worker/) and the bench's own Redis
 * and bridge; and the Queue in Node against the same bridge, for numbers
 * that need no Worker.
 */
import type { Redis } from "@upstash/redis/cloudflare";
import type IORedis from "ioredis";
import { startNpmStart, type LoggedLine, type StackRedis } from "../../harness/npm-start.js";
import type { Delayline } from "../../src/client/index.js";
import { Queue } from "../../src/queue/queue.js";
import { createRedis } from "../../src/queue/redis.js";
import { ScriptDigests } from "../../dev/bridge/scripts.js";

export const BENCH_TOKEN = "bench-token-0123456789";
/** The prefix the bench Worker uses (bench/worker/wrangler.toml). */
export const PREFIX = "dl:{main}";

export type { StackRedis } from "../../harness/npm-start.js";

/** What the bench Worker's handlers noted (bench/worker/index.ts). */
interface Samples {
  handled: number;
  lastAt: number;
  /** Durable Object requests the wake alarm received so far, by the key prefix it wakes. */
  durableObjectRequests: Record<string, number>;
  /** Since the last call: [job id, due ms, ran at ms, attempt]. */
  samples: Array<[string, number, number, number]>;
}

export interface Stack {
  url: string;
  client: Delayline;
  /** The process every process of the stack descends from. */
  pid: number;
  /** The Worker's JSON log lines so far (with `jsonLines`). */
  lines: LoggedLine[];
  /** What the bench handlers noted since the last call (and forgets it). */
  samples(): Promise<Samples>;
  stop(): Promise<void>;
}

/**
 * Starts `npm start`'s stack (harness/npm-start.ts) with the bench Worker and `settings` (any of the Worker's
 * settings, e.g. TICK_POLL_MS) and resolves once it is ready.
 */
export async function startStack(
  redis: StackRedis,
  settings: Record<string, string>,
  log: (line: string) => void = () => {},
  /** Appends everything the stack prints here (for looking into a failed run). */
  logFile?: string,
  /** Collects the Worker's JSON log lines (tick rounds, ends, looks) into {@link Stack.lines}, at log level "log". Default false. */
  jsonLines = false,
): Promise<Stack> {
  const stack = await startNpmStart({
    name: "bench",
    settings,
    workerConfig: "bench/worker/wrangler.toml",
    redis,
    token: BENCH_TOKEN,
    via: "node",
    ...(logFile ? { logFile } : {}),
    ...(jsonLines ? { jsonLines, logLevel: "log" } : {}),
    onLine: (line) => {
      if (/\[delayline\]|error/i.test(line)) log(line.trim());
    },
    keepOutputChars: 20_000,
    stopWaitMs: 15_000,
  });
  return {
    url: stack.url,
    client: stack.client,
    pid: stack.pid,
    lines: stack.lines,
    // Read once, never retried: the handlers forget what they answer with.
    async samples() {
      const res = await fetch(`${stack.url}/__bench/samples`, { headers: { authorization: `Bearer ${BENCH_TOKEN}` } });
      if (!res.ok) throw new Error(`/__bench/samples: ${res.status}`);
      return (await res.json()) as Samples;
    },
    stop: stack.stop,
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
  // Scripts carry Upstash's `allow-key-locking` flag, which Redis 7.0 refuses: taken out as the bridge does (dev/bridge/scripts.ts).
  const digests = new ScriptDigests();
  const call = (name: "EVAL" | "EVALSHA", script: string, keys: string[], args: string[]) => {
    const sent = digests.rewrite(name, [script, String(keys.length), ...keys, ...args]).args;
    return client.call(name, ...sent);
  };
  // The Queue's own pipelines (a claim's read of its candidates; its first look at <p>:model) go
  // through the client's requester (src/queue/redis.ts pipeline): here, a pipeline over TCP.
  const requester = {
    request: async ({ body }: { body: Array<Array<string | number>> }) => {
      const replies = (await client.pipeline(body.map(([name, ...args]) => [String(name), ...args.map(String)])).exec()) ?? [];
      return replies.map(([err, result]) => (err ? { error: err.message } : { result }));
    },
  };
  const redis = {
    client: requester,
    evalsha: (sha: string, keys: string[], args: string[]) => call("EVALSHA", sha, keys, args),
    eval: (source: string, keys: string[], args: string[]) => call("EVAL", source, keys, args),
    // What the first look at the data model (src/queue/model.ts) asks.
    get: async (key: string) => client.get(key),
    set: async (key: string, value: string) => client.set(key, value),
    hlen: async (key: string) => client.hlen(key),
    hrandfield: async (key: string, count: number) => client.hrandfield(key, count),
    sscan: async (key: string, cursor: string | number, o: { count: number }) => client.sscan(key, cursor, "COUNT", o.count),
  };
  return new Queue({ redis: redis as unknown as Redis, prefix });
}
