import { describe, expect, it } from "vitest";
import { settings } from "../../../src/env.js";
import { keys as keysFor } from "../../../src/queue/keys.js";
import { createRedis } from "../../../src/queue/redis.js";
import { call, isolatedEnv } from "./helpers.js";

const put = (env: ReturnType<typeof isolatedEnv>, id: string, body: unknown) => call(env, `/v1/schedules/${id}`, { method: "PUT", body });

describe("PUT /v1/schedules/:id validation", () => {
  it("refuses a bad schedule with a 422 naming what is wrong, and stores nothing", async () => {
    const env = isolatedEnv();
    const cases: Array<[unknown, RegExp, string]> = [
      [{ topic: "t" }, /exactly one of cron or every/, "cron"],
      [{ topic: "t", cron: "* * * * *", every: "5s" }, /exactly one of cron or every/, "cron"],
      [{ topic: "t", cron: "0 9 * * *", timezone: "Mars/Olympus_Mons" }, /"Mars\/Olympus_Mons" is not an IANA time zone/, "timezone"],
      [{ topic: "t", cron: "61 * * * *" }, /minute/, "cron"],
      [{ topic: "t", cron: "* * * * * * *" }, /5 or 6 parts/, "cron"],
      [{ topic: "t", cron: "0 0 30 2 *" }, /never matches/, "cron"],
      [{ topic: "t", every: "500ms" }, /at least 1 s/, "every"],
      [{ topic: "t", every: "1m", startAt: "2027-01-02T00:00:00Z", endAt: "2027-01-01T00:00:00Z" }, /before startAt/, "endAt"],
      [{ topic: "no spaces", every: "1m" }, /A–Z/, "topic"],
      [{ topic: "t", every: "1m", surprise: 1 }, /./, ""],
      // Times past the latest date a client reads (these were stored, then broke every listing).
      [{ topic: "t", every: "99999999999d" }, /at most 3650 days/, "every"],
      [{ topic: "t", every: 8_640_000_000_000_000 }, /at most 3650 days/, "every"],
      [{ topic: "t", every: "3651d" }, /at most 3650 days/, "every"],
      [{ topic: "t", every: "1h", startAt: 8_639_999_999_999_999 }, /no later than 9999-12-31T23:59:59.999Z/, "startAt"],
      [{ topic: "t", cron: "0 9 * * *", startAt: 8_640_000_000_000_000 }, /no later than/, "startAt"],
      [{ topic: "t", every: "1h", endAt: 8_640_000_000_000_000 }, /no later than/, "endAt"],
      [{ topic: "t", every: "1h", startAt: 8_640_000_000_000_001 }, /./, "startAt"],
      // In range as an instant, but its next runs fall in the year 10000 where the schedule's time zone is: no date shows them.
      [{ topic: "t", cron: "* * * * *", timezone: "Pacific/Kiritimati", startAt: "9999-12-31T23:00:00Z" }, /cannot be shown as a date/, "startAt"],
    ];
    for (const [body, message, path] of cases) {
      const r = await put(env, "s1", body);
      expect(r.status, JSON.stringify(body)).toBe(422);
      expect(r.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      const errors = r.body.errors as Array<{ path: string; message: string }>;
      expect(
        errors.some((e) => message.test(e.message) && (path === "" || e.path === path)),
        JSON.stringify(errors),
      ).toBe(true);
    }
    expect((await put(env, "bad id!", { topic: "t", every: "1m" })).status).toBe(422);
    expect((await call(env, "/v1/schedules")).body).toEqual({ schedules: [], nextCursor: null, partial: false, missingShards: [] });
    // Nothing reached Redis: none of the schedules' keys (nor a topic) exists under the test's prefix.
    const redis = createRedis(settings(env));
    const k = keysFor(env.DELAYLINE_PREFIX!);
    expect(await redis.exists(k.scheduleDefs, k.scheduleState, k.scheduleIds, k.schedulesDue, k.topics, k.topicIndex)).toBe(0);
  });

  it("a refused replacement leaves the stored schedule as it was", async () => {
    const env = isolatedEnv();
    const created = await put(env, "kept", { topic: "t", every: "1h" });
    expect(created.status).toBe(201);
    const redis = createRedis(settings(env));
    const k = keysFor(env.DELAYLINE_PREFIX!);
    const before = await Promise.all([redis.hget(k.scheduleDefs, "kept"), redis.hget(k.scheduleState, "kept"), redis.zscore(k.schedulesDue, "kept")]);
    const refused = await put(env, "kept", { topic: "t", every: "99999999999d" });
    expect(refused.status).toBe(422);
    expect(refused.body.errors).toEqual([expect.objectContaining({ path: "every" })]);
    expect(await Promise.all([redis.hget(k.scheduleDefs, "kept"), redis.hget(k.scheduleState, "kept"), redis.zscore(k.schedulesDue, "kept")])).toEqual(before);
    expect((await call(env, "/v1/schedules/kept")).body).toEqual(created.body);
  });
});

describe("a schedule stored with a time no date holds", () => {
  it("cannot break a listing: GET /v1/schedules and GET /v1/schedules/:id answer 200, the bad fields null and named, the rest listed; a PUT mends it", async () => {
    const env = isolatedEnv();
    for (const id of ["a", "bad", "c"]) expect((await put(env, id, { topic: "t", every: "1h" })).status).toBe(201);
    // What an earlier version stored for `every: "99999999999d"` (and a startAt near the largest date), written straight into Redis.
    const redis = createRedis(settings(env));
    const k = keysFor(env.DELAYLINE_PREFIX!);
    const def = JSON.parse((await redis.hget<string>(k.scheduleDefs, "bad"))!);
    const state = JSON.parse((await redis.hget<string>(k.scheduleState, "bad"))!);
    const huge = 8_639_999_999_999_999 + 99_999_999_999 * 86_400_000;
    await redis.hset(k.scheduleDefs, {
      bad: JSON.stringify({ ...def, every: 99_999_999_999 * 86_400_000, anchor: huge, startAt: huge, endAt: 8_640_000_000_000_001 }),
    });
    // next: 1e400 is past a double's range (JSON gives Infinity); lastRunAt past the largest date.
    const stateText = JSON.stringify({ ...state, next: 0, lastRunAt: 1e20 }).replace('"next":0', '"next":1e400');
    expect(stateText).toContain('"next":1e400');
    await redis.hset(k.scheduleState, { bad: stateText });

    const list = await call(env, "/v1/schedules");
    expect(list.status).toBe(200);
    expect(list.body.schedules.map((s: { id: string }) => s.id)).toEqual(["a", "bad", "c"]);
    const [a, bad, c] = list.body.schedules;
    for (const good of [a, c]) {
      expect(good.unreadable).toBeUndefined();
      expect(Date.parse(good.nextRunAt)).toBeGreaterThan(Date.now());
      expect(good.nextRuns).toHaveLength(5);
    }
    expect(bad).toMatchObject({
      id: "bad",
      topic: "t",
      startAt: null,
      endAt: null,
      nextRunAt: null,
      nextRuns: [],
      lastRunAt: null,
      createdAt: def.createdAt ? expect.any(String) : null,
    });
    expect(bad.unreadable.map((u: { path: string }) => u.path).sort()).toEqual(["endAt", "lastRunAt", "nextRunAt", "startAt"]);
    const one = await call(env, "/v1/schedules/bad");
    expect(one.status).toBe(200);
    expect(one.body).toEqual(bad);

    // Writing it again with a good timing mends it.
    const mended = await put(env, "bad", { topic: "t", every: "1h" });
    expect(mended.status).toBe(200);
    expect(mended.body.unreadable).toBeUndefined();
    expect(Date.parse(mended.body.nextRunAt)).toBeGreaterThan(Date.now());
  });
});

describe("a schedule's next occurrences", () => {
  it("0 9 * * 1-5 in Europe/Berlin: weekday 08:00Z in winter, 07:00Z in summer, with the offset", async () => {
    const env = isolatedEnv();
    const winter = await put(env, "digest", {
      topic: "mail",
      cron: "0 9 * * 1-5",
      timezone: "Europe/Berlin",
      startAt: "2027-01-01T00:00:00Z",
      payload: { kind: "digest" },
    });
    expect(winter.status).toBe(201);
    expect(winter.body.nextRuns).toEqual([
      "2027-01-01T09:00:00+01:00",
      "2027-01-04T09:00:00+01:00",
      "2027-01-05T09:00:00+01:00",
      "2027-01-06T09:00:00+01:00",
      "2027-01-07T09:00:00+01:00",
    ]);
    expect(winter.body.nextRuns.map((t: string) => new Date(t).toISOString())).toEqual([
      "2027-01-01T08:00:00.000Z",
      "2027-01-04T08:00:00.000Z",
      "2027-01-05T08:00:00.000Z",
      "2027-01-06T08:00:00.000Z",
      "2027-01-07T08:00:00.000Z",
    ]);
    expect(winter.body.nextRunAt).toBe("2027-01-01T09:00:00+01:00");
    const summer = await put(env, "digest", { topic: "mail", cron: "0 9 * * 1-5", timezone: "Europe/Berlin", startAt: "2027-07-01T00:00:00Z" });
    expect(summer.status).toBe(200);
    expect(summer.body.nextRuns.map((t: string) => new Date(t).toISOString())).toEqual([
      "2027-07-01T07:00:00.000Z",
      "2027-07-02T07:00:00.000Z",
      "2027-07-05T07:00:00.000Z",
      "2027-07-06T07:00:00.000Z",
      "2027-07-07T07:00:00.000Z",
    ]);
    expect(summer.body.nextRuns[0]).toBe("2027-07-01T09:00:00+02:00");
  });

  it("daylight saving in Europe/Berlin and America/New_York, 2027: a missing time fires once after the gap, a repeated one once", async () => {
    const env = isolatedEnv();
    const runs = async (id: string, cron: string, timezone: string, startAt: string) =>
      ((await put(env, id, { topic: "t", cron, timezone, startAt })).body.nextRuns as string[]).slice(0, 3).map((t) => new Date(t).toISOString());
    const cases = [
      // Berlin springs forward on 28 March (02:00 → 03:00): 02:30 does not exist, and runs at 03:00 CEST.
      { id: "b-spring", cron: "30 2 * * *", timezone: "Europe/Berlin", startAt: "2027-03-27", want: ["03-27T01:30", "03-28T01:00", "03-29T00:30"] },
      // It falls back on 31 October (03:00 → 02:00): 02:30 happens twice, and runs once, at the first.
      { id: "b-fall", cron: "30 2 * * *", timezone: "Europe/Berlin", startAt: "2027-10-30", want: ["10-30T00:30", "10-31T00:30", "11-01T01:30"] },
      // New York springs forward on 14 March (02:00 → 03:00) and falls back on 7 November (02:00 → 01:00).
      { id: "ny-spring", cron: "30 2 * * *", timezone: "America/New_York", startAt: "2027-03-13", want: ["03-13T07:30", "03-14T07:00", "03-15T06:30"] },
      { id: "ny-fall", cron: "30 1 * * *", timezone: "America/New_York", startAt: "2027-11-06", want: ["11-06T05:30", "11-07T05:30", "11-08T06:30"] },
    ];
    for (const { id, cron, timezone, startAt, want } of cases) {
      expect(await runs(id, cron, timezone, `${startAt}T00:00:00Z`), id).toEqual(want.map((t) => `2027-${t}:00.000Z`));
    }
  });

  it("6 fields with seconds, every, startAt, endAt and limit", async () => {
    const env = isolatedEnv();
    const secs = await put(env, "secs", { topic: "t", cron: "*/5 * * * * *", startAt: "2027-01-01T00:00:01Z" });
    expect(secs.body.nextRuns).toEqual([
      "2027-01-01T00:00:05Z",
      "2027-01-01T00:00:10Z",
      "2027-01-01T00:00:15Z",
      "2027-01-01T00:00:20Z",
      "2027-01-01T00:00:25Z",
    ]);
    const every = await put(env, "every", { topic: "t", every: "90s", startAt: "2027-01-01T00:00:00Z", endAt: "2027-01-01T00:04:00Z" });
    expect(every.body).toMatchObject({ every: 90_000, cron: null, endAt: "2027-01-01T00:04:00Z" });
    expect(every.body.nextRuns).toEqual(["2027-01-01T00:00:00Z", "2027-01-01T00:01:30Z", "2027-01-01T00:03:00Z"]);
    const limited = await put(env, "limited", { topic: "t", every: "1h", startAt: "2027-01-01T00:00:00Z", limit: 2 });
    expect(limited.body.nextRuns).toEqual(["2027-01-01T00:00:00Z", "2027-01-01T01:00:00Z"]);
    // Without startAt, an interval's first occurrence is one interval after the schedule was made.
    const before = Date.now();
    const plain = await put(env, "plain", { topic: "t", every: "30s" });
    const first = Date.parse(plain.body.nextRunAt);
    expect(first).toBeGreaterThanOrEqual(before + 30_000);
    expect(first).toBeLessThanOrEqual(Date.now() + 30_000);
  });
});

describe("a schedule's life", () => {
  it("create, replace, read, list in pages, pause, resume, delete", async () => {
    const env = isolatedEnv();
    const created = await put(env, "a", { topic: "t", cron: "0 0 1 1 *", payload: { n: 1 }, maxAttempts: 2, backoff: { type: "fixed", delay: "5s" } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      id: "a",
      topic: "t",
      payload: { n: 1 },
      maxAttempts: 2,
      backoff: { type: "fixed", delay: 5_000 },
      paused: false,
      runs: 0,
      lastRunAt: null,
      lastJobId: null,
      lastJobState: null,
      grace: 60_000,
      timezone: "UTC",
    });
    // A replacement with the same timing keeps the next occurrence; a new payload is taken.
    const replaced = await put(env, "a", { topic: "t", cron: "0 0 1 1 *", payload: { n: 2 } });
    expect(replaced.status).toBe(200);
    expect(replaced.body.nextRunAt).toBe(created.body.nextRunAt);
    expect(replaced.body.createdAt).toBe(created.body.createdAt);
    expect((await call(env, "/v1/schedules/a")).body.payload).toEqual({ n: 2 });
    // A new expression takes effect from its own next occurrence.
    const moved = await put(env, "a", { topic: "t", cron: "0 0 1 7 *", payload: { n: 2 } });
    expect(moved.body.nextRunAt).toMatch(/^\d{4}-07-01T00:00:00Z$/);
    expect(Date.parse(moved.body.nextRunAt)).toBeGreaterThan(Date.now());
    await put(env, "a", { topic: "t", cron: "0 0 1 1 *", payload: { n: 2 } });

    for (const id of ["b", "c", "d", "e"]) expect((await put(env, id, { topic: "t", every: "1h" })).status).toBe(201);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await call(env, `/v1/schedules?limit=2${cursor ? `&cursor=${cursor}` : ""}`);
      expect(page.status).toBe(200);
      expect(page.body.schedules.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.schedules.map((s: { id: string }) => s.id));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(seen).toEqual(["a", "b", "c", "d", "e"]);

    const paused = await call(env, "/v1/schedules/b/pause", { method: "POST" });
    expect(paused.body).toMatchObject({ paused: true, nextRunAt: null, nextRuns: [] });
    const resumed = await call(env, "/v1/schedules/b/resume", { method: "POST" });
    expect(resumed.body.paused).toBe(false);
    expect(Date.parse(resumed.body.nextRunAt)).toBeGreaterThan(Date.now());

    expect((await call(env, "/v1/schedules/b", { method: "DELETE" })).status).toBe(204);
    const gone = await call(env, "/v1/schedules/b");
    expect(gone.status).toBe(404);
    expect(gone.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect((await call(env, "/v1/schedules/b", { method: "DELETE" })).status).toBe(404);
    expect((await call(env, "/v1/schedules/b/pause", { method: "POST" })).status).toBe(404);
  });

  it("needs the token, and refuses a target the deployment would not deliver to", async () => {
    const env = isolatedEnv({ ALLOW_PRIVATE_TARGETS: "false" });
    expect((await call(env, "/v1/schedules", { token: null })).status).toBe(401);
    const refused = await put(env, "x", { topic: "t", every: "1m", target: { url: "http://127.0.0.1:9/hook" } });
    expect(refused.status).toBe(422);
    expect(refused.body.errors[0].path).toBe("target.url");
    expect((await call(env, "/v1/schedules/x")).status).toBe(404);
  });
});
