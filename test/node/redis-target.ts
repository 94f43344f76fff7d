import { inject } from "vitest";

/**
 * What a test's own bridge connects to: the project's redis-server, or in
 * cluster mode (test/global-setup.ts) its Redis Cluster, found from the first
 * master.
 */
export function sharedRedisTarget(): { redisUrl: string } | { redisCluster: string[] } {
  return inject("redisCluster") ? { redisCluster: [inject("redisUrl")] } : { redisUrl: inject("redisUrl") };
}
