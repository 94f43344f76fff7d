import { randomUUID } from "node:crypto";
import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { configDefaults, defineConfig } from "vitest/config";

/** The API token the Worker accepts in tests. */
export const TEST_API_TOKEN = "test-api-token-0123456789";

/**
 * Tests whose Worker reaches itself through TICK_RUNNER: the invocations it
 * starts (fanned-out chunks, a producer's drains) read the deployment's own
 * bindings, so the file runs in a project of its own whose deployment prefix
 * is its own too (DELAYLINE_PREFIX, fresh each run) and not the default.
 */
const SELF_INVOKING = ["test/workers/tick/self-invocations.test.ts"];

/**
 * The queue's and the API's tests, and the shards' ticks, again on a 3-master
 * Redis Cluster behind the bridge (test/global-setup.ts starts one for a
 * project named `*-cluster`, and puts the shards tests' three shards on its
 * three masters), so every `npm test` shows their calls stay in one slot.
 * Left out: tests whose Redis is a single server of their own anyway (cost,
 * bounded calls, flow scale, label scale, fuzz, abuse), that touch no Redis (docs, OpenAPI), and the
 * two longest (invariants, list); `npm run test:cluster` runs them all.
 */
const CLUSTER_SMOKE = {
  include: ["test/workers/queue/**/*.test.ts", "test/workers/api/**/*.test.ts", "test/workers/tick/shard-ticks.test.ts"],
  exclude: ["cost", "bounded-calls", "flow-scale", "label-scale", "invariants", "list"]
    .map((name) => `test/workers/queue/${name}.test.ts`)
    .concat(["fuzz", "abuse", "docs", "openapi"].map((name) => `test/workers/api/${name}.test.ts`)),
};

/** Node tests of the cluster itself, which only the `node-cluster` project runs. */
const CLUSTER_ONLY = ["test/node/shard-masters.test.ts"];

/** A workerd project: the Worker as wrangler.toml deploys it, on the test stack, with `bindings` added. */
function workersProject(name: string, files: { include: string[]; exclude?: string[] }, bindings: Record<string, string> = {}) {
  return {
    plugins: [
      cloudflareTest(({ inject }) => ({
        wrangler: { configPath: "./wrangler.toml" },
        miniflare: {
          bindings: {
            UPSTASH_REDIS_REST_URL: inject("bridgeUrl"),
            UPSTASH_REDIS_REST_TOKEN: inject("bridgeToken"),
            DELAYLINE_TOKEN: TEST_API_TOKEN,
            ALLOW_PRIVATE_TARGETS: "true",
            ...bindings,
          },
        },
      })),
    ],
    test: {
      name,
      include: files.include,
      exclude: [...configDefaults.exclude, ...(files.exclude ?? [])],
      globalSetup: ["test/global-setup.ts"],
      testTimeout: 30_000,
      hookTimeout: 30_000,
    },
  };
}

export default defineConfig({
  test: {
    reporters: ["default", "./test/summary-reporter.ts"],
    projects: [
      {
        // The bridge's own tests again, with the bridge in front of a 3-master Redis Cluster (test/global-setup.ts), and
        // the check that the shards tests' shards land on different masters of it.
        test: {
          name: "node-cluster",
          include: [...CLUSTER_ONLY, "test/node/bridge-conformance.test.ts", "test/node/bridge-limits.test.ts", "test/node/bridge-protocol.test.ts"],
          environment: "node",
          globalSetup: ["test/global-setup.ts"],
          testTimeout: 30_000,
          hookTimeout: 30_000,
        },
      },
      {
        test: {
          name: "node",
          include: ["test/node/**/*.test.ts"],
          exclude: [...configDefaults.exclude, ...CLUSTER_ONLY],
          environment: "node",
          globalSetup: ["test/global-setup.ts"],
          testTimeout: 30_000,
          hookTimeout: 30_000,
        },
      },
      workersProject(
        "workers",
        { include: ["test/workers/**/*.test.ts"], exclude: SELF_INVOKING },
        {
          // The model-based tick test (test/workers/tick/model.test.ts): runs, replay, strictness.
          MODEL_RUNS: process.env.MODEL_RUNS ?? "",
          MODEL_SEED: process.env.MODEL_SEED ?? "",
          MODEL_PATH: process.env.MODEL_PATH ?? "",
          MODEL_STRICT: process.env.MODEL_STRICT ?? "",
          MODEL_HUNT: process.env.MODEL_HUNT ?? "",
          // The flow keys' scale test (test/workers/queue/flow-scale.test.ts): how many keys.
          FLOW_SCALE_KEYS: process.env.FLOW_SCALE_KEYS ?? "",
          // The labels' scale test (test/workers/queue/label-scale.test.ts): how many jobs.
          LABEL_SCALE_JOBS: process.env.LABEL_SCALE_JOBS ?? "",
        },
      ),
      workersProject("workers-self", { include: SELF_INVOKING }, { DELAYLINE_PREFIX: `t${randomUUID().slice(0, 8)}:{self}` }),
      workersProject("workers-cluster", CLUSTER_SMOKE),
    ],
  },
});
