import { describe, expect, it } from "vitest";
import type { Env } from "../../../src/env.js";
import { call, isolatedEnv } from "./helpers.js";

type Listed = { id: string; labels?: string[] };
const idsOf = (jobs: Listed[]) => jobs.map((j) => j.id);

/** Enqueues a batch into `topic` (pull, an hour off unless told), the i-th job with `labels(i)`; answers their ids. */
async function enqueue(env: Env, topic: string, n: number, labels: (i: number) => string[], extra: Record<string, unknown> = {}): Promise<string[]> {
  const jobs = Array.from({ length: n }, (_, i) => ({ topic, payload: { i }, delay: "1h", labels: labels(i), ...extra }));
  const res = await call(env, "/v1/jobs/batch", { body: { jobs } });
  expect(res.status).toBe(201);
  return res.body.jobs.map((j: { id: string }) => j.id);
}

/** Every page of a listing, through its cursors: the ids in order and how many pages it took. */
async function walk(env: Env, path: string, key = "jobs"): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const res = await call(env, `${path}${path.includes("?") ? "&" : "?"}${cursor ? `cursor=${cursor}` : ""}`);
    expect(res.status).toBe(200);
    ids.push(...idsOf(res.body[key]));
    cursor = res.body.nextCursor;
    pages++;
  } while (cursor);
  return { ids, pages };
}

/** Turns the pull topic's `ids` (claimed first) into dead letters. */
async function kill(env: Env, topic: string, ids: string[]) {
  const claimed = (await call(env, `/v1/topics/${topic}/claim`, { body: { max: 100 } })).body.jobs as Array<{ id: string }>;
  for (const id of ids) {
    expect(idsOf(claimed)).toContain(id);
    expect((await call(env, `/v1/jobs/${id}/nack`, { body: { attempt: 1, error: "boom", permanent: true } })).status).toBe(200);
  }
}

