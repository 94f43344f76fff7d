/**
 * The settings' declarations (src/settings/declarations.ts) against what
 * docs/configuration.md's table promises: the table is the one they generate,
 * every setting has a row, and the bounds a row states are exactly the ones
 * the Worker enforces. And a Worker that refuses its
 * settings stops `npm start`'s wait for /healthz at once.
 */
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { waitForHealthy } from "../../dev/worker-process.js";
import { settings, SETTING_NAMES, SettingsError, validateSettings, type Env } from "../../src/env.js";
import { SETTING_DECLARATIONS } from "../../src/settings/declarations.js";
import { settingsTable, withSettingsTable } from "../../src/settings/table.js";

const required: Env = { UPSTASH_REDIS_REST_URL: "http://127.0.0.1:1", UPSTASH_REDIS_REST_TOKEN: "rest-token", DELAYLINE_TOKEN: "api-token-123" };
const problemsWith = (name: string, value: string) => validateSettings({ ...required, [name]: value }).filter((p) => p.setting === name);

const configuration = readFileSync(join(import.meta.dirname, "../../docs/configuration.md"), "utf8");

/** The configuration table's rows by setting name (the first table whose rows name settings), as their cells after the name. */
function configurationRows(): Map<string, string> {
  const section = configuration.slice(0, configuration.indexOf("`npm start` reads these"));
  const rows = new Map<string, string>();
  for (const line of section.split("\n")) {
    const m = /^\| `([A-Z_]+)` \|(.*)$/.exec(line);
    if (m) rows.set(m[1]!, m[2]!);
  }
  return rows;
}

const number = (text: string) => Number(text.replace(/,/g, ""));

/** Settings whose rule is not a numeric range, with values that must pass and fail. */
const RULES: Record<string, { says: RegExp; good: string[]; bad: string[] }> = {
  UPSTASH_REDIS_REST_URL: { says: /http\(s\) URL/, good: ["https://eu1.upstash.io"], bad: ["ftp://example.com", "not a url"] },
  UPSTASH_REDIS_REST_TOKEN: { says: /not empty/, good: ["x"], bad: [] },
  DELAYLINE_TOKEN: { says: /≥ 8 characters/, good: ["12345678", "12345678,abcdefgh"], bad: ["1234567", "12345678,abc"] },
  DELAYLINE_PREFIX: { says: /exactly one `\{hash tag\}`/, good: ["dl:{main}", "{x}"], bad: ["dl:main", "dl:{a}{b}", "dl: {main}"] },
  ALLOW_PRIVATE_TARGETS: { says: /`true`\/`false`\/`1`\/`0`/, good: ["true", "false", "1", "0"], bad: ["yes", "TRUE"] },
  SIGNING_SECRET: { says: /≥ 16 characters/, good: ["0123456789abcdef"], bad: ["whsec_test123", "0123456789abcde"] },
  SIGNING_SCHEME: { says: /`delayline` or `standard`/, good: ["delayline", "standard"], bad: ["stripe", "Standard"] },
  DELAYLINE_SHARDS: {
    says: /JSON array .* one of them `main`/,
    good: [
      '[{"name":"main"}]',
      // A token binding must name a binding the Worker has: here one every env of these tests holds.
      '[{"name":"main"},{"name":"b-2","url":"https://b.upstash.io","tokenBinding":"UPSTASH_REDIS_REST_TOKEN","prefix":"x:{b}"}]',
    ],
    bad: [
      "[]",
      "not json",
      '[{"name":"b","url":"https://b.upstash.io","tokenBinding":"UPSTASH_REDIS_REST_TOKEN"}]',
      '[{"name":"main"},{"name":"main"}]',
      '[{"name":"Main"}]',
      '[{"name":"main"},{"name":"b"}]',
      '[{"name":"main"},{"name":"b","url":"https://b.upstash.io","tokenBinding":"NO_SUCH_SECRET"}]',
      '[{"name":"main"},{"name":"b","url":"https://b.upstash.io","tokenBinding":"UPSTASH_REDIS_REST_TOKEN","prefix":"other:{main}"}]',
      '[{"name":"main","extra":1}]',
    ],
  },
  DELAYLINE_SHARD_PINS: {
    says: /JSON object/,
    good: ["{}", '{"emails":"main"}'],
    bad: ['{"emails":"b"}', "[1]", '{"..":"main"}', '{"emails":"Main"}', "nope"],
  },
};

