import { startNpmStart, type NpmStart } from "../harness/npm-start.js";

/** `npm start` running for a test (harness/npm-start.ts): its URL and token, its output, and how to stop all of it. */
export type LocalStack = NpmStart;

/**
 * Runs `npm start` itself (through npm, as a user does) on free ports with its data in a temp dir and waits until
 * it is ready. `env` adds settings (TICK_POLL_MS, WRANGLER_CONFIG, …) to this shell's environment.
 */
export function startLocalStack(env: Record<string, string> = {}): Promise<LocalStack> {
  return startNpmStart({ settings: env });
}
