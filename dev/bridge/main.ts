/**
 * `npm run bridge`: serve any Redis over the Upstash REST protocol.
 *   REDIS_URL     redis://127.0.0.1:6379 (default)
 *   BRIDGE_TOKEN  required bearer token
 *   BRIDGE_PORT   default 8079
 *   BRIDGE_HOST   default 127.0.0.1
 *   BRIDGE_LOG    "1" logs method, path, status and duration (never tokens or values)
 */
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
const bridge = await startBridge({
  redisUrl: process.env.REDIS_URL ?? "redis://127.0.0.1:6379",
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