describe("docs/configuration.md's table", () => {
  const rows = configurationRows();

  it("is the one the declarations generate (npm run docs:settings writes it)", () => {
    expect(withSettingsTable(configuration)).toBe(configuration);
    expect(configuration).toContain(settingsTable());
  });

  it("has a row for every setting and none for a setting that does not exist", () => {
    expect([...rows.keys()].sort()).toEqual([...SETTING_NAMES].sort());
  });

  it.each(SETTING_NAMES.filter((n) => !(n in RULES)))("states %s's bounds, and they are the schema's", (name) => {
    // The accepts cell: "min–max", perhaps with a note after.
    const bounds = /^[^|]*\|\s*(\d[\d,]*)–(\d[\d,]*)/.exec(rows.get(name) ?? "");
    expect(bounds, `the row of ${name} states no min–max`).not.toBeNull();
    const [min, max] = [number(bounds![1]!), number(bounds![2]!)];
    expect(problemsWith(name, String(min))).toEqual([]);
    expect(problemsWith(name, String(max))).toEqual([]);
    if (min > 0) expect(problemsWith(name, String(min - 1))).toHaveLength(1);
    expect(problemsWith(name, String(max + 1))).toHaveLength(1);
    expect(problemsWith(name, "1.5")).toHaveLength(1);
  });

  it.each(Object.keys(RULES))("states %s's rule, and it is the schema's", (name) => {
    const rule = RULES[name]!;
    expect(rows.get(name)).toMatch(rule.says);
    for (const value of rule.good) expect(problemsWith(name, value), value).toEqual([]);
    for (const value of rule.bad) expect(problemsWith(name, value), value).toHaveLength(1);
  });

  it("with SIGNING_SCHEME=standard, SIGNING_SECRET must be a whsec_ secret of 24–64 bytes", () => {
    const whsec = (bytes: number) => `whsec_${Buffer.alloc(bytes, 7).toString("base64")}`;
    const standard = (secret: string) => validateSettings({ ...required, SIGNING_SCHEME: "standard", SIGNING_SECRET: secret });
    expect(standard(whsec(24))).toEqual([]);
    expect(standard(whsec(64))).toEqual([]);
    for (const bad of ["plain-secret-0123456789", whsec(23), whsec(65), "whsec_!!!!!!!!!!!!!!!!!!!!!!!!"]) {
      expect(
        standard(bad).map((p) => p.setting),
        bad,
      ).toEqual(["SIGNING_SECRET"]);
      expect(JSON.stringify(standard(bad))).not.toContain(bad.slice(6));
    }
    expect(validateSettings({ ...required, SIGNING_SECRET: "plain-secret-0123456789" })).toEqual([]);
  });

  it.each(["MAX_PAYLOAD_BYTES", "MAX_BODY_BYTES"])("refuses a %s whose worst case on the wire passes Upstash's request limit, naming the rule", (name) => {
    // 2 × value + 1 MiB ≤ 10 MiB: 4.5 MiB is the most; the old bounds (50 MiB, 100 MiB) are refused.
    expect(problemsWith(name, String(4.5 * 2 ** 20))).toEqual([]);
    for (const bad of [4.5 * 2 ** 20 + 1, 10 * 2 ** 20, 50 * 2 ** 20]) {
      expect(problemsWith(name, String(bad))).toEqual([
        {
          setting: name,
          message: `must be at most 4718592 (2 × value + 1048576 bytes of record and arguments must fit Upstash's 10485760-byte request limit: JSON escaping can double a value on the wire), got "${bad}"`,
        },
      ]);
    }
  });

  it("a bad shard is refused naming its entry and what is wrong with it", () => {
    const shards = (entries: unknown[]) => problemsWith("DELAYLINE_SHARDS", JSON.stringify(entries)).map((p) => p.message);
    const b = { name: "b", url: "https://b.upstash.io", tokenBinding: "UPSTASH_REDIS_REST_TOKEN" };
    expect(shards([b])).toEqual(['must list a shard named "main" (ids without a shard, and today\'s keys, are its)']);
    expect(shards([{ name: "main" }, { ...b, tokenBinding: "SHARD_B_TOKEN" }])).toEqual([
      'shard "b": its tokenBinding SHARD_B_TOKEN names no secret of the Worker',
    ]);
    expect(shards([{ name: "main" }, { ...b, prefix: "dl:{main}" }])).toEqual([
      'shard "b": its prefix\'s hash tag {main} is shard "main"\'s too; every shard needs a hash tag of its own',
    ]);
    expect(shards([{ name: "main" }, { name: "b" }])).toEqual(['at 1: shard "b" needs a url and a tokenBinding (only "main" may leave them out)']);
    expect(shards([{ name: "main" }, { ...b, name: "B" }])).toEqual(["at 1.name: must be 1–32 characters of a–z 0–9 -"]);
    expect(validateSettings({ ...required, DELAYLINE_SHARD_PINS: '{"emails":"b"}' })).toEqual([
      { setting: "DELAYLINE_SHARD_PINS", message: 'pins topic "emails" to shard "b", which DELAYLINE_SHARDS does not list' },
    ]);
  });

  it("without DELAYLINE_SHARDS there is one shard, main, on today's URL, token and prefix; with it each shard's token is read from its binding", () => {
    expect(settings({ ...required, DELAYLINE_PREFIX: "x:{y}" }).shards).toEqual([
      { name: "main", redisUrl: "http://127.0.0.1:1", redisToken: "rest-token", prefix: "x:{y}" },
    ]);
    const env = {
      ...required,
      DELAYLINE_SHARDS: JSON.stringify([{ name: "main" }, { name: "b", url: "https://b.upstash.io", tokenBinding: "SHARD_B_TOKEN" }]),
      SHARD_B_TOKEN: "b-token",
    } as Env;
    expect(settings(env).shards).toEqual([
      { name: "main", redisUrl: "http://127.0.0.1:1", redisToken: "rest-token", prefix: "dl:{main}" },
      { name: "b", redisUrl: "https://b.upstash.io", redisToken: "b-token", prefix: "dl:{b}" },
    ]);
  });

  it("validateSettings names each bad setting with its rule and never shows a secret", () => {
    const problems = validateSettings({ ...required, SIGNING_SECRET: "whsec_test123", TICK_CHUNK: "0" });
    expect(problems).toEqual([
      { setting: "SIGNING_SECRET", message: "must be at least 16 characters" },
      { setting: "TICK_CHUNK", message: 'must be a whole number from 1 to 1000, got "0"' },
    ]);
    expect(validateSettings({})).toEqual(
      expect.arrayContaining([expect.objectContaining({ setting: "UPSTASH_REDIS_REST_URL" }), expect.objectContaining({ setting: "DELAYLINE_TOKEN" })]),
    );
  });
});

