/**
 * `delayline`: the Worker library. A Worker of your own calls
 * {@link delayline} with its handlers and exports what it returns (see
 * app/worker.ts, this repository's own deployment).
 */
export { delayline, type DelaylineWorker, type DelaylineWorkerOptions, type HandlerDefinition } from "./delayline.js";
export { defineHandler, removeHandler, PermanentError, RetryableError } from "./handlers/registry.js";
export type { BatchHandler, BatchHandlerOptions, BatchResult, HandlerOptions, JobContext, JobHandler } from "./handlers/registry.js";
export { TickChunk } from "./tick/chunk.js";
export type { Env } from "./env.js";