describe("job labels over HTTP", () => {
  it("stores a job's labels (deduplicated) and returns them in every read: the job, listings in each state, dead letters", async () => {
    const env = isolatedEnv();
    await call(env, "/v1/topics/work", { method: "PUT", body: { mode: "pull", maxAttempts: 1 } });
    const one = await call(env, "/v1/jobs", { body: { topic: "work", payload: 1, labels: ["tenant:42", "invoice", "tenant:42"] } });
    expect(one.status).toBe(201);
    const plain = (await call(env, "/v1/jobs", { body: { topic: "work", payload: 2, delay: "1h" } })).body.id;
    const job = await call(env, `/v1/jobs/${one.body.id}`);
    expect(job.body.labels).toEqual(["tenant:42", "invoice"]);
    expect((await call(env, `/v1/jobs/${plain}`)).body.labels).toBeUndefined();

    const scheduled = await call(env, "/v1/topics/work/jobs");
    expect(scheduled.body.jobs.find((j: Listed) => j.id === one.body.id).labels).toEqual(["tenant:42", "invoice"]);
    expect(scheduled.body.jobs.find((j: Listed) => j.id === plain).labels).toBeUndefined();
    const withPayload = await call(env, "/v1/topics/work/jobs?payload=true");
    expect(withPayload.body.jobs.find((j: Listed) => j.id === one.body.id).labels).toEqual(["tenant:42", "invoice"]);

    await call(env, "/v1/topics/work/claim", { body: { max: 1 } });
    const inflight = await call(env, "/v1/topics/work/jobs?state=inflight&label=invoice");
    expect(inflight.body.jobs).toEqual([expect.objectContaining({ id: one.body.id, state: "inflight", labels: ["tenant:42", "invoice"] })]);
    await call(env, `/v1/jobs/${one.body.id}/nack`, { body: { attempt: 1, error: "boom", permanent: true } });
    const dead = await call(env, "/v1/topics/work/jobs?state=dead&label=tenant:42");
    expect(dead.body.jobs).toEqual([expect.objectContaining({ id: one.body.id, state: "dead", labels: ["tenant:42", "invoice"] })]);
    const letters = await call(env, "/v1/topics/work/dead?label=invoice");
    expect(letters.body.entries).toEqual([expect.objectContaining({ id: one.body.id, labels: ["tenant:42", "invoice"] })]);
    expect((await call(env, "/v1/topics/work/dead")).body.entries[0].labels).toEqual(["tenant:42", "invoice"]);
  });

  it("refuses more than 8 labels, a bad label or a bad filter with 422, before reaching Redis", async () => {
    const env = isolatedEnv();
    // Nothing listens on port 9: a request that reached Redis would be a 503.
    const offline = isolatedEnv({ DELAYLINE_PREFIX: env.DELAYLINE_PREFIX, UPSTASH_REDIS_REST_URL: "http://127.0.0.1:9" });
    const nine = Array.from({ length: 9 }, (_, i) => `l${i}`);
    const bad = [
      { topic: "a", labels: nine },
      { topic: "a", labels: ["has space"] },
      { topic: "a", labels: [""] },
      { topic: "a", labels: ["x".repeat(65)] },
      { topic: "a", labels: ['quo"te'] },
      { topic: "a", labels: "one" },
      { topic: "a", labels: ["ok"], jobKey: "k", onConflict: "replace", payload: 1, delay: "1h", extra: ["too", "many"] },
    ];
    for (const body of bad) {
      const res = await call(offline, "/v1/jobs", { body });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.headers.get("content-type")).toBe("application/problem+json");
    }
    expect((await call(offline, "/v1/jobs/batch", { body: { jobs: [{ topic: "a" }, { topic: "a", labels: nine }] } })).status).toBe(422);
    expect((await call(offline, "/v1/topics/a/jobs?label=a%20b")).status).toBe(422);
    expect((await call(offline, "/v1/topics/a/jobs?label=x&flowKey=y")).status).toBe(422);
    expect((await call(offline, "/v1/topics/a/jobs/cancel", { body: { label: "x", flowKey: "y" } })).status).toBe(422);
    expect((await call(offline, "/v1/topics/a/dead?label=%22")).status).toBe(422);
    expect((await call(offline, "/v1/topics/a/dead?label=", { method: "DELETE" })).status).toBe(422);
    expect((await call(offline, "/v1/topics/a/dead/replay", { body: { label: "a b" } })).status).toBe(422);
    // A cursor of a walk by label is refused without the label, and the other way round.
    const ids = await enqueue(env, "a", 3, () => ["x"]);
    const byLabel = (await call(env, "/v1/topics/a/jobs?label=x&limit=1")).body.nextCursor as string;
    const plain = (await call(env, "/v1/topics/a/jobs?limit=1")).body.nextCursor as string;
    expect((await call(offline, `/v1/topics/a/jobs?cursor=${byLabel}`)).status).toBe(422);
    expect((await call(offline, `/v1/topics/a/jobs?label=x&cursor=${plain}`)).status).toBe(422);
    expect(idsOf((await call(env, `/v1/topics/a/jobs?label=x&cursor=${byLabel}`)).body.jobs)).toEqual(ids.slice(1));
  });

  it("lists a label's jobs in enqueue order through cursors, each once, and none of the others", async () => {
    const env = isolatedEnv();
    const ids = await enqueue(env, "mail", 300, (i) => (i % 3 === 0 ? ["t:1", "all"] : ["all"]));
    const t1 = ids.filter((_, i) => i % 3 === 0);
    const listed = await walk(env, "/v1/topics/mail/jobs?label=t:1&limit=7");
    expect(listed.ids).toEqual(t1);
    expect(listed.pages).toBe(Math.ceil(t1.length / 7));
    expect((await walk(env, "/v1/topics/mail/jobs?label=all&limit=100")).ids).toEqual(ids);
    expect((await call(env, "/v1/topics/mail/jobs?label=none")).body).toEqual({ jobs: [], nextCursor: null });
    // A window of due times still applies.
    const window = await call(env, `/v1/topics/mail/jobs?label=t:1&to=${new Date(Date.now() - 1000).toISOString()}`);
    expect(window.body.jobs).toEqual([]);
  });

  it("cancels a label's scheduled jobs through cursors (a dry run first names them), leaving the others", async () => {
    const env = isolatedEnv();
    const ids = await enqueue(env, "mail", 600, (i) => (i % 2 === 0 ? ["tenant:7"] : ["tenant:8"]));
    const seven = ids.filter((_, i) => i % 2 === 0);
    const dry = await call(env, "/v1/topics/mail/jobs/cancel", { body: { label: "tenant:7", dryRun: true } });
    expect(dry.body).toMatchObject({ dryRun: true, inflight: 0, ids: seven.slice(0, 20) });
    let cursor: string | null = null;
    let cancelled = 0;
    do {
      const body: Record<string, unknown> = { label: "tenant:7", ...(cursor ? { cursor } : {}) };
      const dryStep = await call(env, "/v1/topics/mail/jobs/cancel", { body: { ...body, dryRun: true } });
      const res = await call(env, "/v1/topics/mail/jobs/cancel", { body });
      expect(res.status).toBe(200);
      expect(res.body.cancelled).toBe(dryStep.body.cancelled);
      expect(res.body.nextCursor).toBe(dryStep.body.nextCursor);
      cancelled += res.body.cancelled;
      cursor = res.body.nextCursor;
    } while (cursor);
    expect(cancelled).toBe(300);
    expect((await call(env, `/v1/jobs/${seven[0]}`)).body.state).toBe("cancelled");
    expect((await call(env, `/v1/jobs/${ids[1]}`)).body.state).toBe("scheduled");
    // The cancelled jobs have left the label: a listing by it is empty, the other label's whole.
    expect((await walk(env, "/v1/topics/mail/jobs?label=tenant:7")).ids).toEqual([]);
    expect((await walk(env, "/v1/topics/mail/jobs?label=tenant:8&limit=1000")).ids).toEqual(ids.filter((_, i) => i % 2 === 1));
  });

  it("lists, replays and purges a label's dead letters, dry runs included; the walk leaves out other letters", async () => {
    const env = isolatedEnv();
    await call(env, "/v1/topics/work", { method: "PUT", body: { mode: "pull", maxAttempts: 1 } });
    const ids = await enqueue(env, "work", 6, (i) => (i < 3 ? ["red"] : ["blue"]), { delay: 0 });
    await kill(env, "work", ids);
    const red = ids.slice(0, 3);
    expect((await walk(env, "/v1/topics/work/dead?label=red&limit=2", "entries")).ids).toEqual(red);

    const dryReplay = await call(env, "/v1/topics/work/dead/replay", { body: { label: "red", dryRun: true } });
    expect(dryReplay.body).toMatchObject({ dryRun: true, replayed: 3, ids: red, nextCursor: null });
    const replay = await call(env, "/v1/topics/work/dead/replay", { body: { label: "red", error: "boom" } });
    expect(replay.body).toMatchObject({ replayed: 3, nextCursor: null });
    expect((await call(env, `/v1/jobs/${red[0]}`)).body.state).toBe("scheduled");
    expect(idsOf((await call(env, "/v1/topics/work/jobs?label=red")).body.jobs)).toEqual(red);
    expect((await call(env, "/v1/topics/work/dead?label=red")).body.entries).toEqual([]);

    const dryPurge = await call(env, "/v1/topics/work/dead?label=blue&dryRun=true", { method: "DELETE" });
    expect(dryPurge.body).toMatchObject({ dryRun: true, purged: 3, ids: ids.slice(3), nextCursor: null });
    expect((await call(env, "/v1/topics/work/dead?label=red", { method: "DELETE" })).body).toEqual({ purged: 0, nextCursor: null });
    expect((await call(env, "/v1/topics/work/dead?label=blue", { method: "DELETE" })).body).toEqual({ purged: 3, nextCursor: null });
    expect((await call(env, "/v1/topics/work/dead?label=blue")).body.entries).toEqual([]);
    expect((await call(env, "/v1/topics/work/jobs?state=dead&label=blue")).body.jobs).toEqual([]);
  });

  it("an upsert's replacement takes the new labels: the job leaves the labels it lost and joins those it gained", async () => {
    const env = isolatedEnv();
    const first = await call(env, "/v1/jobs", { body: { topic: "sync", payload: 1, delay: "1h", jobKey: "user-1", labels: ["old", "kept"] } });
    expect(first.body.result).toBe("created");
    const again = await call(env, "/v1/jobs", { body: { topic: "sync", payload: 2, delay: "1h", jobKey: "user-1", labels: ["kept", "new"] } });
    expect(again.body).toMatchObject({ id: first.body.id, result: "replaced" });
    expect((await call(env, `/v1/jobs/${first.body.id}`)).body.labels).toEqual(["kept", "new"]);
    expect((await call(env, "/v1/topics/sync/jobs?label=old")).body.jobs).toEqual([]);
    expect(idsOf((await call(env, "/v1/topics/sync/jobs?label=kept")).body.jobs)).toEqual([first.body.id]);
    expect(idsOf((await call(env, "/v1/topics/sync/jobs?label=new")).body.jobs)).toEqual([first.body.id]);
    const bare = await call(env, "/v1/jobs", { body: { topic: "sync", payload: 3, delay: "1h", jobKey: "user-1" } });
    expect(bare.body.result).toBe("replaced");
    expect((await call(env, `/v1/jobs/${first.body.id}`)).body.labels).toBeUndefined();
    expect((await call(env, "/v1/topics/sync/jobs?label=kept")).body.jobs).toEqual([]);
  });

  it("finished jobs leave a label's listing: succeeded, cancelled one by one, deleted with their topic", async () => {
    const env = isolatedEnv();
    await call(env, "/v1/topics/work", { method: "PUT", body: { mode: "pull" } });
    const [a, b, c] = await enqueue(env, "work", 3, () => ["l"], { delay: 0 });
    const claimed = (await call(env, "/v1/topics/work/claim", { body: { max: 1 } })).body.jobs[0];
    expect(claimed.id).toBe(a);
    expect((await call(env, `/v1/jobs/${a}/ack`, { body: { attempt: 1 } })).status).toBe(200);
    expect((await call(env, `/v1/jobs/${b}`, { method: "DELETE" })).status).toBe(200);
    expect(idsOf((await call(env, "/v1/topics/work/jobs?label=l")).body.jobs)).toEqual([c]);
    expect((await call(env, "/v1/topics/work?purge=true", { method: "DELETE" })).status).toBe(200);
    expect((await call(env, "/v1/topics/work/jobs?label=l")).body.jobs).toEqual([]);
  });

  it("a letter replayed into another topic keeps its labels there; a bulk cancel by label holds to its due window", async () => {
    const env = isolatedEnv();
    await call(env, "/v1/topics/work", { method: "PUT", body: { mode: "pull", maxAttempts: 1 } });
    const [letter] = await enqueue(env, "work", 1, () => ["moved:1"], { delay: 0 });
    await kill(env, "work", [letter!]);
    const moved = await call(env, "/v1/topics/work/dead/replay", { body: { label: "moved:1", topic: "fixed", delay: "1h" } });
    const job = moved.body.movedTo[letter!] as string;
    expect((await call(env, `/v1/jobs/${job}`)).body.labels).toEqual(["moved:1"]);
    expect(idsOf((await call(env, "/v1/topics/fixed/jobs?label=moved:1")).body.jobs)).toEqual([job]);
    expect((await call(env, "/v1/topics/work/dead?label=moved:1")).body.entries).toEqual([]);

    const soon = await enqueue(env, "win", 3, () => ["w"], { delay: "1h" });
    const late = await enqueue(env, "win", 2, () => ["w"], { delay: "3h" });
    const dueTo = new Date(Date.now() + 2 * 3_600_000).toISOString();
    expect((await call(env, "/v1/topics/win/jobs/cancel", { body: { label: "w", dueTo } })).body).toEqual({ cancelled: 3, inflight: 0, nextCursor: null });
    expect(idsOf((await call(env, "/v1/topics/win/jobs?label=w")).body.jobs)).toEqual(late);
    for (const id of soon) expect((await call(env, `/v1/jobs/${id}`)).body.state).toBe("cancelled");
  });
});
