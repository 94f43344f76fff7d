/**
 * The dashboard and /metrics against the whole local stack (`npm start`:
 * redis-server, bridge, the Worker in workerd, the cron driver) with live
 * data: jobs delivered over http to a local receiver, some of them dead.
 * The page is driven in Debian's chromium; screenshots are kept in
 * test-results/ (dashboard.png, job-browser.png, flow-keys.png, schedules.png).
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { Delayline } from "../../src/client/index.js";
import { Api } from "../../harness/api.js";
import { artifactDir, countRequests, launchChromium } from "../browser.js";
import { installHelp, testTools } from "../tools.js";
import { startLocalStack, type LocalStack } from "../local-stack.js";

let stack: LocalStack;
let receiver: Server;
let dl: Delayline;
/** The receiver's base URL. */
let target: string;
const OK = 20;
const DEAD = 3;

beforeAll(async () => {
  // /ok always answers 200; /fail-once answers 500 to a job's first delivery and 200 after.
  const failedOnce = new Set<string>();
  receiver = createServer((req, res) => {
    req.resume();
    const id = String(req.headers["delayline-job-id"]);
    if (req.url === "/fail-once" && !failedOnce.has(id)) {
      failedOnce.add(id);
      res.statusCode = 500;
    }
    res.end();
  });
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", () => r()));
  target = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

  stack = await startLocalStack({ TICK_POLL_MS: "100" });
  dl = new Delayline({ baseUrl: stack.url, token: stack.token });
  await dl.topics.configure("dash-fail", { maxAttempts: 1 });
  await dl.jobs.enqueueBatch([
    ...Array.from({ length: OK }, (_, i) => ({ topic: "dash-ok", payload: { i }, delay: (i % 10) * 200, target: { url: `${target}/ok` } })),
    ...Array.from({ length: 5 }, (_, i) => ({ topic: "dash-ok", payload: { later: i }, delay: "1h" })),
    ...Array.from({ length: DEAD }, (_, i) => ({ topic: "dash-fail", payload: { i }, target: { url: `${target}/fail-once` } })),
  ]);
  // Wait for the tick to deliver them all and for a backlog sample.
  for (let i = 0; i < 240; i++) {
    const s = await dl.stats.get({ minutes: 5 });
    const ok = s.topics.find((t) => t.topic === "dash-ok");
    const fail = s.topics.find((t) => t.topic === "dash-fail");
    if (ok?.counters.succeeded === OK && fail?.dead === DEAD && ok.series.some((p) => p.scheduled !== null)) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`the stack did not process the jobs in time:\n${JSON.stringify(await dl.stats.get({ minutes: 1 }))}\n${stack.output()}`);
}, 150_000);

/** A page that records console errors, page errors, failed requests and any request off the stack. */
async function watchedPage(browser: Awaited<ReturnType<typeof launchChromium>>, height: number) {
  const page = await browser.newPage({ viewport: { width: 1400, height } });
  const problems: string[] = [];
  page.on("console", (m) => m.type() === "error" && problems.push(m.text()));
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("requestfailed", (r) => problems.push(`failed: ${r.url()}`));
  page.on("request", (r) => !r.url().startsWith(`${stack.url}/`) && problems.push(`off-site: ${r.url()}`));
  return { page, problems };
}

/** A watched page of the dashboard, signed in with the stack's token. */
async function signedInPage(browser: Awaited<ReturnType<typeof launchChromium>>, height: number) {
  const watched = await watchedPage(browser, height);
  await watched.page.goto(`${stack.url}/dashboard`);
  await watched.page.locator("#token").fill(stack.token);
  await watched.page.locator("#login button[type=submit]").click();
  return watched;
}

afterAll(async () => {
  await stack?.stop();
  await new Promise((r) => receiver?.close(() => r(undefined)));
});

