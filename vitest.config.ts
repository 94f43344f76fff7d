import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";

/** The API token the Worker accepts in tests. */
export const TEST_API_TOKEN = "test-api-token-0123456789";

export default defineConfig({
  test: {
    reporters: ["default", "./test/summary-reporter.ts"],
    projects: [
      {
        test: {
          name: "node",
          include: ["test/node/**/*.test.ts"],
          environment: "node",
          globalSetup: ["test/global-setup.ts"],
          testTimeout: 30_000,
          hookTimeout: 30_000,
        },
      },
      {
        plugins: [
          cloudflareTest(({ inject }) => ({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: {
              bindings: {
                UPSTASH_REDIS_REST_URL: inject("bridgeUrl"),
                UPSTASH_REDIS_REST_TOKEN: inject("bridgeToken"),
                DELAYLINE_TOKEN: TEST_API_TOKEN,
                ALLOW_PRIVATE_TARGETS: "true",
                // The model-based tick test (test/workers/tick/model.test.ts): runs, replay, strictness.
                MODEL_RUNS: process.env.MODEL_RUNS ?? "",
                MODEL_SEED: process.env.MODEL_SEED ?? "",
                MODEL_PATH: process.env.MODEL_PATH ?? "",
                MODEL_STRICT: process.env.MODEL_STRICT ?? "",
                MODEL_HUNT: process.env.MODEL_HUNT ?? "",
              },
            },
          })),
        ],
        test: {
          name: "workers",
          include: ["test/workers/**/*.test.ts"],
          globalSetup: ["test/global-setup.ts"],
          testTimeout: 30_000,
          hookTimeout: 30_000,
        },
      },
    ],
  },
});