describe("the declarations", () => {
  const bad: Record<string, string> = Object.fromEntries(SETTING_NAMES.map((n) => [n, RULES[n]?.bad[0] ?? "1.5"]));
  const valid = { ...required, UPSTASH_REDIS_REST_TOKEN: "rest-token" };

  it.each(SETTING_NAMES.filter((n) => n !== "UPSTASH_REDIS_REST_TOKEN"))("an invalid %s is refused, naming it", (name) => {
    const env = { ...valid, [name]: bad[name] };
    expect(() => settings(env)).toThrow(SettingsError);
    expect(() => settings(env)).toThrow(new RegExp(`: ${name} `));
  });

  it("a required setting left unset (or empty) is refused, naming it", () => {
    expect(() => settings({ ...valid, UPSTASH_REDIS_REST_TOKEN: "" })).toThrow(/UPSTASH_REDIS_REST_TOKEN is required/);
  });

  it("fill the Settings field each names, with its default when unset", () => {
    const s = settings({ ...valid }) as unknown as Record<string, unknown>;
    const fields = Object.values(SETTING_DECLARATIONS).map((d) => d.field);
    expect(Object.keys(s).sort()).toEqual(fields.filter((f) => f !== "signingSecret").sort());
    expect(s.tickPollMs).toBe(1_000);
    expect(s.prefix).toBe("dl:{main}");
    expect(settings({ ...valid, SIGNING_SECRET: "0123456789abcdef" }).signingSecret).toBe("0123456789abcdef");
  });

  it("derive TICK_LEAD_MS from TICK_POLL_MS when it is unset, at most 1,000", () => {
    expect(settings({ ...valid, TICK_POLL_MS: "300" }).tickLeadMs).toBe(300);
    expect(settings({ ...valid, TICK_POLL_MS: "5000" }).tickLeadMs).toBe(1_000);
    expect(settings({ ...valid, TICK_POLL_MS: "300", TICK_LEAD_MS: "0" }).tickLeadMs).toBe(0);
  });

  it("the table's generator refuses a document without its markers", () => {
    expect(() => withSettingsTable("# no table here\n")).toThrow(/markers/);
  });
});

