/**
 * A producer reads each shard's sleep mark at most once a second: jobs
 * stored on three shards in turn cost one GET per shard, not one per job.
 */
import { expect, it } from "vitest";
import { settings, type Env } from "../../../src/env.js";
import { shardsFromSettings } from "../../../src/queue/from-settings.js";
import { Queue } from "../../../src/queue/queue.js";
import { SLEEP_MARK_STALENESS_MS, wakeForSoonJobs } from "../../../src/tick/wake.js";
import { freshEnv } from "../fixtures.js";
import { SHARDS, threeShardBindings, topicOn } from "../shard-fixtures.js";
import { VirtualClock } from "./helpers.js";

it("reads each shard's sleep mark once a second, however the jobs alternate between shards", async () => {
  const env = freshEnv("wakeshards", { ...threeShardBindings(), TICK_IDLE_PEEK_MS: "20000" } as Partial<Env>);
  const s = settings(env);
  const shards = shardsFromSettings(s);
  const reads: string[] = [];
  const original = Queue.prototype.tickSleep;
  Queue.prototype.tickSleep = function (this: Queue) {
    reads.push(this.shard);
    return original.call(this);
  };
  try {
    const clock = new VirtualClock(Date.now());
    const wake = (shard: string) =>
      wakeForSoonJobs({
        env: { ...env, TICK_RUNNER: {} as NonNullable<Env["TICK_RUNNER"]> },
        settings: s,
        queue: shards.queue(shard)!,
        jobs: [{ topic: topicOn(shard), dueAt: clock.now() + 5_000 }],
        waitUntil: () => {},
        clock,
        drain: async () => {},
      });
    for (let round = 0; round < 3; round++) for (const shard of SHARDS) await wake(shard);
    expect(reads).toEqual(SHARDS);
    clock.t += SLEEP_MARK_STALENESS_MS;
    for (const shard of SHARDS) await wake(shard);
    expect(reads).toEqual([...SHARDS, ...SHARDS]);
  } finally {
    Queue.prototype.tickSleep = original;
  }
});
