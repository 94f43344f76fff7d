import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Env } from "./env.js";
import { defineHandler, type BatchHandler, type BatchHandlerOptions, type HandlerOptions, type JobHandler } from "./handlers/registry.js";
import { app, type AppEnv } from "./producer/app.js";
import { TickChunk } from "./tick/chunk.js";
import { scheduled } from "./tick/scheduled.js";

/**
 * A topic's code handler: a function taking one job; `{ handler, concurrency }`
 * for one with options; or `{ batchHandler, batchSize }` for one that takes
 * up to `batchSize` jobs per call and returns a result per job.
 */
export type HandlerDefinition = JobHandler | ({ handler: JobHandler } & HandlerOptions) | ({ batchHandler: BatchHandler } & BatchHandlerOptions);

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
  scheduled: (controller: ScheduledController, env: Env, ctx: ExecutionContext) => Promise<void>;
  /**
   * The API as a hono app, to mount in an app of your own at its root
   * (`yours.route("/", dl.app)`): the dashboard and the API reference call
   * `/v1/…` and `/openapi.json` by absolute path.
   */
  app: OpenAPIHono<AppEnv>;
  /**
   * The entrypoint the tick runs chunks, drains and handovers in, each an
   * invocation with a subrequest budget of its own. Export it from the
   * Worker's main module under this name, and bind the Worker to itself as
   * `TICK_RUNNER` with `entrypoint = "TickChunk"`.
   */
  TickChunk: typeof TickChunk;
}

/**
 * delayline in a Worker of your own, with your handlers:
 *
 *   const dl = delayline({ handlers: { emails: async (job) => send(job.payload) } });
 *   export default dl satisfies ExportedHandler<Env>;
 *   export const TickChunk = dl.TickChunk;
 *
 * Handlers live in the isolate, so they are registered when the Worker's
 * module loads, before its first request, tick or fanned-out chunk; a second
 * call for the same topic replaces the first.
 */
export function delayline(options: DelaylineWorkerOptions = {}): DelaylineWorker {
  for (const [topic, definition] of Object.entries(options.handlers ?? {})) {
    if (typeof definition === "function") defineHandler(topic, definition);
    else if ("batchHandler" in definition) {
      const { batchHandler, ...handlerOptions } = definition;
      defineHandler(topic, batchHandler, handlerOptions);
    } else {
      const { handler, ...handlerOptions } = definition;
      defineHandler(topic, handler, handlerOptions);
    }
  }
  return { fetch: app.fetch, scheduled, app, TickChunk };
}