describe("waitForHealthy", () => {
  it("gives up at once, with the Worker's words, when the Worker refuses its settings", async () => {
    const detail = 'invalid delayline settings: TICK_CHUNK must be a whole number from 1 to 1000, got "0"';
    let asked = 0;
    const server = createServer((_req, res) => {
      asked++;
      res.statusCode = 500;
      res.setHeader("content-type", "application/problem+json");
      res.end(JSON.stringify({ type: "urn:delayline:settings", title: "Internal Server Error", status: 500, detail }));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      await expect(waitForHealthy(url, 60_000)).rejects.toThrow(`the Worker refuses its settings: ${detail}`);
      expect(asked).toBe(1);
    } finally {
      server.close();
      server.closeAllConnections();
    }
  });
});

describe("wrangler configs", () => {
  /** A wrangler.toml's [vars], as name → value. */
  const varsIn = (toml: string) => {
    const section = /^\[vars\]\n([\s\S]*?)(?=^\[|(?![\s\S]))/m.exec(toml)?.[1] ?? "";
    return Object.fromEntries([...section.matchAll(/^([A-Z_]+)\s*=\s*"([^"]*)"/gm)].map((m) => [m[1]!, m[2]!]));
  };
  const varsOf = (path: string) => varsIn(readFileSync(join(import.meta.dirname, "../..", path), "utf8"));

  it("the parser reads a [vars] section, and only it (a control)", () => {
    expect(varsIn('name = "x"\n\n[vars]\nTICK_CHUNK = "7"\n\n[triggers]\nMAX_TOPICS = "9"\n')).toEqual({ TICK_CHUNK: "7" });
  });

  for (const path of ["wrangler.toml", "bench/worker/wrangler.toml", "wrangler.example.toml"]) {
    it(`${path} sets only settings that differ from their defaults, so a changed default reaches the deployment`, () => {
      const base = JSON.stringify(settings(required));
      for (const [name, value] of Object.entries(varsOf(path))) {
        expect(SETTING_NAMES, `${name} is not a setting`).toContain(name);
        expect(JSON.stringify(settings({ ...required, [name]: value })), `${name} = "${value}" is its default`).not.toBe(base);
      }
    });
  }
});
