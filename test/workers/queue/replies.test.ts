/**
 * The claim's hot path reads job records and its reply without zod (which in
 * workerd walks a schema cell by cell): the hand check must accept exactly
 * the records the schema returns unchanged, hand everything else to the
 * schema, and refuse a malformed reply as the schema would.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { replies } from "../../../src/queue/replies.js";
import { jobRecordSchema, parseRecord } from "../../../src/queue/types.js";

/** The schema's verdict on a record's JSON text: what it returns, or that it throws. */
function bySchema(text: string): { ok: true; value: unknown } | { ok: false } {
  const r = jobRecordSchema.safeParse(JSON.parse(text));
  return r.success ? { ok: true, value: r.data } : { ok: false };
}

function byParseRecord(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: parseRecord(text, "t.01ARZ3NDEKTSV4RRFFQ69G5FAV") };
  } catch {
    return { ok: false };
  }
}

/** Anything JSON can hold, for a field to be given the wrong type. */
const junk = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double(),
  fc.string(),
  fc.array(fc.integer(), { maxLength: 2 }),
  fc.dictionary(fc.string(), fc.string(), { maxKeys: 2 }),
);
const maybe = <T>(arb: fc.Arbitrary<T>) =>
  fc.option(fc.oneof({ weight: 4, arbitrary: arb as fc.Arbitrary<unknown> }, { weight: 1, arbitrary: junk }), { nil: undefined });

/** Records as enqueue writes them, with now and then a field of the wrong type, a number out of range or a key the schema drops. */
const record = fc
  .record(
    {
      payload: fc.jsonValue(),
      createdAt: fc.oneof({ weight: 8, arbitrary: fc.integer({ min: 0, max: 2 ** 42 }) }, { weight: 1, arbitrary: junk }),
      maxAttempts: maybe(fc.oneof(fc.integer({ min: 1, max: 100 }), fc.constant(1.5), fc.constant(2 ** 60))),
      timeoutMs: maybe(fc.integer({ min: 1, max: 900_000 })),
      idempotencyKey: maybe(fc.string()),
      scheduleId: maybe(fc.string()),
      scheduledFor: maybe(fc.integer({ min: 0, max: 2 ** 42 })),
      backoff: maybe(fc.constantFrom({ type: "fixed", delay: 1_000 }, { type: "schedule", delays: [1, 2] }, { type: "fixed" }, { type: "linear", delay: 1 })),
      target: maybe(
        fc.record(
          {
            url: fc.oneof({ weight: 6, arbitrary: fc.webUrl() }, { weight: 1, arbitrary: junk }),
            method: maybe(fc.constantFrom("POST", "PUT", "GET")),
            headers: maybe(
              fc.dictionary(fc.string({ minLength: 1 }), fc.oneof({ weight: 6, arbitrary: fc.string() }, { weight: 1, arbitrary: junk }), { maxKeys: 3 }),
            ),
            extra: maybe(fc.string()),
          },
          { requiredKeys: ["url"] },
        ),
      ),
      // An upserted job's (lua/upsert.lua).
      jobKey: maybe(fc.string()),
      replacements: maybe(fc.oneof(fc.integer({ min: 0, max: 1_000 }), fc.constant(0.5))),
      // Records written before ids and topics were left out carry them; the schema drops them.
      id: maybe(fc.string()),
      topic: maybe(fc.string()),
    },
    { requiredKeys: ["createdAt"] },
  )
  .map((r) => JSON.stringify(r));

describe("job records on the claim's path", () => {
  it("parseRecord gives what the schema gives, or throws where it throws, for 2,000 generated records", () => {
    fc.assert(
      fc.property(record, (text) => {
        expect(byParseRecord(text)).toEqual(bySchema(text));
      }),
      { numRuns: 2_000 },
    );
  });

  it("parseRecord refuses what is not a record object at all, as the schema does", () => {
    for (const text of ["null", "[]", "42", '"x"', "{}", '{"createdAt":"1"}', '{"createdAt":1e400}', '{"__proto__":{"createdAt":1},"createdAt":1}']) {
      expect(byParseRecord(text), text).toEqual(bySchema(text));
    }
  });
});

/** A claim reply's twelve cells before the jobs: nothing due next, nothing reaped, active, no rate wait, nothing held, no look, lease deadline 9, no conf, nothing to sweep, no orphans. */
const HEAD = [-1, 0, 0, 0, 0, 0, -1, 9, [], [], [], []];
const RECORD = JSON.stringify({ payload: { n: 1 }, createdAt: 1 });

describe("claim and settle replies", () => {
  it("a claim's jobs are decoded with their attempt, due time (as Lua's number or a score's string) and record", () => {
    const reply = replies.claim.parse([...HEAD, "t:1", 1, "1700000000000", RECORD, "t:2", 3, 1_700_000_000_001, RECORD]);
    expect(reply.jobs).toEqual([
      { id: "t:1", attempt: 1, dueAt: 1_700_000_000_000, record: { payload: { n: 1 }, createdAt: 1 } },
      { id: "t:2", attempt: 3, dueAt: 1_700_000_000_001, record: { payload: { n: 1 }, createdAt: 1 } },
    ]);
    expect(reply).toMatchObject({ nextDueAt: null, paused: false, leaseDeadline: 9, heldBy: null, conf: {} });
  });

  it("a claim reply that breaks its contract is refused, not half read", () => {
    const bad: unknown[][] = [
      [...HEAD, "t:1", 1, "1700000000000"],
      [...HEAD, 7, 1, "1", RECORD],
      [...HEAD, "t:1", 1.5, "1", RECORD],
      [...HEAD, "t:1", "1", "1", RECORD],
      [...HEAD, "t:1", 1, "soon", RECORD],
      [...HEAD, "t:1", 1, "1", null],
      [...HEAD, "t:1", 1, "1", '{"payload":1,"createdAt":"soon"}'],
      [...HEAD.slice(0, 8), "t:1", 1, "1", RECORD],
      [...HEAD.slice(0, 11), "t:1", 1, "1", RECORD],
    ];
    for (const reply of bad) expect(() => replies.claim.parse(reply), JSON.stringify(reply)).toThrow();
    expect(() => replies.claim.parse("OK")).toThrow();
  });

  it("a settle reply is one code per outcome sent: applied or stale, nothing else", () => {
    expect(replies.settle.parse([1, 0, 1], 3)).toEqual([true, false, true]);
    expect(() => replies.settle.parse([1, 0], 3)).toThrow(/3 outcomes/);
    expect(() => replies.settle.parse([1, 2], 2)).toThrow(/a code/);
    expect(() => replies.settle.parse(["1"], 1)).toThrow(/a code/);
  });
});
