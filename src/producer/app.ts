import { Hono } from "hono";
import { settings, SettingsError, type Env, type Settings } from "../env.js";
import { createRedis, RedisUnavailableError } from "../queue/redis.js";
import { lastTickAt, redisIsUp } from "../queue/health.js";
import { problem } from "./problem.js";

export type AppEnv = { Bindings: Env; Variables: { settings: Settings } };

/** The producer: delayline's HTTP API. */
export const app = new Hono<AppEnv>();

app.use(async (c, next) => {
  // Parsing here makes a misconfigured deployment fail on its first request,
  // naming the setting, rather than somewhere deep in a handler.
  c.set("settings", settings(c.env));
  await next();
});

app.get("/healthz", async (c) => {
  const s = c.get("settings");
  const redis = createRedis(s);
  const up = await redisIsUp(redis);
  if (!up) return c.json({ ok: false, redis: "down" as const, lastTickAt: null, tickAgeMs: null }, 503);
  const last = await lastTickAt(redis, s.prefix).catch(() => null);
  return c.json({ ok: true, redis: "up" as const, lastTickAt: last, tickAgeMs: last === null ? null : Date.now() - last });
});

app.notFound((c) => problem(404, `no route for ${c.req.method} ${c.req.path}`));

app.onError((err, c) => {
  if (err instanceof SettingsError) {
    console.error(JSON.stringify({ level: "error", msg: err.message }));
    return problem(500, err.message, { type: "urn:delayline:settings" });
  }
  if (err instanceof RedisUnavailableError) {
    return problem(503, `${err.message}. Nothing was changed; retry later (with an Idempotency-Key a retry never duplicates).`, {
      headers: { "retry-after": "1" },
    });
  }
  console.error(JSON.stringify({ level: "error", msg: "unhandled error", path: c.req.path, error: String(err) }));
  return problem(500, "internal error");
});
