/**
 * Upstash's documented limits, as the bridge enforces them (Free and
 * Pay-as-you-go; upstash.com/docs/redis/troubleshooting/*):
 *
 * - a request is at most 10 MB ("ERR max request size exceeded"), and so is
 *   one command's reply (the same page: loading a whole collection "with a
 *   single request … can throw the max-request-size-limit exception");
 * - one record (a string, or a hash/list/set/zset as a whole) is at most
 *   100 MB ("ERR max single record size exceeded"); reads and deletes of a
 *   larger record still work;
 * - a database has a command budget ("ERR max requests limit exceeded", a
 *   monthly count) and a data size ("ERR DB capacity quota exceeded");
 * - 10,000 commands per second; past that commands wait.
 *
 * HTTP status: Upstash's REST API answers a command that fails with 400 and
 * `{ "error": "<Redis' error text>" }`; the docs name no other status for
 * these limits, so the bridge assumes 400 for every one of them (inside a
 * pipeline or transaction the element carries the `{ error }` and the request
 * answers 200, as for any other command error).
 */

/** What the bridge holds requests to; `0` turns a limit off. */
export interface UpstashLimits {
  /** Largest request body, in bytes. Default 10 MB (10,485,760), Upstash's. */
  maxRequestBytes: number;
  /** Largest reply of one command (each element of a pipeline or transaction, each script), as encoded JSON, in bytes. Default 10 MB. */
  maxReplyBytes: number;
  /** Largest record per key (`MEMORY USAGE`), in bytes. Default 100 MB (104,857,600), Upstash's. */
  maxRecordBytes: number;
  /** Commands per second before commands wait (a token bucket holding one second's worth). Default 10,000, Upstash's. */
  commandsPerSecond: number;
  /** Commands the bridge runs before every further one answers "ERR max requests limit exceeded" (Upstash's monthly budget). Default 0: no budget. */
  maxRequests: number;
}

const MB = 1024 * 1024;

/** Upstash's own values: what `npm start`, the tests and the benchmarks run under. */
export const UPSTASH_LIMITS: Readonly<UpstashLimits> = Object.freeze({
  maxRequestBytes: 10 * MB,
  maxReplyBytes: 10 * MB,
  maxRecordBytes: 100 * MB,
  commandsPerSecond: 10_000,
  maxRequests: 0,
});

/** Upstash's error texts, verbatim. */
export const UPSTASH_ERRORS = {
  requestSize: "ERR max request size exceeded",
  recordSize: "ERR max single record size exceeded",
  requests: "ERR max requests limit exceeded",
  capacity: "ERR DB capacity quota exceeded",
} as const;

/** The HTTP status Upstash answers a failing command with (see the module comment). */
export const LIMIT_STATUS = 400;

const ENV: Record<keyof UpstashLimits, string> = {
  maxRequestBytes: "BRIDGE_MAX_REQUEST_BYTES",
  maxReplyBytes: "BRIDGE_MAX_REPLY_BYTES",
  maxRecordBytes: "BRIDGE_MAX_RECORD_BYTES",
  commandsPerSecond: "BRIDGE_COMMANDS_PER_SECOND",
  maxRequests: "BRIDGE_MAX_REQUESTS",
};

/**
 * Limits set in the environment (`BRIDGE_MAX_RECORD_BYTES=0` turns the record
 * cap off, `BRIDGE_MAX_RECORD_BYTES=1048576` lowers it to 1 MB); the others
 * keep their defaults. Throws, naming the variable, on anything but a
 * non-negative integer.
 */
