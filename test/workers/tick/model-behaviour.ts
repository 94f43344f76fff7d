/**
 * What a handler (or the pull consumer) does with one attempt in a model
 * scenario, and its arbitrary (model.ts and model-flow.ts draw them).
 */
import fc from "fast-check";

/** What a handler (or the pull consumer) does with one attempt: after `ms` virtual ms, succeed or fail. */
export interface Behaviour {
  /**
   * ok; retry: RetryableError (with `after`: its retry-after); error: a plain Error (retried by policy); permanent: PermanentError;
   * hang (shaped topics' jobs): never settled — the invocation running it died — so its lease expires and a claim reaps it.
   */
  k: "ok" | "retry" | "error" | "permanent" | "hang";
  ms: number;
  after?: number;
}

/** Attempts of the given kinds, drawn by their weights (in this order), each taking 0 ms or up to 3 s. */
export function behaviourArb(weights: Array<[Behaviour["k"], number]>): fc.Arbitrary<Behaviour> {
  return fc
    .record({
      k: fc.oneof(...weights.map(([k, weight]) => ({ weight, arbitrary: fc.constant(k) }))),
      ms: fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 2, arbitrary: fc.integer({ min: 1, max: 3_000 }) }),
      after: fc.option(fc.integer({ min: 0, max: 5_000 }), { nil: undefined, freq: 3 }),
    })
    .map(({ k, ms, after }) => (k === "retry" && after !== undefined ? { k, ms, after } : { k, ms }));
}
