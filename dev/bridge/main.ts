/**
 * `npm run bridge`: serve any Redis over the Upstash REST protocol.
 *   REDIS_URL     redis://127.0.0.1:6379 (default)
 *   REDIS_CLUSTER_NODES  comma-separated nodes of a Redis Cluster (redis://127.0.0.1:7000,…):
 *                 the bridge then uses a cluster client instead of REDIS_URL
 *   BRIDGE_TOKEN  required bearer token
 *   BRIDGE_PORT   default 8079
 *   BRIDGE_HOST   default 127.0.0.1
 *   BRIDGE_LOG    "1" logs method, path, status and duration (never tokens or values)
 * Upstash's limits hold by default (dev/bridge/limits.ts); 0 turns one off:
 *   BRIDGE_MAX_REQUEST_BYTES    default 10485760 (10 MB)
 *   BRIDGE_MAX_REPLY_BYTES      default 10485760 (10 MB), per command
 *   BRIDGE_MAX_RECORD_BYTES     default 104857600 (100 MB), per key
 *   BRIDGE_COMMANDS_PER_SECOND  default 10000; past it commands wait
 *   BRIDGE_MAX_REQUESTS         default 0 (none): commands before "ERR max requests limit exceeded"
 */
import { limitsFromEnv, type UpstashLimits } from "./limits.js";
import { startBridge } from "./server.js";

const token = process.env.BRIDGE_TOKEN;
if (!token) {
  console.error("BRIDGE_TOKEN is required: the bearer token clients must send (set UPSTASH_REDIS_REST_TOKEN to the same value).");
  process.exit(2);
}
const port = Number(process.env.BRIDGE_PORT ?? 8079);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`BRIDGE_PORT must be a port number, got ${JSON.stringify(process.env.BRIDGE_PORT)}`);
  process.exit(2);
}
let limits: Partial<UpstashLimits>;
try {
  limits = limitsFromEnv(process.env);
} catch (err) {
  console.error((err as Error).message);
  process.exit(2);
}
const bridge = await startBridge({
  limits,
  redisUrl: process.env.REDIS_URL ?? "redis://127.0.0.1:6379",
  redisCluster: process.env.REDIS_CLUSTER_NODES?.split(",").filter(Boolean),
  token,
  port,
  host: process.env.BRIDGE_HOST ?? "127.0.0.1",
  log: process.env.BRIDGE_LOG === "1" ? (l) => console.log(JSON.stringify({ bridge: l })) : undefined,
});
console.log(`bridge: Upstash REST on ${bridge.url}`);

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    bridge.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}