export function limitsFromEnv(env: Record<string, string | undefined>): Partial<UpstashLimits> {
  const out: Partial<UpstashLimits> = {};
  for (const [field, name] of Object.entries(ENV) as Array<[keyof UpstashLimits, string]>) {
    const raw = env[name];
    if (raw === undefined || raw === "") continue;
    const n = Number(raw);
    if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer (0 turns the limit off), got ${JSON.stringify(raw)}`);
    out[field] = n;
  }
  return out;
}

/**
 * Commands per second as a token bucket holding one second's worth: a
 * command takes a token at once while there is one, and past that waits its
 * turn (every caller takes its tokens when it arrives, so later callers wait
 * longer: first come, first served). Nothing fails, as on Upstash.
 */
export class CommandRate {
  private tokens: number;
  private at: number;

  /** `now` is the clock in ms (default `performance.now`; a test passes its own). */
  constructor(
    private perSecond: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.tokens = perSecond;
    this.at = now();
  }

  /** Changes the rate; the bucket starts full. */
  reset(perSecond: number): void {
    this.perSecond = perSecond;
    this.tokens = perSecond;
    this.at = this.now();
  }

  /** Takes `n` tokens now; how many ms the caller must wait before its commands run (0 while the rate is not reached or is off). */
  reserve(n: number): number {
    if (this.perSecond <= 0) return 0;
    const now = this.now();
    this.tokens = Math.min(this.perSecond, this.tokens + ((now - this.at) * this.perSecond) / 1000);
    this.at = now;
    this.tokens -= n;
    return this.tokens >= 0 ? 0 : (-this.tokens * 1000) / this.perSecond;
  }

  /** Resolves when `n` commands may run (at once while the rate is not reached or is off). */
  take(n: number): Promise<void> | undefined {
    const waitMs = this.reserve(n);
    if (waitMs === 0) return undefined;
    return new Promise((resolve) => setTimeout(resolve, Math.ceil(waitMs)));
  }
}

/**
 * Where write commands keep the keys they grow (positions in the arguments
 * after the name). Deletes and reads are left out: Upstash lets them through
 * on a record over the cap. Scripts are handled apart (their KEYS).
 */
const FIRST = (args: string[]) => (args.length > 0 ? [args[0]!] : []);
const SECOND = (args: string[]) => (args.length > 1 ? [args[1]!] : []);
const EVERY_OTHER = (args: string[]) => args.filter((_, i) => i % 2 === 0);
const WRITES = new Map<string, (args: string[]) => string[]>([
  ...[
    "SET",
    "SETNX",
    "SETEX",
    "PSETEX",
    "GETSET",
    "APPEND",
    "SETRANGE",
    "SETBIT",
    "HSET",
    "HSETNX",
    "HMSET",
    "LPUSH",
    "RPUSH",
    "LPUSHX",
    "RPUSHX",
    "LINSERT",
    "LSET",
    "SADD",
    "ZADD",
    "ZINCRBY",
    "XADD",
    "PFADD",
    "GEOADD",
    "RESTORE",
    "SUNIONSTORE",
    "SINTERSTORE",
    "SDIFFSTORE",
    "ZUNIONSTORE",
    "ZINTERSTORE",
    "ZDIFFSTORE",
    "ZRANGESTORE",
    "JSON.SET",
    "JSON.ARRAPPEND",
    "JSON.STRAPPEND",
  ].map((name) => [name, FIRST] as const),
  ...["RPOPLPUSH", "LMOVE", "SMOVE", "COPY", "RENAME", "RENAMENX", "BITOP"].map((name) => [name, SECOND] as const),
  ["MSET", EVERY_OTHER],
  ["MSETNX", EVERY_OTHER],
]);

const byteLength = (s: string) => Buffer.byteLength(s, "utf8");

/**
 * What `bytes` of arguments can add to a key's `MEMORY USAGE`: jemalloc
 * rounds each allocation up to its size class (at most a quarter more), and
 * each element carries headers and a dict entry (64 bytes is generous). An
 * estimate on the high side refuses a write a little early rather than let
 * a key pass the cap.
 */
const growth = (bytes: number, elements: number) => Math.ceil(bytes * 1.25) + 64 * elements;

/**
 * The keys a command writes, each once, and the bytes it may add to each (see `growth`):
 * for a script every key in KEYS (its ARGV counted against each, not knowing
 * which grows), for a plain write command its keys (its arguments). `undefined` for a
 * command that writes no record. A key named twice is one record: counted
 * twice, a batch enqueue naming its topic's keys once per job would seem to
 * grow them a thousandfold, and the next script of its pipeline was refused.
 */
export function writtenKeys(name: string, args: string[]): { keys: string[]; bytes: number } | undefined {
  if (name === "EVAL" || name === "EVALSHA") {
    const numkeys = Number(args[1]);
    if (!Number.isInteger(numkeys) || numkeys <= 0) return undefined;
    const keys = [...new Set(args.slice(2, 2 + numkeys))];
    let bytes = 0;
    for (let i = 2 + numkeys; i < args.length; i++) bytes += byteLength(args[i]!);
    return { keys, bytes: growth(bytes, args.length - 2 - numkeys) };
  }
  const keysOf = WRITES.get(name);
  if (!keysOf) return undefined;
  let bytes = 0;
  for (const a of args) bytes += byteLength(a);
  return { keys: [...new Set(keysOf(args))], bytes: growth(bytes, args.length) };
}

/** Bytes of a reply as the bridge sends it: JSON text, base64 or not. */
export function replyBytes(reply: unknown, base64: boolean): number {
  if (reply === null || reply === undefined) return 4;
  if (typeof reply === "number") return String(reply).length;
  if (Array.isArray(reply)) {
    let n = 2 + Math.max(0, reply.length - 1);
    for (const r of reply) n += replyBytes(r, base64);
    return n;
  }
  const raw = reply instanceof Error ? byteLength(reply.message) : typeof reply === "string" ? byteLength(reply) : (reply as Buffer).length;
  // Base64 of n bytes is 4·⌈n/3⌉; plain text is counted unescaped (a lower bound of its JSON).
  return 2 + (base64 ? 4 * Math.ceil(raw / 3) : raw);
}
