import { describe, expect, it } from "vitest";
import { createdAtOfJobId, newJobId, shardOfJobId, topicOfJobId } from "../../src/queue/ids.js";

describe("job ids name their shard", () => {
  const at = Date.UTC(2026, 0, 2, 3, 4, 5);

  it("an id of the main shard is `<topic>.<ULID>`, as before shards, and names main", () => {
    const id = newJobId("emails", at);
    expect(id).toMatch(/^emails\.[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(newJobId("emails", at, "main")).toMatch(/^emails\.[0-9A-Z]{26}$/);
    expect([shardOfJobId(id), topicOfJobId(id), createdAtOfJobId(id)]).toEqual(["main", "emails", at]);
    // An id minted before shards, byte for byte.
    expect([shardOfJobId("emails.01JD8X3Q5T4W9Y7ZC2B6N0M1KR"), topicOfJobId("emails.01JD8X3Q5T4W9Y7ZC2B6N0M1KR")]).toEqual(["main", "emails"]);
  });

  it("an id of another shard is `<shard>~<topic>.<ULID>`, and round-trips its shard, topic and time", () => {
    const id = newJobId("a.b-c_d", at, "eu-2");
    expect(id).toMatch(/^eu-2~a\.b-c_d\.[0-9A-Z]{26}$/);
    expect([shardOfJobId(id), topicOfJobId(id), createdAtOfJobId(id)]).toEqual(["eu-2", "a.b-c_d", at]);
  });

  it("an id's time is its `now`, even when a clock goes back; ids of one millisecond sort in minting order", () => {
    const later = newJobId("emails", at + 60_000);
    const earlier = newJobId("emails", at);
    expect([createdAtOfJobId(later), createdAtOfJobId(earlier)]).toEqual([at + 60_000, at]);
    const same = Array.from({ length: 50 }, () => newJobId("emails", at));
    expect(same.map(createdAtOfJobId)).toEqual(same.map(() => at));
    expect([...same].sort()).toEqual(same);
  });

  it("refuses what is not an id: a shard spelled out as main, a bad shard name, no ULID", () => {
    for (const bad of [
      "main~emails.01JD8X3Q5T4W9Y7ZC2B6N0M1KR",
      "EU~emails.01JD8X3Q5T4W9Y7ZC2B6N0M1KR",
      "~emails.01JD8X3Q5T4W9Y7ZC2B6N0M1KR",
      "b~emails",
      "b~..01JD8X3Q5T4W9Y7ZC2B6N0M1KR",
    ]) {
      expect([bad, shardOfJobId(bad), topicOfJobId(bad)]).toEqual([bad, null, null]);
    }
  });
});
