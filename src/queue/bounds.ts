// How much one call of the queue takes on: batch sizes, page sizes and the
// bytes a bounded step may read. Re-exported by queue.ts, under these names.

/** Largest batch for enqueue, claim and settle: keeps every Lua unpack() well inside its limits. */
export const MAX_BATCH = 1_000;

/** Most jobs one listing page holds. */
export const MAX_LIST_LIMIT = 1_000;

/** With payloads, a listing page ends once its records pass this many bytes (it always holds one job). */
export const LIST_PAGE_BYTES = 1_048_576;

/** Most jobs one call of a bulk cancel takes: about 2 ms of Redis time for small payloads (test/workers/queue/bounded-calls.test.ts). */
export const BULK_CANCEL_BATCH = 250;

/** A bulk cancel's call stops once the records it read pass this many bytes, so a call stays short whatever the payloads. */
export const BULK_CALL_BYTES = 1_048_576;

/** Most dead letters one call of a replay, purge or migration looks at: about 3 ms of Redis time for small payloads (bounded-calls.test.ts). */
export const DEAD_BATCH = 250;

/** How many attempts a job's history keeps, the latest (HISTORY_LIMIT in lua/lib/records.lua). */
export const ATTEMPT_HISTORY_LIMIT = 25;

/** The error text kept with an attempt: at most this many bytes of UTF-8. */
export const ATTEMPT_ERROR_BYTES = 1_024;
