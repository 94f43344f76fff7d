// How much one call of the queue takes on: batch sizes, page sizes and the
// bytes a bounded step may read. Defined in src/limits.ts; re-exported by
// queue.ts under these names.
export {
  ATTEMPT_HISTORY_LIMIT,
  BULK_CALL_BYTES,
  BULK_CANCEL_BATCH,
  CLAIM_CANDIDATES,
  DEAD_BATCH,
  LIST_PAGE_BYTES,
  MAX_BATCH,
  MAX_LIST_LIMIT,
} from "../limits.js";

/**
 * Most REST requests a claim makes: its candidates' read, the script, and a
 * sweep; for a shaped topic this isolate did not know to be shaped, two more
 * (a plain claim that finds it shaped and changes nothing, then the shaped
 * read and claim). ClaimResult.requests says how many it made; the tick counts
 * them against its subrequest budget.
 */
export const CLAIM_REQUESTS_MAX = 5;
