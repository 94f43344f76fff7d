/**
 * src/limits.ts is the one place delayline's limits are written: the Lua
 * scripts carry its values (scripts/lua-limits.mjs puts them in at build
 * time), and the docs state them: docs/http-api.md's Limits table, the
 * configuration page's defaults, and the prose of the pages that name one.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import * as limits from "../../src/limits.js";
import * as lua from "../../src/queue/lua.generated.js";
import { substituteLimits } from "../../scripts/lua-limits.mjs";

const root = join(import.meta.dirname, "../..");
const luaDir = join(root, "src/queue/lua");
const values: Record<string, unknown> = { ...limits };
const numbers = Object.fromEntries(Object.entries(values).filter(([, v]) => typeof v === "number")) as Record<string, number>;
const scripts = Object.values(lua).filter((s): s is lua.LuaScript => typeof s === "object" && s !== null && "source" in s);
const page = (path: string) => readFileSync(join(root, path), "utf8");
const httpApi = page("docs/http-api.md");
/** Every page that states a limit in its prose. */
const docs = ["docs/http-api.md", "docs/operations.md", "docs/queue.md", "docs/chaos.md"].map(page).join("\n");
const number = (text: string) => Number(text.replace(/,/g, ""));

describe("the build's substitution", () => {
  it("puts the module's value where a script writes the same one", () => {
    expect(substituteLimits("local n = --[[LIMIT:SERIES_MINUTES]]1440 + --[[LIMIT:MAX_BATCH]]1000", "x.lua", { SERIES_MINUTES: 1440, MAX_BATCH: 1000 })).toBe(
      "local n = 1440 + 1000",
    );
  });

  it("refuses a written value that differs, an unknown name and a placeholder without a value", () => {
    expect(() => substituteLimits("local n = --[[LIMIT:SERIES_MINUTES]]1400", "x.lua", { SERIES_MINUTES: 1440 })).toThrow(/x\.lua.*src\/limits\.ts says 1440/);
    expect(() => substituteLimits("local n = --[[LIMIT:NO_SUCH]]1", "x.lua", { SERIES_MINUTES: 1440 })).toThrow(/x\.lua.*names no number/);
    expect(() => substituteLimits("local n = --[[LIMIT:SERIES_MINUTES]]", "x.lua", { SERIES_MINUTES: 1440 })).toThrow(/x\.lua.*without a number/);
  });
});

describe("the generated scripts", () => {
  const raw = [...readdirSync(luaDir), ...readdirSync(join(luaDir, "lib")).map((f) => `lib/${f}`)]
    .filter((f) => f.endsWith(".lua"))
    .map((f) => ({ file: f, source: readFileSync(join(luaDir, f), "utf8") }));
  const placeholders = raw.flatMap(({ file, source }) =>
    [...source.matchAll(/^(.*?)--\[\[LIMIT:(\w+)\]\]/gm)].map((m) => ({ file, before: m[1]!, name: m[2]! })),
  );

  it("hold no placeholder", () => {
    expect(scripts.length).toBeGreaterThan(20);
    for (const s of scripts) expect(s.source, s.name).not.toContain("--[[LIMIT:");
  });

  it("carry the module's value wherever a script names a limit", () => {
    // The limits the issue found hard-coded in the scripts are among them.
    expect(new Set(placeholders.map((p) => p.name))).toEqual(
      new Set([
        "DEFAULT_BACKOFF_FACTOR",
        "DEFAULT_BACKOFF_MAX_DELAY_MS",
        "SERIES_MINUTES",
        "ATTEMPT_HISTORY_LIMIT",
        "LUA_READ_BATCH",
        "CLAIM_REPLY_BUDGET_BYTES",
        "SWEEP_BATCH",
        "SWEEP_SLACK_MS",
        "DEFAULT_PRIORITY_STEP_MS",
        "FLOW_KEYS_MIN",
        "FLOW_RATE_FORGET_BATCH",
        "LABEL_TRIM_PROBES",
        "EXPIRY_GRAIN_MS",
      ]),
    );
    for (const p of placeholders) {
      expect(numbers[p.name], `${p.file}: ${p.name}`).toBeTypeOf("number");
      const line = `${p.before}${numbers[p.name]}`;
      expect(
        scripts.some((s) => s.source.includes(line)),
        `${p.file}: no generated script holds ${JSON.stringify(line)}`,
      ).toBe(true);
    }
  });

  it("are what redis-server is given: claim's backoff defaults, the series ring and the history limit", () => {
    const claim = scripts.find((s) => s.name === "claim")!.source;
    expect(claim).toContain(`(policy.factor or ${limits.DEFAULT_BACKOFF_FACTOR})`);
    expect(claim).toContain(`policy.maxDelay or ${limits.DEFAULT_BACKOFF_MAX_DELAY_MS}\n`);
    expect(claim).toContain(`local HISTORY_LIMIT = ${limits.ATTEMPT_HISTORY_LIMIT}\n`);
    expect(scripts.find((s) => s.name === "settle")!.source).toContain(`(minute % ${limits.SERIES_MINUTES})`);
    expect(scripts.find((s) => s.name === "peek")!.source).toContain(`"g" .. (minute % ${limits.SERIES_MINUTES})`);
  });
});

