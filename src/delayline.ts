import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Env } from "./env.js";
import { Handlers, type HandlerDefinition } from "./handlers/registry.js";
import { createApp, type AppEnv } from "./producer/app.js";
import { createTickChunk, type TickChunk } from "./tick/chunk.js";
import { createScheduled, type Scheduled } from "./tick/scheduled.js";
import { TickAlarm } from "./tick/alarm-object.js";

/** Options of {@link delayline}. */
export interface DelaylineWorkerOptions {
  /**
   * Code handlers by topic. A topic without one is delivered by the built-in
   * http handler, to the job's target or the topic's url. Default: none.
   */
  handlers?: Record<string, HandlerDefinition>;
}

/** A deployment of delayline: the Worker's handlers, its API as a hono app, and the entrypoint its tick fans out to. */
export interface DelaylineWorker {
  /** The HTTP API, /docs and /dashboard. */
  fetch: (request: Request, env: Env, ctx: ExecutionContext) => Response | Promise<Response>;
  /** The cron tick: give the Worker a `* * * * *` trigger. */
  scheduled: Scheduled;
  /**
   * The API as a hono app, to mount in an app of your own at its root
   * (`yours.route("/", dl.app)`): the dashboard and the API reference call
   * `/v1/…` and `/openapi.json` by absolute path. Each delayline() call makes
   * its own.
   */
  app: OpenAPIHono<AppEnv>;
  /**
   * The entrypoint the tick runs chunks, drains and handovers in, each an
   * invocation with a subrequest budget of its own, with this deployment's
   * handlers. Export it from the Worker's main module under this name, and
   * bind the Worker to itself as `TICK_RUNNER` with `entrypoint = "TickChunk"`.
   */
  TickChunk: new (
    ctx: ExecutionContext,
    env: Env,
  ) => TickChunk;
  /**
   * The tick's wake alarm, a Durable Object class: with it bound as
   * `TICK_ALARM` (and exported under this name), the tick ends its loop
   * while nothing is due before the next cron, the cron only looks (one
   * request), and producers arm the alarm for jobs due before that look.
   * Without the binding the loop sleeps through its minute, looking every
   * TICK_IDLE_PEEK_MS. It holds no handlers: it starts the tick through
   * TICK_RUNNER.
   */
  TickAlarm: typeof TickAlarm;
  /**
   * This deployment's code handlers: the `handlers` option's, and what
   * `handlers.define(topic, definition)` and `handlers.remove(topic)` change
   * later. They live in the isolate, so a change made after the module loaded
   * holds only in the isolate that made it (the next chunk it runs of that
   * topic uses it); give every isolate the same handlers by defining them
   * when the module loads.
   */
  handlers: Handlers;
}

/**
 * delayline in a Worker of your own, with your handlers:
 *
 *   const dl = delayline({ handlers: { emails: async (job) => send(job.payload) } });
 *   export default dl satisfies ExportedHandler<Env>;
 *   export const TickChunk = dl.TickChunk;
 *   export const TickAlarm = dl.TickAlarm;
 *
 * Each call is a deployment of its own: its handlers, app, tick and
 * TickChunk class, shared with no other call in the isolate. A second
 * definition for the same topic replaces the first.
 */
export function delayline(options: DelaylineWorkerOptions = {}): DelaylineWorker {
  const handlers = new Handlers(options.handlers);
  const app = createApp();
  return { fetch: app.fetch, scheduled: createScheduled(handlers), app, TickChunk: createTickChunk(handlers), TickAlarm, handlers };
}
