/**
 * 2,000 http deliveries due in the same millisecond under `npm start`, at its
 * default settings: every one arrives once and is acknowledged, nothing logs
 * an error, and workerd's open files stay bounded while they go out. Under
 * `wrangler dev` each outbound fetch cost workerd about four connections more
 * (its inspector proxy sent every devtools event to wrangler's Node process
 * over a connection of its own), so a burst like this ran workerd out of file
 * descriptors.
 */
import { readdirSync } from "node:fs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { descendantsOf } from "../../dev/process-tree.js";
import { Delayline } from "../../src/client/index.js";
import { startLocalStack, type LocalStack } from "../local-stack.js";
import { startReceiver, type Delivery } from "../receiver.js";

const JOBS = 2_000;
/**
 * Open files workerd may hold beyond its idle count during the burst. The
 * tick bounds what is in flight: at the defaults 50 handlers in each of at
 * most 5 invocations (the loop and TICK_FANOUT = 4 fanned-out chunks), so at
 * most 250 delivery sockets, and as many REST requests to the bridge for
 * their claims and settles; 600 leaves room for connections the runtime
 * keeps alive a moment after use. Per-event connections to a controller
 * would take thousands.
 */
const ALLOWANCE = 600;

let stack: LocalStack;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let dl: Delayline;

beforeAll(async () => {
  receiver = await startReceiver();
  stack = await startLocalStack();
  dl = new Delayline({ baseUrl: stack.url, token: stack.token });
}, 150_000);

afterAll(async () => {
  await stack?.stop();
  await receiver?.close();
});

/** Open file descriptors of every workerd process under `npm start`. */
function workerdOpenFds(): number {
  let n = 0;
  for (const p of descendantsOf(stack.pid)) {
    if (!/workerd/.test(p.args)) continue;
    try {
      n += readdirSync(`/proc/${p.pid}/fd`).length;
    } catch {
      // exited meanwhile
    }
  }
  return n;
}

async function deliveries(prefix: string): Promise<Delivery[]> {
  return (await (await fetch(`${receiver.url}/__deliveries?prefix=${prefix}`)).json()) as Delivery[];
}

it(`delivers ${JOBS} jobs due at once, each once and acknowledged, with workerd's open files bounded`, { timeout: 150_000 }, async () => {
  const topic = "burst-fds";
  await dl.topics.configure(topic, { url: `${receiver.url}/${topic}/ok` });
  const baseline = workerdOpenFds();
  expect(baseline, "no workerd found under npm start").toBeGreaterThan(0);

  const same = Date.now() + 8_000;
  const ids = new Set<string>();
  for (let i = 0; i < JOBS; i += 1_000) {
    const made = await dl.jobs.enqueueBatch(Array.from({ length: 1_000 }, (_, j) => ({ topic, payload: { i: i + j }, runAt: same })));
    for (const m of made) {
      expect(m.dueAt && Date.parse(m.dueAt)).toBe(same);
      ids.add(m.id);
    }
  }
  expect(ids.size).toBe(JOBS);

  let peak = baseline;
  let received: Delivery[] = [];
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    peak = Math.max(peak, workerdOpenFds());
    received = await deliveries(`/${topic}/`);
    if (received.length >= JOBS && Date.now() > same) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const perId = new Map<string, number>();
  for (const d of received) perId.set(d.headers["delayline-job-id"]!, (perId.get(d.headers["delayline-job-id"]!) ?? 0) + 1);
  expect([...perId.keys()].sort()).toEqual([...ids].sort());
  expect([...perId.values()].filter((n) => n !== 1)).toEqual([]);
  expect(received.every((d) => d.at >= same)).toBe(true);

  // Acknowledged: every attempt settled as a success, none left scheduled or in flight.
  let view = await dl.topics.get(topic);
  for (let i = 0; i < 100 && view.counters.succeeded < JOBS; i++) {
    await new Promise((r) => setTimeout(r, 100));
    view = await dl.topics.get(topic);
  }
  expect(view).toMatchObject({ scheduled: 0, inflight: 0, dead: 0, counters: { dispatched: JOBS, succeeded: JOBS, retried: 0, dead: 0 } });

  expect(peak - baseline, `workerd's open files: ${baseline} idle, ${peak} during the burst`).toBeLessThan(ALLOWANCE);
  expect(stack.output()).not.toMatch(/"level":"error"|EMFILE|Too many open files|Your worker restarted/);
});
