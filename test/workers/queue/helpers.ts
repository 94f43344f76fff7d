import { settings } from "../../../src/env.js";
import { Queue, type QueueOptions } from "../../../src/queue/queue.js";
import { createRedis } from "../../../src/queue/redis.js";
import { freshPrefix } from "../fixtures.js";
import { testEnv } from "../self.js";

export { killAll } from "../../../bench/lib/bulk-operations.js";
export { freshPrefix } from "../fixtures.js";

/** The test deployment's Redis client (through the bridge, to the real Redis). */
function testRedis() {
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
