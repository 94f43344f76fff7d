/**
 * Retry-After as RFC 9110 has it: delay-seconds or an HTTP-date in any of its
 * three forms, in UTC. One parser serves the client (how long it waits before
 * a retry) and the http handler (when a failed delivery is tried again).
 */
import { describe, expect, it } from "vitest";
import { retryAfterMs } from "../../src/protocol/retry-after.js";

const now = Date.UTC(2026, 4, 1, 12, 0, 0);

describe("retryAfterMs", () => {
  it("reads delay-seconds, around optional white space", () => {
    expect(retryAfterMs("0", now)).toBe(0);
    expect(retryAfterMs("120", now)).toBe(120_000);
    expect(retryAfterMs(" 5 ", now)).toBe(5_000);
  });

  it("reads each HTTP-date form as UTC, a date past as 0", () => {
    expect(retryAfterMs("Fri, 01 May 2026 12:02:00 GMT", now)).toBe(120_000);
    expect(retryAfterMs("Friday, 01-May-26 12:00:30 GMT", now)).toBe(30_000);
    expect(retryAfterMs("Fri May  1 12:00:05 2026", now)).toBe(5_000);
    expect(retryAfterMs("Fri May 11 12:00:00 2026", now)).toBe(10 * 86_400_000);
    expect(retryAfterMs("Sun, 06 Nov 1994 08:49:37 GMT", now)).toBe(0);
  });

  it("reads an RFC 850 two-digit year as at most 50 years ahead", () => {
    expect(retryAfterMs("Sunday, 06-Nov-94 08:49:37 GMT", now)).toBe(0);
    expect(retryAfterMs("Monday, 01-May-76 12:00:00 GMT", now)).toBe(Date.UTC(2076, 4, 1, 12) - now);
  });

  it("is null without a header, or for one in neither form (which Date.parse would read as a date in 2001)", () => {
    for (const header of [
      null,
      undefined,
      "",
      "1.5",
      "-1",
      "+5",
      "1e3",
      "2030-01-01",
      "soon",
      "Fri, 1 May 2026 12:02:00 GMT",
      "Fri, 01 May 2026 12:02:00 UTC",
    ]) {
      expect(retryAfterMs(header, now), String(header)).toBeNull();
    }
  });

  it("is null for a date that names no instant", () => {
    expect(retryAfterMs("Tue, 31 Feb 2026 12:00:00 GMT", now)).toBeNull();
    expect(retryAfterMs("Fri, 01 May 2026 24:00:00 GMT", now)).toBeNull();
  });
});
