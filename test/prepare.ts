/**
 * The first step of `npm test`: sees that the machine has what the tests run
 * (redis-server, chromium, promtool), installing them as root with Debian's
 * apt, or stops at once naming the packages — before the type-check and the
 * ten-minute run that would otherwise fail at its end.
 */
import { ensureRedisServer } from "../dev/redis-launcher.js";
import { ensureTestTools, testTools } from "./tools.js";

try {
  ensureRedisServer();
  const { chromium, promtool } = testTools();
  ensureTestTools([chromium, promtool]);
} catch (error) {
  console.error((error as Error).message);
  process.exit(1);
}