it("the dashboard shows live data, draws every chart, replaying a dead job lowers the dead count, and replay all and purge preview their dry run", {
  timeout: 90_000,
}, async () => {
  const browser = await launchChromium();
  try {
    const { page, problems } = await watchedPage(browser, 1000);

    await page.goto(`${stack.url}/dashboard`);
    // The icon the page names is there: the browser fetches it (out of the page's sight) and logs a 404 as a console error.
    const icon = await page.evaluate(`fetch(document.querySelector("link[rel~=icon]").href).then((r) => [r.status, r.headers.get("content-type")])`);
    expect(icon).toEqual([200, expect.stringMatching(/^image\//)]);
    // A wrong token is refused at the door.
    await page.locator("#token").fill("not-the-token");
    await page.locator("#login button[type=submit]").click();
    await page.locator("#login-error", { hasText: "not accepted" }).waitFor();
    // The browser logs the refused request (401) as a console error; that one is expected, any other is not.
    const refused = problems.findIndex((p) => /status of 401/.test(p));
    expect(refused, problems.join("\n")).toBeGreaterThanOrEqual(0);
    problems.splice(refused, 1);

    await page.locator("#token").fill(stack.token);
    await page.locator("#login button[type=submit]").click();
    const okRow = page.locator('#topics tr[data-topic="dash-ok"]');
    const failRow = page.locator('#topics tr[data-topic="dash-fail"]');
    await okRow.waitFor();
    await failRow.locator('[data-field="dead"]', { hasText: String(DEAD) }).waitFor();
    expect(await okRow.locator('[data-field="scheduled"]').textContent()).toBe("5");
    expect(await page.locator('#heartbeat [data-item="rounds"] b').textContent()).toMatch(/^[\d,]+$/);

    // Every chart holds points.
    for (const chart of ["throughput", "backlog", "lateness"]) {
      const box = page.locator(`#chart-${chart}`);
      await expect.poll(async () => Number(await box.getAttribute("data-points")), { timeout: 10_000, message: chart }).toBeGreaterThan(0);
      expect(await box.locator("canvas").count(), chart).toBe(1);
    }
    // The token lives in this tab's sessionStorage.
    expect(await page.evaluate("sessionStorage.getItem('delayline.token')")).toBe(stack.token);

    // Pause and resume through the buttons.
    await okRow.locator('[data-action="pause"]').click();
    await okRow.locator(".badge", { hasText: "paused" }).waitFor();
    expect((await dl.topics.get("dash-ok")).settings.paused).toBe(true);
    await okRow.locator('[data-action="resume"]').click();
    await okRow.locator(".badge", { hasText: "active" }).waitFor();

    // Replay one dead job from the dead-letter browser: it is delivered again (the receiver accepts it now).
    await failRow.locator('[data-field="dead"] button').click();
    await page
      .locator("#dead-list tbody tr")
      .nth(DEAD - 1)
      .waitFor();
    await page.locator("#dead-list tbody tr").first().locator('[data-action="replay"]').click();
    await expect.poll(() => page.locator("#dead-list tbody tr").count(), { timeout: 10_000 }).toBe(DEAD - 1);
    await failRow.locator('[data-field="dead"]', { hasText: String(DEAD - 1) }).waitFor({ timeout: 10_000 });
    await expect.poll(async () => (await dl.topics.get("dash-fail")).counters.succeeded, { timeout: 20_000 }).toBe(1);

    // Replay all and purge all show their dry run first; Back leaves every letter where it was.
    const left = (await dl.deadLetters.list("dash-fail")).entries.map((e) => e.id);
    expect(left).toHaveLength(DEAD - 1);
    const preview = page.locator("#bulk-preview");
    for (const [button, verb] of [
      ["#dead-replay-all", "Replay"],
      ["#dead-purge", "Purge"],
    ] as const) {
      await page.locator(button).click();
      await preview.waitFor();
      expect(await page.locator("#bulk-preview-text").textContent()).toBe(`${verb} ${DEAD - 1} dead letters of dash-fail?`);
      expect((await page.locator("#bulk-preview-ids li").allTextContents()).sort()).toEqual([...left].sort());
      expect(await page.locator("#bulk-preview-warning").isVisible()).toBe(verb === "Purge");
      expect(await page.locator("#bulk-preview-go").textContent()).toBe(`${verb} ${DEAD - 1}`);
      await page.locator("#bulk-preview-back").click();
      await preview.waitFor({ state: "hidden" });
    }
    expect((await dl.deadLetters.list("dash-fail")).entries.map((e) => e.id)).toEqual(left);
    expect(await page.locator("#dead-list tbody tr").count()).toBe(DEAD - 1);

    await page.screenshot({ path: join(artifactDir(), "dashboard.png"), fullPage: true });
    expect(problems).toEqual([]);
  } finally {
    await browser.close();
  }
});

it("the job browser lists a topic's scheduled jobs, opens one, cancels one and a selection (after its dry run's preview); the job view shows a dead job's attempts; the search opens a job by id", {
  timeout: 90_000,
}, async () => {
  const scheduled = (await dl.jobs.list("dash-ok")).jobs.map((j) => j.id);
  expect(scheduled).toHaveLength(5);
  const [dead] = (await dl.deadLetters.list("dash-fail")).entries;
  expect(dead).toBeDefined();
  const browser = await launchChromium();
  try {
    const { page, problems } = await signedInPage(browser, 1200);
    const okRow = page.locator('#topics tr[data-topic="dash-ok"]');

    // The scheduled count opens the browser: the five jobs due in an hour, in due order.
    await okRow.locator('[data-field="scheduled"] button').click();
    const rows = page.locator("#jobs-list tbody tr");
    await rows.nth(4).waitFor();
    const listed = async () => Promise.all(Array.from({ length: await rows.count() }, (_, i) => rows.nth(i).getAttribute("data-job")));
    expect(await listed()).toEqual(scheduled);
    expect(await page.locator("#jobs-state").inputValue()).toBe("scheduled");

    // A job opens with its facts, payload and (no) attempts.
    await page.locator(`#jobs-list tr[data-job="${scheduled[0]}"] [data-action="open"]`).click();
    await page.locator("#job-id", { hasText: scheduled[0]! }).waitFor();
    expect(JSON.parse((await page.locator("#job-payload").textContent())!)).toEqual({ later: 0 });
    expect(await page.locator('#job-facts [data-fact="state"]').textContent()).toBe("scheduled");
    await page.locator("#job-no-history").waitFor();

    // Cancel one, then a selection of two.
    await page.locator(`#jobs-list tr[data-job="${scheduled[0]}"] [data-action="cancel"]`).click();
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(4);
    for (const id of scheduled.slice(1, 3)) await page.locator(`#jobs-list tr[data-job="${id}"] [data-action="select"]`).check();
    const cancelSelected = page.locator("#jobs-cancel-selected");
    expect(await cancelSelected.textContent()).toBe("Cancel 2 selected");
    // The selection's dry run comes first: the two ids, and nothing cancelled until Cancel 2 is pressed.
    await cancelSelected.click();
    await page.locator("#bulk-preview").waitFor();
    expect(await page.locator("#bulk-preview-text").textContent()).toBe("Cancel 2 scheduled jobs of dash-ok?");
    expect(await page.locator("#bulk-preview-ids li").allTextContents()).toEqual(scheduled.slice(1, 3));
    expect((await dl.jobs.get(scheduled[1]!))!.state).toBe("scheduled");
    await page.locator("#bulk-preview-go", { hasText: "Cancel 2" }).click();
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(2);
    expect(await listed()).toEqual(scheduled.slice(3));
    for (const id of scheduled.slice(0, 3)) expect((await dl.jobs.get(id))!.state, id).toBe("cancelled");
    await okRow.locator('[data-field="scheduled"]', { hasText: "2" }).waitFor({ timeout: 10_000 });

    // The search opens a dead job by id: its attempt, with the receiver's 500.
    await page.locator("#job-search-id").fill(dead!.id);
    await page.locator("#job-search button[type=submit]").click();
    await page.locator("#job-id", { hasText: dead!.id }).waitFor();
    expect(await page.locator('#job-facts [data-fact="state"]').textContent()).toBe("dead");
    const attempt = page.locator('#job-history tbody tr[data-attempt="1"]');
    await attempt.waitFor();
    expect(await attempt.locator('[data-field="outcome"]').textContent()).toBe("dead");
    expect(await attempt.locator('[data-field="status"]').textContent()).toBe("500");
    await page.screenshot({ path: join(artifactDir(), "job-browser.png"), fullPage: true });

    // An unknown id says so.
    await page.locator("#job-search-id").fill("dash-ok.01ARZ3NDEKTSV4RRFFQ69G5FAV");
    await page.locator("#job-search button[type=submit]").click();
    await page.locator("#job-missing", { hasText: "No job dash-ok.01ARZ3NDEKTSV4RRFFQ69G5FAV" }).waitFor();
    expect(await page.locator("#job-history-box").isHidden()).toBe(true);
    // The browser logs the 404 as a console error; that one is expected, any other is not.
    const notFound = problems.findIndex((p) => /status of 404/.test(p));
    expect(notFound, problems.join("\n")).toBeGreaterThanOrEqual(0);
    problems.splice(notFound, 1);
    expect(problems).toEqual([]);
  } finally {
    await browser.close();
  }
});

it("a shaped topic's keys: their counts in the topics table; the keys panel lists the busiest with in flight, waiting and state, and pauses and resumes a key", {
  timeout: 90_000,
}, async () => {
  const api = new Api(stack.url, stack.token);
  const keyPath = (key: string) => `/v1/topics/dash-keys/flow-keys/${key}`;
  // A pull topic: its claimed jobs are in flight with nothing delivered anywhere; a lease of an hour outlasts the test.
  await dl.topics.configure("dash-keys", { mode: "pull", flow: { parallelism: 2 } });
  await dl.jobs.enqueueBatch([
    ...Array.from({ length: 10 }, (_, i) => ({ topic: "dash-keys", payload: i, flowKey: "hot" })),
    { topic: "dash-keys", payload: "held", flowKey: "held" },
  ]);
  // hot has a setting of its own, which pausing it from the panel keeps; held is paused.
  await api.ok("PUT", keyPath("hot"), { weight: 3 });
  await api.ok("PUT", keyPath("held"), { paused: true });
  while ((await dl.jobs.claim("dash-keys", { max: 10, leaseMs: 3_600_000 })).length > 0);
  expect((await dl.topics.get("dash-keys")).flowKeys).toMatchObject({ inTurn: 0, waitingForRate: 0, atParallelism: 1, paused: 1 });

  const browser = await launchChromium();
  try {
    const { page, problems } = await signedInPage(browser, 1200);
    const keysCell = page.locator('#topics tr[data-topic="dash-keys"] [data-field="keys"]');
    await keysCell.locator("button", { hasText: "0 in turn · 1 at limit · 1 paused" }).waitFor();
    // A plain topic has no keys to count.
    expect(await page.locator('#topics tr[data-topic="dash-ok"] [data-field="keys"]').textContent()).toBe("–");

    // The panel: hot at its parallelism with two in flight and eight waiting, held paused with its job waiting.
    await keysCell.locator("button").click();
    const hot = page.locator('#keys-list tr[data-key="hot"]');
    const held = page.locator('#keys-list tr[data-key="held"]');
    await hot.waitFor();
    expect(await page.locator("#keys-topic").textContent()).toBe("dash-keys");
    expect(await page.locator("#keys-counts").textContent()).toBe("0 in turn · 0 waiting for rate · 1 at parallelism · 1 paused");
    expect(await page.locator("#keys-list tbody tr").evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-key")))).toEqual(["hot", "held"]);
    const facts = (row: typeof hot) =>
      Promise.all(["inflight", "waiting", "state"].map((f) => row.locator(`[data-field="${f}"]`).textContent())).then(([inflight, waiting, state]) => ({
        inflight,
        waiting,
        state,
      }));
    expect(await facts(hot)).toEqual({ inflight: "2", waiting: "8", state: "at parallelism" });
    expect(await facts(held)).toEqual({ inflight: "0", waiting: "1", state: "paused" });

    // Pause hot from the panel: the API says it is paused, with its weight kept; it stays parked at its parallelism meanwhile.
    await hot.locator('[data-action="pause"]').click();
    await hot.locator('[data-action="resume"]').waitFor({ timeout: 10_000 });
    expect((await api.ok("GET", keyPath("hot"))).settings).toEqual({ weight: 3, paused: true });
    expect(await facts(hot)).toEqual({ inflight: "2", waiting: "8", state: "at parallelism paused" });
    await page.screenshot({ path: join(artifactDir(), "flow-keys.png"), fullPage: true });

    // Resume both: hot keeps its weight; held, with no other setting, has none left. Both take their turn again, and the table says so.
    await hot.locator('[data-action="resume"]').click();
    await hot.locator('[data-action="pause"]').waitFor({ timeout: 10_000 });
    expect((await api.ok("GET", keyPath("hot"))).settings).toEqual({ weight: 3 });
    await held.locator('[data-action="resume"]').click();
    await held.locator('[data-field="state"][data-state="turn"]').waitFor({ timeout: 10_000 });
    // No settings of its own left (its jobs still waiting, the key is still there to read).
    expect((await api.ok("GET", keyPath("held"))).settings).toEqual({});
    await keysCell.locator("button", { hasText: "2 in turn · 0 at limit · 0 paused" }).waitFor({ timeout: 10_000 });
    expect(problems).toEqual([]);
  } finally {
    await browser.close();
  }
});

/** The dashboard's one date format (dashboard/dom.ts fmtTime): "Thu, Dec 3, 2026, 13:54:52 UTC". */
const ONE_DATE_FORMAT = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{1,2}, \d{4}, \d{2}:\d{2}:\d{2} UTC$/;

it("at 1400×900: topics come a page of 50 at a time with More topics, a count's click scrolls the job browser into view with its total, every date has one format, and never two stats requests are in flight", {
  timeout: 120_000,
}, async () => {
  // 55 more topics (after the dash-* ones in name order) make two pages of topics; dash-many holds 60 scheduled jobs, more than a page of the browser.
  await dl.jobs.enqueueBatch([
    ...Array.from({ length: 55 }, (_, i) => ({ topic: `zz-page-${String(i).padStart(2, "0")}`, payload: i, delay: "1h" })),
    ...Array.from({ length: 60 }, (_, i) => ({ topic: "dash-many", payload: i, delay: "1h" })),
  ]);
  const total = (await dl.topics.list({ limit: 1 })).total;
  expect(total).toBeGreaterThan(50);
  const browser = await launchChromium();
  try {
    const { page, problems } = await watchedPage(browser, 900);
    // Every stats answer is held back 1.5 s, so a page that started a stats request beside another would show it here.
    const stats = countRequests(page, "/v1/stats");
    const isStats = (url: string) => new URL(url).pathname === "/v1/stats";
    await page.route(
      (url) => isStats(url.href),
      async (route) => {
        const response = await route.fetch();
        await new Promise((r) => setTimeout(r, 1_500));
        await route.fulfill({ response });
      },
    );
    await page.goto(`${stack.url}/dashboard`);
    await page.locator("#token").fill(stack.token);
    await page.locator("#login button[type=submit]").click();

    // The first page: 50 topics, then More topics adds the rest.
    const rows = page.locator("#topics tbody tr");
    await expect.poll(() => rows.count(), { timeout: 20_000 }).toBe(50);
    expect(await page.locator("#topics-count").textContent()).toBe(`50 of ${total}`);
    // Asked for while a (held back) refresh runs: the page waits for it instead of starting another request.
    await page.locator("#topics-more").click();
    const manyRow = page.locator('#topics tr[data-topic="dash-many"]');
    await manyRow.locator('[data-action="pause"]').click();
    await manyRow.locator(".badge", { hasText: "paused" }).waitFor({ timeout: 20_000 });
    await expect.poll(() => rows.count(), { timeout: 20_000 }).toBe(total);
    expect(await page.locator("#topics-more").isHidden()).toBe(true);
    expect(await page.locator("#updated").textContent()).toMatch(new RegExp(`^updated ${ONE_DATE_FORMAT.source.slice(1)}`));

    // The scheduled count of dash-many opens the job browser, which sits below the charts: it is scrolled into view.
    await manyRow.locator('[data-field="scheduled"] button').click();
    const jobRows = page.locator("#jobs-list tbody tr");
    await expect.poll(() => jobRows.count(), { timeout: 10_000 }).toBe(50);
    await expect
      .poll(
        async () => {
          const box = await page.locator("#jobs").boundingBox();
          return box !== null && box.y >= 0 && box.y < 900 && box.y + 40 <= 900;
        },
        { timeout: 5_000, message: "the job browser's top is in the 1400×900 viewport" },
      )
      .toBe(true);
    // Its total: the topic's count of scheduled jobs, beside the page shown.
    expect(await page.locator("#jobs-total").textContent()).toBe("50 shown of 60 scheduled");
    await page.locator("#jobs-more").click();
    await expect.poll(() => jobRows.count(), { timeout: 10_000 }).toBe(60);
    expect(await page.locator("#jobs-total").textContent()).toBe("60 shown of 60 scheduled");
    // Due times in the one format.
    const due = await jobRows.evaluateAll((trs) => trs.map((tr) => tr.children[2]!.textContent));
    for (const text of due) expect(text).toMatch(ONE_DATE_FORMAT);

    // Dead letters (and the job view's facts) in the same format; the dead-letter browser is scrolled to as well.
    await page.locator('#topics tr[data-topic="dash-fail"] [data-field="dead"] button').click();
    await page.locator("#dead-list tbody tr").first().waitFor();
    const failed = await page.locator("#dead-list tbody tr").evaluateAll((trs) => trs.map((tr) => tr.children[2]!.textContent));
    expect(failed.length).toBeGreaterThan(0);
    for (const text of failed) expect(text).toMatch(ONE_DATE_FORMAT);
    const deadBox = await page.locator("#dead").boundingBox();
    expect(deadBox!.y).toBeGreaterThanOrEqual(0);
    expect(deadBox!.y).toBeLessThan(900);
    await page.locator("#dead-list tbody tr").first().locator('[data-action="open"]').click();
    await page.locator('#job-facts [data-fact="created"]').waitFor();
    for (const fact of ["created", "finished"]) expect(await page.locator(`#job-facts [data-fact="${fact}"]`).textContent(), fact).toMatch(ONE_DATE_FORMAT);

    // Polls go on, one after another: wait for a few more held-back answers, then count.
    const before = stats.ended;
    await expect.poll(() => stats.ended, { timeout: 30_000 }).toBeGreaterThanOrEqual(before + 2);
    expect(stats.mostInFlight).toBe(1);
    expect(problems).toEqual([]);
  } finally {
    await browser.close();
  }
});

it("the schedules table shows a cron schedule in its time zone with cronstrue's description and an interval one with its last job; pause, resume and delete work from it", {
  timeout: 90_000,
}, async () => {
  const weekday = await dl.schedules.upsert("dash-weekday", {
    cron: "0 9 * * 1-5",
    timezone: "Europe/Berlin",
    topic: "dash-sched",
    target: { url: `${target}/ok` },
  });
  expect(weekday.nextRunAt).not.toBeNull();
  const browser = await launchChromium();
  try {
    const { page, problems } = await signedInPage(browser, 1200);

    // The cron schedule: its expression, cronstrue's reading, its zone, and the next run in that zone (09:00 Berlin, not the browser's UTC).
    const weekdayRow = page.locator('#schedules-list tr[data-schedule="dash-weekday"]');
    await weekdayRow.waitFor();
    expect(await weekdayRow.locator('[data-field="expression"] code').textContent()).toBe("0 9 * * 1-5");
    expect(await weekdayRow.locator('[data-field="description"]').textContent()).toBe("At 09:00, Monday through Friday");
    expect(await weekdayRow.locator('[data-field="timezone"]').textContent()).toBe("Europe/Berlin");
    expect(await weekdayRow.locator('[data-field="topic"]').textContent()).toBe("dash-sched");
    const weekdayNext = weekdayRow.locator('[data-field="next"]');
    expect(await weekdayNext.getAttribute("data-at")).toBe((await dl.schedules.get("dash-weekday"))!.nextRunAt);
    expect(await weekdayNext.textContent()).toMatch(/^(Mon|Tue|Wed|Thu|Fri), \w{3} \d{1,2}, \d{4}, 09:00:00 GMT\+[12]in [\d.]+ (min|h)$/);
    expect(await weekdayRow.locator('[data-field="last"]').textContent()).toBe("never");
    expect(await weekdayRow.locator('[data-field="state"]').textContent()).toBe("active");

    // An interval schedule created after the page opened shows up with the page's refresh, then fires: its last job is delivered.
    await dl.schedules.upsert("dash-every", { every: "1s", topic: "dash-sched", target: { url: `${target}/ok` } });
    const everyRow = page.locator('#schedules-list tr[data-schedule="dash-every"]');
    await everyRow.waitFor({ timeout: 10_000 });
    expect(await everyRow.locator('[data-field="expression"] code').textContent()).toBe("every 1 s");
    expect(await everyRow.locator('[data-field="description"]').count()).toBe(0);
    expect(await everyRow.locator('[data-field="timezone"]').textContent()).toBe("UTC");
    await everyRow.locator('[data-field="job-state"]', { hasText: "succeeded" }).waitFor({ timeout: 20_000 });
    const lastJob = await everyRow.locator('[data-field="last"] [data-action="open"]').textContent();
    const job = await dl.jobs.get(lastJob!);
    expect(job?.state).toBe("succeeded");
    expect(job?.topic).toBe("dash-sched");
    expect(Number(await everyRow.locator('[data-field="runs"]').textContent())).toBeGreaterThanOrEqual(1);
    expect(await everyRow.locator('[data-field="next"]').getAttribute("data-at")).not.toBe("");

    // Pause: the row says paused and has no next run; so does the API. Resume: both go on.
    await everyRow.locator('[data-action="pause"]').click();
    await everyRow.locator('[data-field="state"]', { hasText: "paused" }).waitFor({ timeout: 10_000 });
    expect(await everyRow.locator('[data-field="next"]').textContent()).toBe("paused");
    const paused = (await dl.schedules.get("dash-every"))!;
    expect(paused.paused).toBe(true);
    expect(paused.nextRunAt).toBeNull();
    await page.screenshot({ path: join(artifactDir(), "schedules.png"), fullPage: true });
    await everyRow.locator('[data-action="resume"]').click();
    await everyRow.locator('[data-field="state"]', { hasText: "active" }).waitFor({ timeout: 10_000 });
    const resumed = (await dl.schedules.get("dash-every"))!;
    expect(resumed.paused).toBe(false);
    expect(resumed.nextRunAt).not.toBeNull();
    expect(await everyRow.locator('[data-field="next"]').getAttribute("data-at")).not.toBe("");

    // Delete asks first: dismissed, the schedule stays; accepted, it is gone from the table and the API.
    const asked: string[] = [];
    const deletes: string[] = [];
    page.on("request", (r) => r.method() === "DELETE" && deletes.push(r.url()));
    page.once("dialog", (d) => {
      asked.push(d.message());
      void d.dismiss();
    });
    await everyRow.locator('[data-action="delete"]').click();
    await expect.poll(() => asked.length).toBe(1);
    expect(asked[0]).toContain("dash-every");
    // A page that deleted anyway would send its DELETE right after the dialog closes; give it the time to.
    await new Promise((r) => setTimeout(r, 500));
    expect(deletes).toEqual([]);
    expect(await dl.schedules.get("dash-every")).not.toBeNull();
    expect(await everyRow.count()).toBe(1);
    page.once("dialog", (d) => void d.accept());
    await everyRow.locator('[data-action="delete"]').click();
    await expect.poll(() => everyRow.count(), { timeout: 10_000 }).toBe(0);
    expect(deletes).toEqual([`${stack.url}/v1/schedules/dash-every`]);
    expect(await dl.schedules.get("dash-every")).toBeNull();
    expect(await weekdayRow.count()).toBe(1);
    expect(problems).toEqual([]);
  } finally {
    await browser.close();
    await dl.schedules.delete("dash-weekday");
  }
});

it("the job browser shows each job's labels and filters by one: the filter lists the label's jobs, a bad label is not sent, the job view names them, and the label's jobs are cancelled after a preview", {
  timeout: 90_000,
}, async () => {
  const made = await dl.jobs.enqueueBatch(
    Array.from({ length: 6 }, (_, i) => ({ topic: "dash-labels", payload: { i }, delay: "1h", labels: i % 2 === 0 ? ["tenant:42", "invoice"] : ["tenant:7"] })),
  );
  const ids = made.map((j) => j.id);
  const browser = await launchChromium();
  try {
    const { page, problems } = await signedInPage(browser, 1200);
    await page.locator('#topics tr[data-topic="dash-labels"] [data-field="scheduled"] button').click();
    const rows = page.locator("#jobs-list tbody tr");
    await rows.nth(5).waitFor();
    expect(await page.locator(`#jobs-list tr[data-job="${ids[0]}"] [data-field="labels"]`).textContent()).toBe("tenant:42invoice");
    expect(await page.locator(`#jobs-list tr[data-job="${ids[0]}"] [data-field="labels"] .badge`).count()).toBe(2);
    expect(await page.locator(`#jobs-list tr[data-job="${ids[1]}"] [data-field="labels"]`).textContent()).toBe("tenant:7");

    const requests: string[] = [];
    page.on("request", (r) => requests.push(r.url()));
    await page.locator("#jobs-label").fill("tenant:42");
    await page.locator("#jobs-label").press("Enter");
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(3);
    const listed = await Promise.all([0, 1, 2].map((i) => rows.nth(i).getAttribute("data-job")));
    expect(listed).toEqual([ids[0], ids[2], ids[4]]);
    expect(await page.locator("#jobs-total").textContent()).toBe("3 labelled tenant:42 shown of 6 scheduled");
    expect(requests.some((u) => u.includes("/v1/topics/dash-labels/jobs?") && u.includes("label=tenant%3A42"))).toBe(true);

    // A label the API would refuse is held back by the field: no request goes out, the rows stay.
    requests.length = 0;
    await page.locator("#jobs-label").fill("not a label");
    await page.locator("#jobs-label").press("Enter");
    await new Promise((r) => setTimeout(r, 500));
    expect(requests.filter((u) => u.includes("/jobs?"))).toEqual([]);
    expect(await rows.count()).toBe(3);

    // Cleared, every job is back; the job view names the labels.
    await page.locator("#jobs-label").fill("");
    await page.locator("#jobs-label").press("Enter");
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(6);
    await page.locator(`#jobs-list tr[data-job="${ids[0]}"] [data-action="open"]`).click();
    await page.locator("#job-id", { hasText: ids[0]! }).waitFor();
    expect(await page.locator('#job-facts [data-fact="labels"]').textContent()).toBe("tenant:42 invoice");

    // With a label set, the whole label's scheduled jobs can be cancelled, after its dry run's preview.
    const byLabel = page.locator("#jobs-cancel-label");
    expect(await byLabel.isHidden()).toBe(true);
    await page.locator("#jobs-label").fill("tenant:7");
    await page.locator("#jobs-label").press("Enter");
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(3);
    expect(await byLabel.textContent()).toBe("Cancel all labelled tenant:7");
    await byLabel.click();
    await page.locator("#bulk-preview").waitFor();
    expect(await page.locator("#bulk-preview-text").textContent()).toBe("Cancel 3 scheduled jobs labelled tenant:7 of dash-labels?");
    expect((await page.locator("#bulk-preview-ids li").allTextContents()).sort()).toEqual([ids[1], ids[3], ids[5]].sort());
    expect((await dl.jobs.get(ids[1]!))!.state).toBe("scheduled");
    await page.locator("#bulk-preview-go", { hasText: "Cancel 3" }).click();
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(0);
    for (const [i, id] of ids.entries()) expect((await dl.jobs.get(id))!.state, id).toBe(i % 2 === 0 ? "scheduled" : "cancelled");
    expect(problems).toEqual([]);
  } finally {
    await browser.close();
    await dl.topics.delete("dash-labels", { purge: true });
  }
});

it("static assets, answered before the Worker runs, carry the pages' security headers (public/_headers)", async () => {
  const pageHeaders = {
    "content-security-policy": expect.stringMatching(/^default-src 'self';.*frame-ancestors 'none'$/),
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
  };
  for (const path of ["/dashboard/", "/dashboard/app.js", "/dashboard/style.css", "/docs/", "/docs/init.js", "/docs/swagger-ui-bundle.js"]) {
    const res = await fetch(`${stack.url}${path}`);
    await res.arrayBuffer();
    expect(res.status, path).toBe(200);
    const got = Object.fromEntries([...res.headers].filter(([k]) => k in pageHeaders));
    expect(got, path).toEqual(pageHeaders);
  }
  const icon = await fetch(`${stack.url}/favicon.ico`);
  expect(icon.status).toBe(200);
  expect(icon.headers.get("content-type")).toMatch(/^image\//);
  expect((await icon.arrayBuffer()).byteLength).toBeGreaterThan(100);
  // The rules configure the asset server; they are not a file it serves.
  const rules = await fetch(`${stack.url}/_headers`);
  await rules.arrayBuffer();
  expect(rules.status).toBe(404);
});

it("/metrics from the live stack passes promtool's check", async () => {
  const tool = testTools().promtool;
  // npm test installs it first (test/prepare.ts); this file run alone says what to install.
  if (!existsSync(tool.path)) throw new Error(installHelp([tool]));
  const promtool = tool.path;
  const text = await dl.stats.prometheus();
  const check = spawnSync(promtool, ["check", "metrics"], { input: text, encoding: "utf8" });
  expect(check.status, `${check.stdout}\n${check.stderr}`).toBe(0);
  expect(text).toContain(`delayline_jobs_succeeded_total{topic="dash-ok"} ${OK}`);
});
