import type { TestProject } from "vitest/node";
import { tsImport } from "tsx/esm/api";

/**
 * Starts a real redis-server and the REST bridge on free ports for one test
 * project, and hands their addresses to the tests (and, through `inject`, to
 * the Worker's bindings). Everything stops when the run ends.
 *
 * The stack is loaded by Node itself (through tsx), not through the
 * project's Vite runner: the workers project inlines every dependency for
 * workerd, and ioredis cannot be evaluated that way.
 */
export default async function setup(project: TestProject) {
  const { startTestStack } = (await tsImport("./stack.ts", import.meta.url)) as typeof import("./stack.js");
  const stack = await startTestStack();
  project.provide("bridgeUrl", stack.bridge.url);
  project.provide("bridgeToken", stack.token);
  project.provide("redisUrl", stack.redis.url);
  return async () => {
    await stack.stop();
  };
}
