import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Redis from "ioredis";
import { describe, expect, it } from "vitest";
import { ensureRedisServer, startRedis } from "../../dev/redis-launcher.js";

describe("redis launcher", () => {
  it("keeps an acknowledged write across kill -9 (append-only, fsync always)", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "delayline-aof-"));
    try {
      const first = await startRedis({ dataDir });
      const client = new Redis(first.url);
      await client.set("durable", "yes");
      client.disconnect();
      process.kill(first.pid, "SIGKILL");
      await first.stop();

      const second = await startRedis({ dataDir, port: first.port });
      const again = new Redis(second.url);
      try {
        expect(await again.get("durable")).toBe("yes");
      } finally {
        again.disconnect();
        await second.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it("removes its temp data dir on stop", async () => {
    const redis = await startRedis();
    const { existsSync } = await import("node:fs");
    expect(existsSync(redis.dataDir)).toBe(true);
    await redis.stop();
    expect(existsSync(redis.dataDir)).toBe(false);
  });

  it("says how to get Redis when redis-server is missing and cannot be installed", () => {
    const path = process.env.PATH;
    process.env.PATH = "/nonexistent";
    try {
      expect(() => ensureRedisServer(() => {})).toThrow(/apt-get install -y redis-server[\s\S]*REDIS_URL[\s\S]*UPSTASH_REDIS_REST_URL/);
    } finally {
      process.env.PATH = path;
    }
  });
});
