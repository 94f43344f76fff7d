import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { encodeReply, type Json, parseCommand } from "./encoding.js";
import { CommandRate, LIMIT_STATUS, replyBytes, UPSTASH_ERRORS, UPSTASH_LIMITS, type UpstashLimits, writtenKeys } from "./limits.js";
import { type CommandPool, type Outcome, RedisUnavailableError, type ReplyForm, TransactionDiscardedError } from "./pool.js";
import { ScriptDigests } from "./scripts.js";

/** Options of the Upstash-compatible REST handler. */
export interface BridgeAppOptions {
  /** Bearer token every request must carry. */
  token: string;
  /** Where commands run. */
  pool: CommandPool;
  /**
   * Largest body the bridge reads at all, whatever the limits: past it the
   * answer is 413 `request body too large`. Default 32 MiB. (Upstash's own
   * request limit, lower, is `limits.maxRequestBytes`.)
   */
  maxBodyBytes?: number;
  /** Upstash's limits (dev/bridge/limits.ts); each field `0` turns that limit off. Default {@link UPSTASH_LIMITS}, all on. */
  limits?: Partial<UpstashLimits>;
  /** Called with every request's commands as the client sent them, before they run (a test recording the keys of each call). Default none. */
  onCommands?: (commands: ReadonlyArray<{ readonly name: string; readonly args: readonly string[] }>) => void;
  /** Called once per request with what is safe to log: never tokens, keys or values. */
  log?: (line: { method: string; path: string; status: number; ms: number }) => void;
}

function digest(s: string): Buffer {
  return createHash("sha256").update(s).digest();
}

/** A request answered with `status` and `{ error: message }`. */
class Refusal extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const BEARER = /^Bearer\s+(.+)$/i;

/**
 * The Upstash REST protocol over a real Redis, as a Node `http` request
 * handler: `POST /` runs one command, `POST /pipeline` runs several in
 * order, `POST /multi-exec` runs them as one transaction. Replies are base64
 * when the client asks with `Upstash-Encoding`. Every answer is JSON; an
 * error is `{ error }` (401 without the token, 413 past the body limit, 400
 * for a malformed body, a Redis error or one of Upstash's limits, 503 when
 * Redis is unreachable), and carries an `upstash-sync-token` header.
 *
 * Upstash's limits (dev/bridge/limits.ts) hold by default, each with
 * Upstash's error text: the request size (before Redis sees anything), each
 * command's reply size, the record size per key (refused before the write,
 * see `recordCheck`), the command rate (commands wait) and, when set, a
 * command budget. Scripts flagged `#!lua flags=allow-key-locking` run with
 * the flag taken out (dev/bridge/scripts.ts).
 *
 * Plain `http` rather than a web framework: this stands in for Upstash on
 * the same machine as the Worker it serves, and building a web Request and
 * Response per call (with their streams and abort signals) was a good part
 * of its CPU, which the Worker then did not get.
 */
