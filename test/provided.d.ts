// Values the global setup hands to tests with `inject()`.
declare module "vitest" {
  export interface ProvidedContext {
    bridgeUrl: string;
    bridgeToken: string;
    redisUrl: string;
    /** Whether `bridgeUrl` fronts a 3-master Redis Cluster (`redisUrl` is then its first master) instead of one redis-server. */
    redisCluster: boolean;
    /** A bridge to a Redis of its own, for exact command counts. */
    meterBridgeUrl: string;
    meterBridgeToken: string;
    /** A bridge to a Redis of its own, for the fuzz test's key counts. */
    fuzzBridgeUrl: string;
    fuzzBridgeToken: string;
    /** A bridge to a Redis of its own, for the abuse test's state digests. */
    abuseBridgeUrl: string;
    abuseBridgeToken: string;
    /** A bridge to a Redis of its own, for the bulk-operation test's SLOWLOG. */
    slowBridgeUrl: string;
    slowBridgeToken: string;
    /** A bridge to a Redis of its own, for the flow keys' scale test's command counts and SLOWLOG. */
    flowBridgeUrl: string;
    flowBridgeToken: string;
    /** A bridge to a Redis of its own, for the labels' scale test's command counts and SLOWLOG. */
    labelBridgeUrl: string;
    labelBridgeToken: string;
    /** A bridge to a Redis of its own, for the dry runs' test's command names and state digests. */
    dryBridgeUrl: string;
    dryBridgeToken: string;
    /** Bridges to two Redis databases of their own, for the shards tests' shards beside the main one (on a cluster, `bridgeUrl`'s). */
    shardBridges: Array<{ url: string; token: string }>;
    /** A loopback server that takes connections and answers only after 10 s: a shard there hangs. */
    silentUrl: string;
    /** With `redisCluster`, each master's URL and the slots it serves (harness/redis-cluster.ts); else none. */
    clusterMasters: Array<{ url: string; slots: Array<readonly [number, number]> }>;
    /** A local HTTP receiver that records deliveries (test/receiver.ts). */
    receiverUrl: string;
  }
}
export {};
