import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { parseDuration } from "../../src/queue/policy/duration.js";
import { backoffDelay, decideAfterFailure, DEFAULT_BACKOFF, MAX_RETRY_AFTER_MS, normalizeBackoff } from "../../src/queue/policy/backoff.js";

describe("parseDuration", () => {
  it.each([
    ["90s", 90_000],
    ["5m", 300_000],
    ["1h30m", 5_400_000],
    ["500ms", 500],
    ["1.5s", 1_500],
    ["2d", 172_800_000],
    ["1h0m5s", 3_605_000],
    ["250", 250],
    [0, 0],
    [1234, 1234],
  ])("%s → %d ms", (input, ms) => {
    expect(parseDuration(input)).toBe(ms);
  });

  it.each(["", "5", "s", "5x", "1m1h", "5s5s", "-5s", "5 s", "1e3s", "Infinitys"].filter((s) => s !== "5"))("rejects %j", (input) => {
    expect(() => parseDuration(input)).toThrow(RangeError);
  });

  it("rejects negative and non-finite numbers", () => {
    for (const n of [-1, Number.NaN, Number.POSITIVE_INFINITY]) expect(() => parseDuration(n)).toThrow(RangeError);
  });

  it("round-trips any combination of units", () => {
    fc.assert(
      fc.property(fc.nat(99), fc.nat(59), fc.nat(59), fc.nat(999), (h, m, s, ms) => {
        expect(parseDuration(`${h}h${m}m${s}s${ms}ms`)).toBe(((h * 60 + m) * 60 + s) * 1000 + ms);
      }),
    );
  });
});

describe("backoff", () => {
  it("fixed waits the same every time", () => {
    const p = normalizeBackoff({ type: "fixed", delay: "5s" });
    expect([1, 2, 7].map((a) => backoffDelay(p, a, 0.5))).toEqual([5_000, 5_000, 5_000]);
  });

  it("schedule follows the list and repeats its last value", () => {
    const p = normalizeBackoff({ type: "schedule", delays: ["5s", "30s", "60s"] });
    expect([1, 2, 3, 4, 10].map((a) => backoffDelay(p, a, 0.5))).toEqual([5_000, 30_000, 60_000, 60_000, 60_000]);
  });

  it("exponential defaults to 1 s base, factor 2, 1 h cap, full jitter", () => {
    expect(normalizeBackoff({ type: "exponential" })).toEqual(DEFAULT_BACKOFF);
    const p = normalizeBackoff({ type: "exponential", jitter: false });
    expect([1, 2, 3, 4].map((a) => backoffDelay(p, a, 0))).toEqual([1_000, 2_000, 4_000, 8_000]);
    expect(backoffDelay(p, 30, 0)).toBe(3_600_000);
  });

  it("full jitter picks uniformly from [0, capped delay]", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 40 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (attempt, r) => {
        const d = backoffDelay(DEFAULT_BACKOFF, attempt, r);
        const cap = Math.min(1_000 * 2 ** (attempt - 1), 3_600_000);
        expect(d).toBeGreaterThanOrEqual(0);
        expect(d).toBeLessThanOrEqual(cap);
        expect(d).toBe(Math.floor(r * cap));
      }),
    );
  });

  it("rejects nonsense", () => {
    expect(() => normalizeBackoff({ type: "schedule", delays: [] })).toThrow(RangeError);
    expect(() => normalizeBackoff({ type: "exponential", factor: 0.5 })).toThrow(RangeError);
    expect(() => normalizeBackoff({ type: "fixed", delay: "soon" })).toThrow(RangeError);
  });
});

describe("decideAfterFailure", () => {
  const base = { maxAttempts: 3, backoff: normalizeBackoff({ type: "fixed", delay: "10s" }), now: 1_000_000 };

  it("retries by policy while attempts remain, then gives up", () => {
    expect(decideAfterFailure({ ...base, attempt: 1 })).toEqual({ kind: "retry", at: 1_010_000 });
    expect(decideAfterFailure({ ...base, attempt: 2 })).toEqual({ kind: "retry", at: 1_010_000 });
    expect(decideAfterFailure({ ...base, attempt: 3 })).toEqual({ kind: "dead" });
  });

  it("lets a handler's retry-after override the policy, capped", () => {
    expect(decideAfterFailure({ ...base, attempt: 1, retryAfterMs: 250 })).toEqual({ kind: "retry", at: 1_000_250 });
    expect(decideAfterFailure({ ...base, attempt: 1, retryAfterMs: 10 * MAX_RETRY_AFTER_MS })).toEqual({
      kind: "retry",
      at: 1_000_000 + MAX_RETRY_AFTER_MS,
    });
  });

  it("sends permanent failures straight to dead", () => {
    expect(decideAfterFailure({ ...base, attempt: 1, permanent: true })).toEqual({ kind: "dead" });
  });
});
