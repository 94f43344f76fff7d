import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { encodeReply, type Json, parseCommand } from "./encoding.js";
import { type Outcome, type RedisPool, RedisUnavailableError, type ReplyForm, TransactionDiscardedError } from "./pool.js";

/** Options of the Upstash-compatible REST handler. */
export interface BridgeAppOptions {
  /** Bearer token every request must carry. */
  token: string;
  /** Where commands run. */
  pool: RedisPool;
  /** Largest accepted request body. Default 32 MiB (Upstash's own limit is lower). */
  maxBodyBytes?: number;
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
 * for a malformed body or a Redis error, 503 when Redis is unreachable).
 *
 * Plain `http` rather than a web framework: this stands in for Upstash on
 * the same machine as the Worker it serves, and building a web Request and
 * Response per call (with their streams and abort signals) was a good part
 * of its CPU, which the Worker then did not get.
 */
export function createBridgeHandler(options: BridgeAppOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const { pool } = options;
  const expected = digest(options.token);
  const maxBodyBytes = options.maxBodyBytes ?? 32 * 1024 * 1024;

  // Replies base64-encoded must keep their bytes; the others are text either way.
  const form = (b64: boolean): ReplyForm => (b64 ? "bytes" : "text");

  function readCommands(body: unknown) {
    if (!Array.isArray(body) || body.length === 0) throw new Refusal(400, "the body must be a non-empty JSON array of commands");
    return body.map((command) => parseCommand(command));
  }

  /** One command's answer, or a pipeline's or transaction's answers in order. */
  type Answer = { result: Json } | { error: string };
  const each = (outcomes: Outcome[], b64: boolean): Answer[] =>
    outcomes.map((o) => ("error" in o ? { error: o.error } : { result: encodeReply(o.result, b64) }));

  const routes = new Map<string, (body: unknown, b64: boolean) => Promise<Answer | Answer[]>>([
    [
      "/",
      async (body, b64) => {
        const { name, args } = parseCommand(body);
        const outcome = await pool.command(name, args, form(b64));
        if ("error" in outcome) throw new Refusal(400, outcome.error);
        return { result: encodeReply(outcome.result, b64) };
      },
    ],
    ["/pipeline", async (body, b64) => each(await pool.pipeline(readCommands(body), form(b64)), b64)],
    ["/multi-exec", async (body, b64) => each(await pool.transaction(readCommands(body), form(b64)), b64)],
  ]);

  const tooLarge = () => new Refusal(413, "request body too large");

  /** The body as text, or a 413 past the limit (what is left of it is read and dropped, so the connection stays usable). */
  function readBody(req: IncomingMessage): Promise<string> {
    const declared = Number(req.headers["content-length"]);
    if (declared > maxBodyBytes) {
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
        if (bytes > maxBodyBytes) {
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

  return (req, res) => {
    const started = performance.now();
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    const path = q === -1 ? url : url.slice(0, q);
    answer(req, path)
      .catch(statusOf)
      .then(({ status, body }) => {
        const text = JSON.stringify(body);
        res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
        res.end(text);
        options.log?.({ method: req.method ?? "", path, status, ms: Math.round(performance.now() - started) });
      });
  };
}