describe("the docs", () => {
  /** Rows of the table under `heading` (or the whole text) whose first cell is a `NAME`: name -> the remaining cells. */
  function rows(text: string, heading?: string): Map<string, string[]> {
    let section = text;
    if (heading !== undefined) {
      const start = text.indexOf(`\n${heading}\n`);
      expect(start, heading).toBeGreaterThan(0);
      const from = start + heading.length + 2;
      const end = text.indexOf("\n#", from);
      section = text.slice(from, end < 0 ? text.length : end);
    }
    const found = new Map<string, string[]>();
    for (const line of section.split("\n")) {
      const m = /^\| `([A-Z_]+)` \|(.*)\|$/.exec(line);
      if (m)
        found.set(
          m[1]!,
          m[2]!.split("|").map((c) => c.trim()),
        );
    }
    return found;
  }

  it("docs/http-api.md lists every limit in its Limits table with the module's value", () => {
    const table = rows(httpApi, "## Limits");
    const settingsDefaults = Object.keys(numbers).filter((n) => SETTING_DEFAULTS[n] !== undefined);
    const listed = Object.keys(numbers).filter((n) => !settingsDefaults.includes(n));
    expect([...table.keys()].sort()).toEqual(listed.sort());
    for (const [name, [value]] of table) expect(number(value!), name).toBe(numbers[name]);
  });

  it("docs/configuration.md states the module's value as the default of each setting that takes one from it", () => {
    const table = rows(page("docs/configuration.md"));
    for (const [name, setting] of Object.entries(SETTING_DEFAULTS)) {
      expect(table.get(setting)?.[0], setting).toContain(`\`${values[name]}\``);
    }
  });

  it("say the same limits where their prose states them", () => {
    const fmt = (n: number) => n.toLocaleString("en-US");
    expect(docs).toContain(`| \`POST /v1/jobs/batch\` | up to ${fmt(limits.MAX_BATCH)} jobs`);
    expect(docs).toContain(`\`limit\` (1–${fmt(limits.MAX_LIST_LIMIT)}, default ${limits.DEFAULT_LIST_LIMIT})`);
    expect(docs).toContain(`the job's last ${limits.ATTEMPT_HISTORY_LIMIT} attempts`);
    expect(docs).toContain(`up to ${fmt(limits.SERIES_MINUTES)}) of per-minute series`);
    expect(docs).toContain(`a ${fmt(limits.SERIES_MINUTES)}-slot ring`);
    expect(docs).toContain(`at most ${limits.BULK_CANCEL_BATCH} jobs per call (it reads no payload`);
    expect(docs).toContain(`bounded per call (${limits.BULK_CANCEL_BATCH} jobs, and it stops once it has read 1 MB of metas)`);
    expect(docs).toContain(`one bounded step (${limits.DEAD_BATCH} letters, 1 MB of entries)`);
    // "1 MB" in the prose above and in the jobs route.
    expect([limits.BULK_CALL_BYTES, limits.LIST_PAGE_BYTES]).toEqual([2 ** 20, 2 ** 20]);
    expect(docs).toContain(`${limits.MAX_DELAY_DAYS}-day delays (stay scheduled; ${limits.MAX_DELAY_DAYS + 1} days is 422)`);
  });
});

/** Module defaults that are a setting's default, by the setting they are the default of. */
const SETTING_DEFAULTS: Record<string, string> = {
  DEFAULT_MAX_PAYLOAD_BYTES: "MAX_PAYLOAD_BYTES",
  DEFAULT_MAX_BODY_BYTES: "MAX_BODY_BYTES",
  DEFAULT_RETENTION_MS: "RETENTION_MS",
  DEFAULT_DEAD_LETTER_CAP: "DEAD_LETTER_CAP",
  DEFAULT_IDEMPOTENCY_WINDOW_MS: "IDEMPOTENCY_WINDOW_MS",
  DEFAULT_MAX_ATTEMPTS: "DEFAULT_MAX_ATTEMPTS",
  DEFAULT_TIMEOUT_MS: "DEFAULT_TIMEOUT_MS",
  DEFAULT_MAX_TOPICS: "MAX_TOPICS",
  DEFAULT_METRICS_TOPICS: "METRICS_TOPICS",
  DEFAULT_SIGNATURE_SCHEME: "SIGNING_SCHEME",
  DEFAULT_PREFIX: "DELAYLINE_PREFIX",
  DEFAULT_REDIS_TIMEOUT_MS: "REDIS_TIMEOUT_MS",
  DEFAULT_TICK_POLL_MS: "TICK_POLL_MS",
  MAX_DEFAULT_TICK_LEAD_MS: "TICK_LEAD_MS",
  DEFAULT_TICK_CHUNK: "TICK_CHUNK",
  DEFAULT_TICK_CONCURRENCY: "TICK_CONCURRENCY",
  DEFAULT_TICK_SUBREQUEST_BUDGET: "TICK_SUBREQUEST_BUDGET",
  DEFAULT_TICK_OVERLAP_MS: "TICK_OVERLAP_MS",
  DEFAULT_TICK_FANOUT: "TICK_FANOUT",
  DEFAULT_TICK_IDLE_PEEK_MS: "TICK_IDLE_PEEK_MS",
};
