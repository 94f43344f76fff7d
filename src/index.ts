/**
 * `delayline`: the Worker library. A Worker of your own calls
 * {@link delayline} with its handlers and exports what it returns (see
 * app/worker.ts, this repository's own deployment).
 */
export { delayline, type DelaylineWorker, type DelaylineWorkerOptions } from "./delayline.js";
export { PermanentError, RetryableError } from "./handlers/registry.js";
export type {
  BatchHandler,
  BatchHandlerOptions,
  BatchResult,
  HandlerDefinition,
  Handlers,
  HandlerOptions,
  JobContext,
  JobHandler,
} from "./handlers/registry.js";
export type { TickChunk } from "./tick/chunk.js";
export type { Env } from "./env.js";
