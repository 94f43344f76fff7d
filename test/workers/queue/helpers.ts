import { settings } from "../../../src/env.js";
import { Queue, type QueueOptions } from "../../../src/queue/queue.js";
import { createRedis } from "../../../src/queue/redis.js";
import { freshPrefix } from "../fixtures.js";
import { testEnv } from "../self.js";

export { freshPrefix } from "../fixtures.js";

/** The test deployment's Redis client (through the bridge, to the real Redis). */
export function testRedis() {
  return createRedis(settings(testEnv));
}

/** A queue on its own prefix; `clock.now` drives its time when given. */
export function testQueue(options: Partial<QueueOptions> & { clock?: { now: number } } = {}) {
  const redis = testRedis();
  const { clock, ...rest } = options;
  const queue = new Queue({
    redis,
    prefix: freshPrefix(),
    ...(clock ? { now: () => clock.now } : {}),
    ...rest,
  });
  return { queue, redis };
}

/** Kills every job of a topic that is due, with `error(payload)` as its error, in settles of up to 1,000; returns how many. */
export async function killAll(queue: Queue, topic: string, error: (payload: unknown) => string): Promise<number> {
  let n = 0;
  for (;;) {
    const { jobs } = await queue.claim(topic, { max: 1_000, leaseMs: 60_000 });
    if (jobs.length === 0) return n;
    await queue.settle(
      topic,
      jobs.map((j) => ({ id: j.id, attempt: j.attempt, kind: "dead" as const, error: error(j.record.payload) })),
    );
    n += jobs.length;
  }
}
