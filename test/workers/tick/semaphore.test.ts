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
