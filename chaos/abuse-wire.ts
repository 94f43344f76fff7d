/**
 * Abuse over real sockets against the Worker as `npm start` serves it
 * (workerd through miniflare, dev/worker-host.ts): what the in-process abuse
 * suite (test/workers/api/abuse.test.ts) cannot reach — header limits of the
 * HTTP server, bodies that are really uploaded.
 * Each answer must be a 4xx (or the server closing a request it will not
 * read) and nothing may be stored.
 */
import { spawnSync } from "node:child_process";
import { connect } from "node:net";
import { join } from "node:path";
import type { Api } from "../harness/api.js";

export interface WireAttack {
  label: string;
  /** Answered by local dev plumbing (miniflare) before the Worker runs; production's edge is another server. */
  localOnly?: string;
  /** What came back: an HTTP status, or "closed" when the server hung up without one. */
  answer: number | "closed";
  expected: string;
  ok: boolean;
}

/** Sends raw bytes and reads the status line (or notices the server closing). */
function raw(url: string, head: string, body: Buffer = Buffer.alloc(0)): Promise<number | "closed"> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port) });
    let got = "";
    let done = false;
    const finish = (v: number | "closed") => {
      if (done) return;
      done = true;
      socket.destroy();
      resolve(v);
    };
    socket.setTimeout(30_000, () => finish("closed"));
    socket.on("data", (c: Buffer) => {
      got += c.toString("latin1");
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(got);
      if (m) finish(Number(m[1]));
    });
    socket.on("error", () => finish("closed"));
    socket.on("close", () => finish("closed"));
    socket.on("connect", () => {
      socket.write(head);
      // A server that answers early (413) may close while the body is still going out.
      if (body.length > 0) socket.write(body, () => {});
    });
  });
}

export async function wireAbuse(url: string, token: string, api: Api): Promise<{ attacks: WireAttack[]; storedJobs: number }> {
  const topic = "abuse-wire";
  const before = (await api.topic(topic)).scheduled;
  const attacks: WireAttack[] = [];
  const req = (extraHeaders: string, body: Buffer, type = "application/json", auth = `Bearer ${token}`) =>
    `POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${auth}\r\nContent-Type: ${type}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n${extraHeaders}\r\n`;
  const job = Buffer.from(JSON.stringify({ topic, payload: 1, delay: "1h" }));
  const check = async (label: string, expected: (a: number | "closed") => boolean, expectedText: string, head: string, body: Buffer, localOnly?: string) => {
    const answer = await raw(url, head, body);
    attacks.push({ label, answer, expected: expectedText, ok: expected(answer), ...(localOnly ? { localOnly } : {}) });
  };
  const is4xx = (a: number | "closed") => a === "closed" || (a >= 400 && a < 500);
  const exactly = (s: number) => (a: number | "closed") => a === s;

  const headers = (n: number) => Array.from({ length: n }, (_, i) => `X-H${i}: ${"v".repeat(50)}\r\n`).join("");
  await check("one 64 KB header", exactly(431), "431", req(`X-Big: ${"a".repeat(65_536)}\r\n`, job), job);
  await check("1,000 headers", exactly(431), "431", req(headers(1_000), job), job);
  await check("one 1 MB header", is4xx, "4xx or closed", req(`X-Big: ${"a".repeat(1_048_576)}\r\n`, job), job);
  await check("a 1 MB token", is4xx, "4xx or closed", req("", job, "application/json", `Bearer ${"t".repeat(1_048_576)}`), job);
  await check(
    "2,000 headers",
    is4xx,
    "4xx or closed",
    req(headers(2_000), job),
    job,
    "miniflare's entry worker cannot pass on more than 2,000 headers and answers 500 itself; the Worker never sees the request",
  );
  const big = Buffer.alloc(10 * 1024 * 1024, "x");
  await check("a 10 MB body", exactly(413), "413", req("", big), big);
  await check("a 10 MB body without a token", exactly(401), "401", req("", big, "application/json", "Bearer wrong-token-123"), big);
  const badUtf8 = Buffer.concat([Buffer.from('{"topic":"t","payload":"'), Buffer.from([0xc0, 0xaf, 0xff]), Buffer.from('"}')]);
  await check("invalid UTF-8", exactly(400), "400", req("", badUtf8), badUtf8);
  const deep = Buffer.from("[".repeat(50_000) + "]".repeat(50_000));
  await check("50,000 nested arrays", exactly(400), "400", req("", deep), deep);
  await check("a wrong token", exactly(401), "401", req("", job, "application/json", "Bearer wrong-token-123"), job);
  await check("no token", exactly(401), "401", req("", job, "application/json", ""), job);
  await check("a lying Content-Length", is4xx, "4xx or closed", req("", job).replace(`Content-Length: ${job.length}`, "Content-Length: 5"), job);

  const storedJobs = (await api.topic(topic)).scheduled - before;
  return { attacks, storedJobs };
}

/** Runs the in-process abuse suite and reads how many bad inputs it tried. */
export function abuseSuite(root: string): { passed: boolean; tests: string; badInputsTried: number } {
  const run = spawnSync(process.execPath, [join(root, "node_modules/vitest/vitest.mjs"), "run", "test/workers/api/abuse.test.ts"], {
    cwd: root,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  // biome-ignore lint/suspicious/noControlCharactersInRegex: strips the terminal's colour codes, which start with ESC.
  const out = `${run.stdout}${run.stderr}`.replace(/\x1b\[[0-9;]*m/g, "");
  const counted = /\{"abuse":\{"badInputsTried":(\d+)/.exec(out);
  const tests = /tests: (\d+ passed, \d+ failed, \d+ skipped)/.exec(out)?.[1] ?? "no summary";
  return { passed: run.status === 0, tests, badInputsTried: counted ? Number(counted[1]) : 0 };
}
