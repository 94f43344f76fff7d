/**
 * The floor of a single enqueue on this architecture: a Worker that takes a
 * job over HTTP and stores it with the one REST request to Upstash that no
 * design of a Redis-backed queue on Workers can avoid — here one EVALSHA of a
 * script that writes the record and schedules it (HSET + ZADD). No auth, no
 * validation, no ids worth the name, no idempotency, no topic index: what is
 * left is receiving the request, reading its JSON, one outbound call through
 * the same client delayline uses (configured as its shared client is) and a
 * JSON answer. `npm run bench` measures delayline's `POST /v1/jobs` against it.
 */
import { Redis } from "@upstash/redis/cloudflare";
import { Hono } from "hono";

interface Env {
  UPSTASH_REDIS_REST_URL: string;
  UPSTASH_REDIS_REST_TOKEN: string;
}

const SCRIPT = "redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1]) return 1";
let sha: string | undefined;
let redis: Redis | undefined;

async function sha1(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-1", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

const app = new Hono<{ Bindings: Env }>();

app.post("/v1/jobs", async (c) => {
  const body = await c.req.json<{ topic?: string; payload?: unknown }>();
  const topic = typeof body.topic === "string" ? body.topic : "floor";
  redis ??= new Redis({
    url: c.env.UPSTASH_REDIS_REST_URL,
    token: c.env.UPSTASH_REDIS_REST_TOKEN,
    automaticDeserialization: false,
    responseEncoding: false,
    enableTelemetry: false,
    enableAutoPipelining: false,
    signal: () => AbortSignal.timeout(5_000),
  });
  sha ??= await sha1(SCRIPT);
  const id = `${topic}.${crypto.randomUUID()}`;
  const keys = ["floor:{bench}:jobs", `floor:{bench}:t:${topic}:due`];
  const args = [id, JSON.stringify({ payload: body.payload ?? null }), String(Date.now() + 3_600_000)];
  try {
    await redis.evalsha(sha, keys, args);
  } catch (err) {
    // After a restart or a flush the script is not cached: run it by source once.
    if (!(err instanceof Error && /NOSCRIPT/i.test(err.message))) throw err;
    await redis.eval(SCRIPT, keys, args);
  }
  return c.json({ id }, 201);
});

app.get("/healthz", (c) => c.json({ ok: true }));

export default app;
