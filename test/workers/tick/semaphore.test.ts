import { describe, expect, it } from "vitest";
import { Semaphore } from "../../../src/tick/budget.js";

describe("the tick's semaphore", () => {
  it("gives a free slot at once, without a promise, and makes the next taker wait", () => {
    const s = new Semaphore(2);
    expect(s.acquire()).toBeUndefined();
    expect(s.acquire()).toBeUndefined();
    expect(s.acquire()).toBeInstanceOf(Promise);
    expect(s.idle).toBe(false);
  });

  it("hands a slot given back to the longest waiter, before anyone taking one synchronously", async () => {
    const s = new Semaphore(1);
    const order: string[] = [];
    expect(s.acquire()).toBeUndefined();
    const first = s.acquire()!.then(() => order.push("first"));
    const second = s.acquire()!.then(() => order.push("second"));
    s.release();
    // The slot went to `first`: a taker now waits behind `second`.
    const late = s.acquire();
    expect(late).toBeInstanceOf(Promise);
    void late!.then(() => order.push("late"));
    await first;
    s.release();
    await second;
    s.release();
    await late;
    expect(order).toEqual(["first", "second", "late"]);
    s.release();
    expect(s.idle).toBe(true);
  });

  it("hands slots given back to waiting topics by weight when their weights differ, and in turn when they do not", async () => {
    const s = new Semaphore(4);
    const heavy = { topic: "heavy", weight: 3 };
    const light = { topic: "light", weight: 1 };
    const got: string[] = [];
    const wait = (who: typeof heavy) => void s.acquire(who)!.then(() => got.push(who.topic));
    for (let i = 0; i < 4; i++) expect(s.acquire(i % 2 === 0 ? heavy : light)).toBeUndefined();
    // Light waits first, heavy after: by weight, not by arrival.
    for (let i = 0; i < 8; i++) wait(light);
    for (let i = 0; i < 8; i++) wait(heavy);
    // Each handler that ends gives its slot back: the slots settle 3:1 while both wait.
    const holders = [heavy, light, heavy, light];
    for (let i = 0; i < 8; i++) {
      s.release(holders.shift()!);
      await Promise.resolve();
      holders.push(got.at(-1) === "heavy" ? heavy : light);
    }
    expect(holders.filter((h) => h === heavy)).toHaveLength(3);
    expect(got.slice(0, 3)).toEqual(["heavy", "heavy", "heavy"]);
    // Of one weight, the longest waiter first, as without weights.
    const same = new Semaphore(1);
    const order: string[] = [];
    expect(same.acquire({ topic: "a", weight: 2 })).toBeUndefined();
    const b = same.acquire({ topic: "b", weight: 2 })!.then(() => order.push("b"));
    const a = same.acquire({ topic: "a", weight: 2 })!.then(() => order.push("a"));
    same.release({ topic: "a", weight: 2 });
    await b;
    same.release({ topic: "b", weight: 2 });
    await a;
    expect(order).toEqual(["b", "a"]);
  });

  it("run holds a slot while its work runs, and gives it back when the work throws", async () => {
    const s = new Semaphore(1);
    await expect(s.run(async () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    expect(s.idle).toBe(true);
    let inside = 0;
    let most = 0;
    await Promise.all(
      Array.from({ length: 5 }, () =>
        s.run(async () => {
          most = Math.max(most, ++inside);
          await Promise.resolve();
          inside--;
        }),
      ),
    );
    expect(most).toBe(1);
    expect(s.idle).toBe(true);
  });
});
