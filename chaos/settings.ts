/**
 * The Worker's settings for every chaos run (the rest are wrangler.toml's): `npm run chaos` and
 * test/node/faults.test.ts start the stack with these. TICK_FANOUT may be set from the shell to run a fan-out other
 * than 4.
 */
export const CHAOS_SETTINGS = { TICK_POLL_MS: "250", TICK_SUBREQUEST_BUDGET: "5000", TICK_FANOUT: process.env.TICK_FANOUT ?? "4" };
