/**
 * Listing a topic's scheduled and in-flight jobs with cursors that are
 * positions (score + id), not offsets.
 */
import { describe, expect, it } from "vitest";
import { queueFromSettings } from "../../../src/queue/from-settings.js";
import { LIST_PAGE_BYTES, type ListedJob, type ListJobsOptions, type ListPosition, type Queue } from "../../../src/queue/queue.js";
import { recorder, tickDeployment, uniqueTopic, VirtualClock } from "../tick/helpers.js";
import { testQueue } from "./helpers.js";

const T0 = 1_900_000_000_000;

/** Every page of a listing, in order. */
async function listAll(queue: Queue, topic: string, options: Omit<ListJobsOptions, "after">): Promise<ListedJob[][]> {
  const pages: ListedJob[][] = [];
  let after: ListPosition | undefined;
  for (;;) {
    const page = await queue.listJobs(topic, { ...options, ...(after ? { after } : {}) });
    pages.push(page.jobs);
    if (!page.next) return pages;
    after = page.next;
  }
}

/** (dueAt, id) strictly increasing: the set's own order, nothing twice. */
function expectInSetOrder(jobs: ListedJob[], scoreOf: (j: ListedJob) => number) {
  for (let i = 1; i < jobs.length; i++) {
    const a = jobs[i - 1]!;
    const b = jobs[i]!;
    expect(scoreOf(a) < scoreOf(b) || (scoreOf(a) === scoreOf(b) && a.id < b.id), `${a.id} before ${b.id}`).toBe(true);
  }
}

