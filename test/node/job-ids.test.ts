import { describe, expect, it } from "vitest";
import {
  callbacksTopic,
  createdAtOfJobId,
  derivedNameOf,
  newJobId,
  rootOf,
  shardOfJobId,
  subscriptionTopic,
  TOPIC_NAME_PATTERN,
  TOPIC_REF_PATTERN,
  topicOfJobId,
} from "../../src/queue/ids.js";
import { Keys } from "../../src/queue/keys.js";
import { JOB_ID_MAX_LENGTH } from "../../src/limits.js";

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

  it("a derived topic's job id is `[<shard>~]<topic>@<name>.<ULID>`: it names the derived topic, its root, and keys of the derived topic", () => {
    const ulid = "01JD8X3Q5T4W9Y7ZC2B6N0M1KR";
    for (const [id, shard, topic] of [
      [`orders@billing.${ulid}`, "main", "orders@billing"],
      [`orders.v2@b.i-l_l.${ulid}`, "main", "orders.v2@b.i-l_l"],
      [`eu-2~orders@_callbacks.${ulid}`, "eu-2", "orders@_callbacks"],
    ] as const) {
      expect([shardOfJobId(id), topicOfJobId(id), createdAtOfJobId(id)]).toEqual([shard, topic, createdAtOfJobId(`emails.${ulid}`)]);
      expect(rootOf(topic)).toBe(topic.slice(0, topic.indexOf("@")));
      const keys = new Keys("dl:{t}").job(id);
      expect(keys.record).toBe(`dl:{t}:t:${topic}:j:${ulid}`);
    }
    expect(subscriptionTopic("orders", "billing")).toBe("orders@billing");
    expect(callbacksTopic("orders")).toBe("orders@_callbacks");
    expect(callbacksTopic("orders@billing")).toBe("orders@_callbacks");
    expect([derivedNameOf("orders"), derivedNameOf("orders@billing"), rootOf("orders")]).toEqual([null, "billing", "orders"]);
    const longest = newJobId(`${"t".repeat(64)}@${"s".repeat(32)}`, Date.UTC(2026, 0, 1), "s".repeat(32));
    expect([longest.length, topicOfJobId(longest)]).toEqual([JOB_ID_MAX_LENGTH, `${"t".repeat(64)}@${"s".repeat(32)}`]);
  });

  it("refuses derived names that are not a subscription's or the callbacks': a reserved `_` name, an empty or long one, two `@`, a dot-segment root", () => {
    const ulid = "01JD8X3Q5T4W9Y7ZC2B6N0M1KR";
    for (const bad of [
      "orders@_other",
      "orders@",
      "orders@-x",
      `orders@${"s".repeat(33)}`,
      "orders@a@b",
      "..@billing",
      ".@_callbacks",
      "@billing",
      "or ders@billing",
    ]) {
      expect([bad, TOPIC_REF_PATTERN.test(bad), topicOfJobId(`${bad}.${ulid}`)]).toEqual([bad, false, null]);
    }
    // A topic's own name never holds `@`: jobs are enqueued to roots only.
    expect([TOPIC_NAME_PATTERN.test("orders@billing"), TOPIC_REF_PATTERN.test("orders@billing"), TOPIC_REF_PATTERN.test("orders")]).toEqual([
      false,
      true,
      true,
    ]);
  });
});
