/**
 * Where a deployment registers its code handlers; src/index.ts imports this
 * module so they are in place before the first tick. Topics without a code
 * handler are delivered by the built-in http handler (to the job's target or
 * the topic's url).
 *
 *   import { defineHandler, RetryableError, PermanentError } from "./registry.js";
 *
 *   defineHandler("emails", async (job) => {
 *     const res = await job.fetch("https://api.mail.example/send", { method: "POST", body: JSON.stringify(job.payload) });
 *     if (res.status === 429) throw new RetryableError("rate limited", 30_000);
 *     if (!res.ok) throw new PermanentError(`mail API said ${res.status}`);
 *   });
 *
 *   defineHandler("analytics", async (jobs) => report(jobs.map((j) => j.payload)), { batchSize: 128 });
 */
export { defineHandler, removeHandler, PermanentError, RetryableError } from "./registry.js";
export type { BatchHandler, BatchResult, HandlerOptions, JobContext, JobHandler } from "./registry.js";