describe("listing jobs", () => {
  it("pages scheduled jobs in due order, ties in enqueue order, within a due window; items carry what the issue names", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    // 30 jobs over 10 due times, three per time: ties are ordered by id.
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) ids.push((await queue.enqueue({ topic: "l", payload: { i }, runAt: T0 + 1_000 * (i % 10) })).id);
    const byDue = [...ids].sort((a, b) => (ids.indexOf(a) % 10) - (ids.indexOf(b) % 10) || (a < b ? -1 : 1));

    const pages = await listAll(queue, "l", { state: "scheduled", limit: 7 });
    expect(pages.map((p) => p.length)).toEqual([7, 7, 7, 7, 2]);
    expect(pages.flat().map((j) => j.id)).toEqual(byDue);
    expect(pages[0]![0]).toEqual({ id: byDue[0], topic: "l", state: "scheduled", dueAt: T0, attempts: 0, lastError: null, createdAt: T0 });

    const window = (await listAll(queue, "l", { state: "scheduled", from: T0 + 2_000, to: T0 + 4_000, limit: 4 })).flat();
    expect(window.map((j) => j.dueAt)).toEqual([2, 2, 2, 3, 3, 3, 4, 4, 4].map((s) => T0 + 1_000 * s));

    const withPayload = await queue.listJobs("l", { state: "scheduled", limit: 2, payload: true });
    expect(withPayload.jobs.map((j) => j.payload)).toEqual([{ i: 0 }, { i: 10 }]);
  });

  it("a cursor whose job was claimed, cancelled or moved meanwhile still resumes right after its position, among ties too", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    // 20 jobs due at the same millisecond, then 5 later.
    const tied = (await queue.enqueueBatch(Array.from({ length: 20 }, (_, i) => ({ topic: "c", payload: i, runAt: T0 + 10 })))).map((r) => r.id);
    const later = (await queue.enqueueBatch(Array.from({ length: 5 }, (_, i) => ({ topic: "c", payload: i, runAt: T0 + 20 })))).map((r) => r.id);

    const first = await queue.listJobs("c", { state: "scheduled", limit: 6 });
    expect(first.jobs.map((j) => j.id)).toEqual(tied.slice(0, 6));
    // The cursor's job is cancelled, its neighbours too: the next page starts at the 7th tied job.
    expect(await queue.cancel(tied[5]!)).toBe("cancelled");
    expect(await queue.cancel(tied[4]!)).toBe("cancelled");
    const second = await queue.listJobs("c", { state: "scheduled", limit: 6, after: first.next! });
    expect(second.jobs.map((j) => j.id)).toEqual(tied.slice(6, 12));
    // The cursor's job moves to the end: the page still starts after its old position.
    expect(await queue.reschedule(tied[11]!, T0 + 30)).toBe("rescheduled");
    const third = await queue.listJobs("c", { state: "scheduled", limit: 10, after: second.next! });
    expect(third.jobs.map((j) => j.id)).toEqual([...tied.slice(12, 20), ...later.slice(0, 2)]);
    // Claimed: the 17 tied jobs left leave the set (the cursor's, later[1], stays; the moved one is due later).
    clock.now = T0 + 15;
    expect((await queue.claim("c", { max: 100, leaseMs: 60_000 })).jobs).toHaveLength(17);
    const rest = await queue.listJobs("c", { state: "scheduled", limit: 10, after: third.next! });
    expect(rest.jobs.map((j) => j.id)).toEqual([...later.slice(2), tied[11]]);
    expect(rest.next).toBeNull();
  });

  it("lists jobs in flight by lease deadline with their attempt, due time and last error", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    const a = await queue.enqueue({ topic: "f", payload: "a" });
    const b = await queue.enqueue({ topic: "f", payload: "b" });
    await queue.claim("f", { max: 1, leaseMs: 50_000 });
    await queue.settle("f", [{ id: a.id, attempt: 1, kind: "retry", at: T0 + 100, error: "busy" }]);
    clock.now = T0 + 100;
    await queue.claim("f", { max: 2, leaseMs: 10_000 });
    const { jobs, next } = await queue.listJobs("f", { state: "inflight", limit: 10 });
    expect(next).toBeNull();
    expect(jobs).toEqual(
      [
        { id: b.id, topic: "f", state: "inflight", dueAt: T0, attempts: 1, lastError: null, createdAt: T0, leaseExpiresAt: T0 + 10_100 },
        { id: a.id, topic: "f", state: "inflight", dueAt: T0 + 100, attempts: 2, lastError: "busy", createdAt: T0, leaseExpiresAt: T0 + 10_100 },
      ].sort((x, y) => (x.id < y.id ? -1 : 1)),
    );
    expect((await queue.listJobs("f", { state: "scheduled" })).jobs).toEqual([]);
  });

  it(`with payloads, a page ends once its records pass ${LIST_PAGE_BYTES} bytes, and the cursor goes on from there`, async () => {
    const { queue } = testQueue();
    const big = "x".repeat(300_000);
    await queue.enqueueBatch(Array.from({ length: 8 }, (_, i) => ({ topic: "b", payload: { i, big }, delayMs: 60_000 + i })));
    const pages = await listAll(queue, "b", { state: "scheduled", limit: 1_000, payload: true });
    expect(pages.map((p) => p.length)).toEqual([3, 3, 2]);
    expect(pages.flat().map((j) => (j.payload as { i: number }).i)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    // Without payloads no record is read: one page.
    expect((await listAll(queue, "b", { state: "scheduled", limit: 1_000 })).map((p) => p.length)).toEqual([8]);
  });

  it("paging 25,000 scheduled jobs 1,000 at a time while another queue enqueues and the tick claims on the same topic returns each job that stays scheduled exactly once", {
    timeout: 180_000,
  }, async () => {
    const clock = new VirtualClock(T0);
    // Claims take only due jobs: a chunk claimed ahead would wait out its jobs' due times, and the
    // virtual clock would move with it past the steps this test takes by hand.
    const d = tickDeployment({ TICK_LEAD_MS: "0" }, clock);
    const topic = uniqueTopic("page");
    const delivered = recorder(d.handlers, topic, clock);
    // 25,000 jobs over 50 s of due times, five per millisecond value (ties).
    const initial: string[] = [];
    for (let b = 0; b < 25; b++) {
      const batch = Array.from({ length: 1_000 }, (_, i) => ({ topic, payload: b * 1_000 + i, runAt: T0 + 1_000 + Math.floor((b * 1_000 + i) / 5) * 10 }));
      initial.push(...(await d.queue.enqueueBatch(batch)).map((r) => r.id));
    }
    // The other producer: a queue of its own on the same keys.
    const producer = queueFromSettings(d.settings, { now: () => clock.now() });
    const added: string[] = [];
    let seed = 7;
    const random = () => {
      seed = (seed * 48_271) % 2_147_483_647;
      return seed / 2_147_483_647;
    };

    const listed: ListedJob[] = [];
    let after: ListPosition | undefined;
    let step = 0;
    for (;;) {
      step++;
      const enqueue = async () => {
        const batch = Array.from({ length: 200 }, () => ({ topic, payload: "late", runAt: T0 + 1_000 + Math.floor(random() * 5_000) * 10 }));
        added.push(...(await producer.enqueueBatch(batch)).map((r) => r.id));
      };
      // The tick runs ahead of the pages for the first ten steps (3 s of due jobs a step, the pages cover 2 s), then stops.
      const claim = async () => {
        if (step > 10) return;
        clock.t += 3_000;
        for (;;) {
          const report = await d.runner(clock.now()).fanOut(topic, 100);
          if (!report.more) return;
        }
      };
      const [page] = await Promise.all([d.queue.listJobs(topic, { state: "scheduled", limit: 1_000, ...(after ? { after } : {}) }), enqueue(), claim()]);
      listed.push(...page.jobs);
      if (!page.next) break;
      after = page.next;
    }

    const counts = new Map<string, number>();
    for (const j of listed) counts.set(j.id, (counts.get(j.id) ?? 0) + 1);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    expectInSetOrder(listed, (j) => j.dueAt!);

    const stillScheduled = new Set((await listAll(d.queue, topic, { state: "scheduled", limit: 1_000 })).flat().map((j) => j.id));
    const survivors = initial.filter((id) => stillScheduled.has(id));
    expect(survivors.filter((id) => counts.get(id) !== 1)).toEqual([]);
    // The paging did run among claims and enqueues: many initial jobs were delivered, many stayed, some new ones were listed and some not.
    expect(delivered.length).toBeGreaterThan(5_000);
    expect(survivors.length).toBeGreaterThan(5_000);
    const addedListed = added.filter((id) => counts.has(id)).length;
    expect(addedListed).toBeGreaterThan(0);
    expect(addedListed).toBeLessThan(added.length);
    expect(step).toBeGreaterThanOrEqual(20);
  });
});