export function createBridgeHandler(options: BridgeAppOptions): BridgeHandler {
  const { pool } = options;
  const expected = digest(options.token);
  const maxBodyBytes = options.maxBodyBytes ?? 32 * 1024 * 1024;
  const limits: UpstashLimits = { ...UPSTASH_LIMITS, ...options.limits };
  const rate = new CommandRate(limits.commandsPerSecond);
  const digests = new ScriptDigests();
  let commandsRun = 0;
  // Upstash's read-your-writes token: one more on every answer. One Redis has no replicas to wait for, so a token sent is not waited on.
  let syncToken = 0;

  // Replies base64-encoded must keep their bytes; the others are text either way.
  const form = (b64: boolean): ReplyForm => (b64 ? "bytes" : "text");

  type Command = { name: string; args: string[] };
  function readCommands(body: unknown): Command[] {
    if (!Array.isArray(body) || body.length === 0) throw new Refusal(400, "the body must be a non-empty JSON array of commands");
    return body.map((command) => parseCommand(command));
  }

  /**
   * Which commands to refuse for the record cap, by index. Before anything
   * runs, every key the request writes is measured (`MEMORY USAGE`, one round
   * trip for them all), and a command is refused when its key's size plus the
   * bytes the request brings to that key so far would pass the cap: no partial
   * write. Keys already near the cap (over half of it) are measured again
   * after the run (`near`), for writes that grow a key by more than their
   * arguments (a script moving a record between its KEYS, a *STORE).
   */
  async function recordCheck(commands: Command[]): Promise<{ refused: Set<number>; near: Map<number, string[]> } | undefined> {
    const cap = limits.maxRecordBytes;
    if (cap <= 0) return undefined;
    const writes = commands.map((c) => writtenKeys(c.name, c.args));
    const keys = [...new Set(writes.flatMap((w) => w?.keys ?? []))];
    if (keys.length === 0) return undefined;
    const sizes = await pool.pipeline(
      keys.map((k) => ({ name: "MEMORY", args: ["USAGE", k] })),
      "text",
    );
    const size = new Map(keys.map((k, i) => [k, Number((sizes[i] as { result?: unknown }).result ?? 0) || 0]));
    const refused = new Set<number>();
    const near = new Map<number, string[]>();
    for (const [i, w] of writes.entries()) {
      if (!w) continue;
      if (w.keys.some((k) => size.get(k)! + w.bytes > cap)) {
        refused.add(i);
        continue;
      }
      for (const k of w.keys) size.set(k, size.get(k)! + w.bytes);
      const close = w.keys.filter((k) => size.get(k)! > cap / 2);
      if (close.length > 0) near.set(i, close);
    }
    return { refused, near };
  }

  /** Commands whose near-cap keys passed the cap in the run: the write happened (see recordCheck), the answer is Upstash's error. */
  async function overAfter(near: Map<number, string[]>): Promise<Set<number>> {
    const over = new Set<number>();
    if (near.size === 0) return over;
    const entries = [...near.entries()];
    const keys = [...new Set(entries.flatMap(([, ks]) => ks))];
    const sizes = await pool.pipeline(
      keys.map((k) => ({ name: "MEMORY", args: ["USAGE", k] })),
      "text",
    );
    const big = new Set(keys.filter((_, i) => Number((sizes[i] as { result?: unknown }).result ?? 0) > limits.maxRecordBytes));
    for (const [i, ks] of entries) if (ks.some((k) => big.has(k))) over.add(i);
    return over;
  }

  /** One command's answer, or a pipeline's or transaction's answers in order. */
  type Answer = { result: Json } | { error: string };

  /** Redis' error as Upstash words it: a full Redis (`maxmemory`, noeviction) is Upstash's capacity quota. */
  const upstashError = (error: string): string => (error.startsWith("OOM ") ? UPSTASH_ERRORS.capacity : error);

  /**
   * Runs `commands` (one alone, a pipeline or a transaction) under the limits:
   * the request budget, the command rate (waiting), the record cap (refusing
   * before the write), the flagged-script rewrite, and the reply cap.
   */
  async function run(kind: "one" | "pipeline" | "transaction", commands: Command[], b64: boolean): Promise<Answer[]> {
    if (limits.maxRequests > 0 && commandsRun + commands.length > limits.maxRequests) {
      return commands.map(() => ({ error: UPSTASH_ERRORS.requests }));
    }
    commandsRun += commands.length;
    options.onCommands?.(commands);
    // A script counts as one command here; Upstash bills the commands it runs too.
    await rate.take(commands.length);
    const rewrites = commands.map((c) => digests.rewrite(c.name, c.args));
    const sent = commands.map((c, i) => ({ name: c.name, args: rewrites[i]!.args }));
    const record = await recordCheck(sent);
    const refused = record?.refused ?? new Set<number>();
    let outcomes: Outcome[];
    if (kind === "one") {
      outcomes = refused.has(0) ? [] : [await pool.command(sent[0]!.name, sent[0]!.args, form(b64))];
    } else {
      // A refused command keeps its slot (an ECHO that writes nothing) so the answers line up.
      const runnable = sent.map((c, i) => (refused.has(i) ? { name: "ECHO", args: [""] } : c));
      outcomes = kind === "pipeline" ? await pool.pipeline(runnable, form(b64)) : await pool.transaction(runnable, form(b64));
    }
    const over = record ? await overAfter(record.near) : new Set<number>();
    return sent.map((_, i): Answer => {
      if (refused.has(i) || over.has(i)) return { error: UPSTASH_ERRORS.recordSize };
      const o = outcomes[i]!;
      if ("error" in o) return { error: upstashError(o.error) };
      const result = rewrites[i]!.reply ? (rewrites[i]!.reply!(o.result) as typeof o.result) : o.result;
      if (limits.maxReplyBytes > 0 && replyBytes(result, b64) > limits.maxReplyBytes) return { error: UPSTASH_ERRORS.requestSize };
      return { result: encodeReply(result, b64) };
    });
  }

  const routes = new Map<string, (body: unknown, b64: boolean) => Promise<Answer | Answer[]>>([
    [
      "/",
      async (body, b64) => {
        const [answer] = await run("one", [parseCommand(body)], b64);
        if ("error" in answer!) throw new Refusal(LIMIT_STATUS, answer.error);
        return answer!;
      },
    ],
    ["/pipeline", async (body, b64) => run("pipeline", readCommands(body), b64)],
    ["/multi-exec", async (body, b64) => run("transaction", readCommands(body), b64)],
  ]);

  /** The body as text; past the request limit Upstash's error, past the bridge's own read limit a 413 (what is left of it is read and dropped, so the connection stays usable). */
  function readBody(req: IncomingMessage): Promise<string> {
    const upstashCap = limits.maxRequestBytes > 0 && limits.maxRequestBytes < maxBodyBytes ? limits.maxRequestBytes : undefined;
    const cap = upstashCap ?? maxBodyBytes;
    const tooLarge = () => (upstashCap === undefined ? new Refusal(413, "request body too large") : new Refusal(LIMIT_STATUS, UPSTASH_ERRORS.requestSize));
    const declared = Number(req.headers["content-length"]);
    if (declared > cap) {
      req.resume();
      return Promise.reject(tooLarge());
    }
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let bytes = 0;
      let refused = false;
      req.on("data", (chunk: Buffer) => {
        if (refused) return;
        bytes += chunk.length;
        if (bytes > cap) {
          refused = true;
          reject(tooLarge());
          return;
        }
        chunks.push(chunk);
      });
      let ended = false;
      req.on("end", () => {
        ended = true;
        resolve(Buffer.concat(chunks, bytes).toString("utf8"));
      });
      req.on("error", reject);
      // A client gone before the end of its body: nothing runs, and the answer goes nowhere.
      req.on("close", () => {
        if (!ended) reject(new Refusal(400, "the request ended before its body"));
      });
    });
  }

  async function answer(req: IncomingMessage, path: string): Promise<{ status: number; body: unknown }> {
    const match = BEARER.exec(req.headers.authorization ?? "");
    // Comparing digests keeps the comparison constant-time whatever the lengths.
    if (!match || !timingSafeEqual(digest(match[1]!.trim()), expected)) {
      req.resume();
      return { status: 401, body: { error: "Unauthorized: missing or wrong bearer token" } };
    }
    const text = await readBody(req);
    const route = req.method === "POST" ? routes.get(path) : undefined;
    if (!route) return { status: 404, body: { error: `no such endpoint: ${req.method} ${path}` } };
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new Refusal(400, "the body must be JSON");
    }
    const b64 = String(req.headers["upstash-encoding"] ?? "").toLowerCase() === "base64";
    return { status: 200, body: await route(body, b64) };
  }

  const statusOf = (err: unknown): { status: number; body: { error: string } } => {
    if (err instanceof Refusal) return { status: err.status, body: { error: err.message } };
    if (err instanceof RedisUnavailableError) return { status: 503, body: { error: err.message } };
    if (err instanceof TransactionDiscardedError || err instanceof TypeError) return { status: 400, body: { error: err.message } };
    return { status: 500, body: { error: "internal bridge error" } };
  };

  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const started = performance.now();
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    const path = q === -1 ? url : url.slice(0, q);
    answer(req, path)
      .catch(statusOf)
      .then(({ status, body }) => {
        const text = JSON.stringify(body);
        res.writeHead(status, {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(text),
          "upstash-sync-token": String(++syncToken),
        });
        res.end(text);
        options.log?.({ method: req.method ?? "", path, status, ms: Math.round(performance.now() - started) });
      });
  };
  return Object.assign(handler, {
    setLimits(change: Partial<UpstashLimits>) {
      Object.assign(limits, change);
      if (change.commandsPerSecond !== undefined) rate.reset(limits.commandsPerSecond);
      if (change.maxRequests !== undefined) commandsRun = 0;
    },
    get limits(): Readonly<UpstashLimits> {
      return { ...limits };
    },
  });
}

/** The bridge's request handler, and a way to change its limits while it runs (a test lowering a cap, then lifting it). */
export type BridgeHandler = ((req: IncomingMessage, res: ServerResponse) => void) & {
  /** Changes some limits from the next request on (`0` turns one off); a new `maxRequests` starts its count again. */
  setLimits(change: Partial<UpstashLimits>): void;
  /** The limits in force. */
  readonly limits: Readonly<UpstashLimits>;
};
