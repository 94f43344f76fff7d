import { expect, it } from "vitest";
import { settings } from "../../../src/env.js";
import { queueFromSettings } from "../../../src/queue/from-settings.js";
import { freshEnv, tickOnce } from "../fixtures.js";
import { VirtualClock } from "./helpers.js";

const UNREACHABLE = { UPSTASH_REDIS_REST_URL: "http://127.0.0.1:9", REDIS_TIMEOUT_MS: "500" };

it("with Redis unreachable at start, the tick keeps trying for its window instead of failing", async () => {
  const s = settings(freshEnv("out", UNREACHABLE));
  const lines: Array<Record<string, unknown>> = [];
  const report = await tickOnce(s, {
    scheduledTime: 1_900_000_000_000,
    clock: new VirtualClock(1_900_000_000_000),
    windowMs: 12_000,
    log: (l) => lines.push(l),
  });
  expect(report.ended).toBe("not-acquired");
  // Waits of 1, 2, 4 and 5 s fill the 12 s window: four failed tries and a last one.
  expect(lines.filter((l) => l.msg === "Redis unreachable; the tick waits and retries").map((l) => l.retryInMs)).toEqual([1_000, 2_000, 4_000, 5_000]);
});

it("when Redis goes away under a running loop, the loop waits and retries until its window ends", async () => {
  const good = settings(freshEnv("out"));
  const bad = settings(freshEnv("out", { ...UNREACHABLE, DELAYLINE_PREFIX: good.prefix }));
  const lines: Array<Record<string, unknown>> = [];
  // The lock still answers; the queue's calls do not.
  const report = await tickOnce(good, {
    queue: queueFromSettings(bad),
    scheduledTime: 1_900_000_000_000,
    clock: new VirtualClock(1_900_000_000_000),
    windowMs: 20_000,
    log: (l) => lines.push(l),
  });
  expect(report.ended).toBe("window");
  expect(lines.filter((l) => l.msg === "Redis unreachable; the tick waits and retries").length).toBeGreaterThanOrEqual(4);
});
