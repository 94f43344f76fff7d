import { describe, expect, it } from "vitest";
import { placementWeight, placeTopic, planShardAdd } from "../../src/queue/placement.js";

const topics = Array.from({ length: 10_000 }, (_, i) => `topic-${i}`);

describe("placement of topics over shards", () => {
  it("is the same in every run: the hash is fixed (these values were computed once and must never change)", () => {
    expect(placementWeight("main", "emails")).toBe(placementWeight("main", "emails"));
    expect([placementWeight("main", "emails"), placementWeight("b", "emails"), placementWeight("main", "")]).toEqual(GOLDEN_WEIGHTS);
    expect(["emails", "billing", "topic-1", "topic-2"].map((t) => placeTopic(t, ["main", "b", "c"]))).toEqual(GOLDEN_PLACES);
  });

  it("does not depend on the order the shards are listed in", () => {
    for (const t of topics.slice(0, 500)) expect(placeTopic(t, ["c", "main", "b"])).toBe(placeTopic(t, ["main", "b", "c"]));
  });

  it("spreads topics about evenly", () => {
    const counts = new Map<string, number>();
    for (const t of topics) {
      const s = placeTopic(t, ["main", "b", "c"]);
      counts.set(s, (counts.get(s) ?? 0) + 1);
    }
    for (const n of counts.values()) expect(Math.abs(n - 10_000 / 3)).toBeLessThan(300);
  });

  it("adding a fourth shard to three moves about a quarter of the topics, each to the new shard", () => {
    let moved = 0;
    for (const t of topics) {
      const before = placeTopic(t, ["main", "b", "c"]);
      const after = placeTopic(t, ["main", "b", "c", "d"]);
      if (before !== after) {
        moved++;
        expect(after).toBe("d");
      }
    }
    // Expected 1/4 (2,500); a binomial's standard deviation here is ~43.
    expect(moved).toBeGreaterThan(2_300);
    expect(moved).toBeLessThan(2_700);
  });

  it("a pin wins over hashing, and names the shard even when it would not rank highest", () => {
    const t = topics.find((x) => placeTopic(x, ["main", "b"]) === "b")!;
    expect(placeTopic(t, ["main", "b"], { [t]: "main" })).toBe("main");
    expect(placeTopic(t, ["main"], { [t]: "main" })).toBe("main");
  });

  it("a derived topic lives with its root, pinned or hashed", () => {
    const shards = ["main", "b", "c"];
    for (const t of topics.slice(0, 200)) {
      expect(placeTopic(`${t}@billing`, shards)).toBe(placeTopic(t, shards));
      expect(placeTopic(`${t}@_callbacks`, shards, { [t]: "c" })).toBe("c");
    }
  });

  it("the plan of adding a shard lists exactly the topics that would move, and its pins keep every one where it is", () => {
    const plan = planShardAdd(topics, ["main", "b", "c"], "d", { "topic-0": "b" });
    expect(plan.moves.length).toBe(
      topics.filter((t) => placeTopic(t, ["main", "b", "c"], { "topic-0": "b" }) !== placeTopic(t, ["main", "b", "c", "d"], { "topic-0": "b" })).length,
    );
    expect(plan.moves.every((m) => m.to === "d")).toBe(true);
    expect(plan.pins["topic-0"]).toBe("b");
    for (const t of topics) expect(placeTopic(t, ["main", "b", "c", "d"], plan.pins)).toBe(placeTopic(t, ["main", "b", "c"], { "topic-0": "b" }));
  });
});

// Checked against an independent FNV-1a + fmix32 in Python.
const GOLDEN_WEIGHTS = [870191169, 4009496, 3185920672];
const GOLDEN_PLACES = ["main", "b", "main", "c"];
