import { env, exports } from "cloudflare:workers";
import type { Env } from "../../src/env.js";

/** The Worker under test, reached through its real fetch entry point in workerd. */
export const self = (exports as unknown as { default: Fetcher }).default;

/** The test deployment's bindings. */
export const testEnv = env as unknown as Env;
