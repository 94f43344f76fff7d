import { createHash, timingSafeEqual } from "node:crypto";
import { Hono, type Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { encodeReply, parseCommand } from "./encoding.js";
import { type RedisPool, RedisUnavailableError, type ReplyForm, TransactionDiscardedError } from "./pool.js";

/** Options of the Upstash-compatible REST app. */
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

/**
 * The Upstash REST protocol over a real Redis: `POST /` runs one command,
 * `POST /pipeline` runs several in order, `POST /multi-exec` runs them as one
 * transaction. Replies are base64 when the client asks with `Upstash-Encoding`.
 */
export function createBridgeApp(options: BridgeAppOptions): Hono {
  const { pool } = options;
  const expected = digest(options.token);
  const app = new Hono();

  app.use(async (c, next) => {
    const started = performance.now();
    await next();
    options.log?.({ method: c.req.method, path: c.req.path, status: c.res.status, ms: Math.round(performance.now() - started) });
  });

  app.use(async (c, next) => {
    const header = c.req.header("authorization") ?? "";
    const match = /^Bearer\s+(.+)$/i.exec(header);
    // Comparing digests keeps the comparison constant-time whatever the lengths.
    if (!match || !timingSafeEqual(digest(match[1]!.trim()), expected)) {
      return c.json({ error: "Unauthorized: missing or wrong bearer token" }, 401);
    }
    await next();
  });

  app.use(
    bodyLimit({
      maxSize: options.maxBodyBytes ?? 32 * 1024 * 1024,
      onError: (c) => c.json({ error: "request body too large" }, 413),
    }),
  );

  const base64 = (c: Context) => (c.req.header("upstash-encoding") ?? "").toLowerCase() === "base64";
  // Replies base64-encoded must keep their bytes; the others are text either way.
  const form = (b64: boolean): ReplyForm => (b64 ? "bytes" : "text");

  async function readJson(c: Context): Promise<unknown> {
    const text = await c.req.text();
    try {
      return JSON.parse(text);
    } catch {
      throw new BadRequest("the body must be JSON");
    }
  }

  function readCommands(body: unknown) {
    if (!Array.isArray(body) || body.length === 0) {
      throw new BadRequest("the body must be a non-empty JSON array of commands");
    }
    return body.map((command) => parseCommand(command));
  }

  app.post("/", async (c) => {
    const { name, args } = parseCommand(await readJson(c));
    const b64 = base64(c);
    const outcome = await pool.command(name, args, form(b64));
    if ("error" in outcome) return c.json({ error: outcome.error }, 400);
    return c.json({ result: encodeReply(outcome.result, b64) });
  });

  app.post("/pipeline", async (c) => {
    const b64 = base64(c);
    const outcomes = await pool.pipeline(readCommands(await readJson(c)), form(b64));
    return c.json(outcomes.map((o) => ("error" in o ? { error: o.error } : { result: encodeReply(o.result, b64) })));
  });

  app.post("/multi-exec", async (c) => {
    const b64 = base64(c);
    const outcomes = await pool.transaction(readCommands(await readJson(c)), form(b64));
    return c.json(outcomes.map((o) => ("error" in o ? { error: o.error } : { result: encodeReply(o.result, b64) })));
  });

  app.notFound((c) => c.json({ error: `no such endpoint: ${c.req.method} ${c.req.path}` }, 404));

  app.onError((err, c) => {
    if (err instanceof RedisUnavailableError) return c.json({ error: err.message }, 503);
    if (err instanceof TransactionDiscardedError) return c.json({ error: err.message }, 400);
    if (err instanceof BadRequest || err instanceof TypeError) return c.json({ error: err.message }, 400);
    return c.json({ error: "internal bridge error" }, 500);
  });

  return app;
}

class BadRequest extends Error {}
