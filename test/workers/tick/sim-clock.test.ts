import { AsyncLocalStorage } from "node:async_hooks";
import { afterEach, expect, it } from "vitest";
import { settings } from "../../../src/env.js";
import { createRedis } from "../../../src/queue/redis.js";
import { testEnv } from "../self.js";
import { seededRandom, SimClock } from "./sim-clock.js";

const T0 = 1_900_000_000_000;
const restores: Array<() => void> = [];
afterEach(() => {
  for (const r of restores.splice(0)) r();
});

it("concurrent tasks wake in virtual-time order, ties in the order they slept", async () => {
  const clock = new SimClock(T0);
  const log: string[] = [];
  const at = () => clock.now() - T0;
  void clock.spawn("a", async () => {
    await clock.sleep(100);
    log.push(`a1@${at()}`);
    await clock.sleep(100);
    log.push(`a2@${at()}`);
  });
  void clock.spawn("b", async () => {
    await clock.sleep(150);
    log.push(`b@${at()}`);
    await clock.sleep(50);
    log.push(`b2@${at()}`);
  });
  void clock.spawn("c", async () => {
    await Promise.all([clock.sleep(0), clock.sleep(-5)]);
    log.push(`c@${at()}`);
  });
  expect(await clock.run()).toBe("idle");
  // a2 and b2 are both due at 200: a asked first.
  expect(log).toEqual(["c@0", "a1@100", "b@150", "a2@200", "b2@200"]);
  expect(clock.pending.tasks).toEqual([]);
});

it("time stands still while a request is in flight and while microtasks are pending", async () => {
  const clock = new SimClock(T0);
  // A slow network: 30 real ms per request.
  const real = globalThis.fetch;
  const slow = ((...args: Parameters<typeof fetch>) => new Promise((r) => setTimeout(r, 30)).then(() => real(...args))) as typeof fetch;
  globalThis.fetch = clock.trackedFetch(slow);
  restores.push(() => (globalThis.fetch = real));
  const redis = createRedis(settings({ ...testEnv }));
  const seen: Array<[string, number]> = [];
  void clock.spawn("redis", async () => {
    await clock.sleep(10);
    for (let i = 0; i < 3; i++) await redis.ping();
    seen.push(["after 3 pings", clock.now() - T0]);
    let x = 0;
    for (let i = 0; i < 2_000; i++) x += await Promise.resolve(i);
    seen.push([`after a long microtask chain (${x})`, clock.now() - T0]);
  });
  void clock.spawn("sleeper", async () => {
    await clock.sleep(11);
    seen.push(["sleeper", clock.now() - T0]);
  });
  await clock.run();
  expect(seen).toEqual([
    ["after 3 pings", 10],
    ["after a long microtask chain (1999000)", 10],
    ["sleeper", 11],
  ]);
  expect(clock.requests).toBeGreaterThanOrEqual(3);
});

it("the Upstash client reads globalThis.fetch at call time, so install() sees every Redis request", async () => {
  const clock = new SimClock(T0);
  const redis = createRedis(settings({ ...testEnv }));
  restores.push(clock.install());
  await Promise.all([redis.ping(), redis.ping()]); // auto-pipelined: one request
  await redis.ping();
  expect(clock.requests).toBe(2);
});

it("the same schedule gives the same interleaving every time", async () => {
  const once = async () => {
    const clock = new SimClock(T0);
    const random = seededRandom(7);
    const log: string[] = [];
    for (const name of ["p", "q", "r"]) {
      void clock.spawn(name, async () => {
        for (let i = 0; i < 20; i++) {
          await clock.sleep(Math.floor(random() * 50));
          log.push(`${name}${i}@${clock.now() - T0}`);
        }
      });
    }
    await clock.run();
    return log;
  };
  const a = await once();
  expect(a).toHaveLength(60);
  expect(await once()).toEqual(a);
});

it("run() stops at a time or a condition; drainAll() reports a task stuck on something else", async () => {
  const clock = new SimClock(T0);
  let ticks = 0;
  void clock.spawn("ticker", async () => {
    for (;;) {
      await clock.sleep(1_000);
      ticks++;
      if (clock.now() > T0 + 1e9) return;
    }
  });
  expect(await clock.run({ until: T0 + 5_500 })).toBe("until");
  expect(ticks).toBe(5);
  expect(clock.now()).toBe(T0 + 5_500);
  expect(await clock.run({ stop: () => ticks >= 8 })).toBe("stopped");
  expect(clock.now()).toBe(T0 + 8_000);
  void clock.spawn("stuck", () => new Promise(() => {}));
  void clock.spawn("fails", async () => {
    await clock.sleep(1);
    throw new Error("boom");
  });
  expect(await clock.drainAll(T0 + 2e9)).toEqual(["stuck"]);
  expect(clock.errors.map((e) => [e.task, String(e.error)])).toEqual([["fails", "Error: boom"]]);
});

it("an AsyncLocalStorage context survives virtual sleeps (the harness tags runners with one)", async () => {
  const clock = new SimClock(T0);
  const als = new AsyncLocalStorage<string>();
  const seen: string[] = [];
  for (const name of ["x", "y"]) {
    void clock.spawn(name, () =>
      als.run(name, async () => {
        await clock.sleep(name === "x" ? 20 : 10);
        await Promise.all([clock.sleep(5), clock.sleep(1)]);
        seen.push(`${name}:${als.getStore()}`);
      }),
    );
  }
  await clock.run();
  expect(seen).toEqual(["y:y", "x:x"]);
});

it("a task that sleeps 0 ms forever is refused after SPIN_LIMIT wake-ups at one instant", async () => {
  const clock = new SimClock(T0);
  let woke = 0;
  void clock.spawn("spinner", async () => {
    for (;;) {
      await clock.sleep(0);
      woke++;
    }
  });
  void clock.spawn("later", () => clock.sleep(5));
  expect(await clock.run()).toBe("idle");
  expect(woke).toBe(SimClock.SPIN_LIMIT);
  expect(clock.spins).toEqual([{ at: T0, refused: 1 }]);
  expect(clock.errors.map((e) => e.task)).toEqual(["spinner"]);
  expect(clock.now()).toBe(T0 + 5);
});
