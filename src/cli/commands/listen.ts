/**
 * `delayline listen`: a delivery target to watch. It serves HTTP (on
 * loopback unless told otherwise), prints every request it gets — method,
 * path, delayline's headers, the body and, given the signing secret, whether
 * the signature verifies — and answers 200, or the status asked for, to see
 * retries and dead letters happen. A first job needs somewhere to go; this is
 * it, with nothing to write.
 */
import { createServer, type IncomingMessage } from "node:http";
import type { Command } from "commander";
import { verifySignature, verifyStandardSignature, type VerifyResult } from "../../client/index.js";
import { action, wholeNumber, type Context, type Io } from "../context.js";

/** Options of `delayline listen`. */
interface ListenOptions {
  /** Port to listen on; 0 picks a free one. Default 8788 (next to npm start's 8787). */
  port: number;
  /** Address to listen on. Default 127.0.0.1: deliveries on this machine only. */
  host: string;
  /** The signing secret (else SIGNING_SECRET): each delivery's signature is checked with it. Default none. */
  secret?: string;
  /** Status to answer. Default 200. */
  status: number;
  /** Answer `status` only to a job's first n attempts (its Delayline-Attempt header), 200 after: retries that end well. Default every attempt. */
  failAttempts?: number;
}

/** The headers worth seeing in a delivery: delayline's own, Standard Webhooks' and what says what the body is. */
const SHOWN = /^(delayline-|webhook-)|^(content-type|user-agent)$/;
/** Bodies longer than this are cut when printed (the answer is the same). */
const MAX_PRINTED_BODY = 4096;

export function listenCommand(program: Command, io: Io): void {
  program
    .command("listen")
    .description("serve a delivery target on this machine and print every delivery it gets (Ctrl-C stops it)")
    .option("--port <n>", "port to listen on; 0 picks a free one", wholeNumber(0, 65535), 8788)
    .option("--host <address>", "address to listen on", "127.0.0.1")
    .option("--secret <secret>", "check each delivery's signature with this signing secret (default: SIGNING_SECRET)")
    .option("--status <code>", "answer this status, e.g. 500 to watch retries", wholeNumber(200, 599), 200)
    .option("--fail-attempts <n>", "answer --status only to each job's first n attempts, then 200", wholeNumber(1, 1000))
    .action(
      action(io, async (ctx, o: ListenOptions) => {
        const secret = o.secret ?? (ctx.io.env.SIGNING_SECRET || undefined);
        await listen(ctx, { ...o, ...(secret ? { secret } : {}) });
      }),
    );
}

/** A delivery as printed (and as one JSON line with --json). */
interface Delivery {
  at: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  signature: string;
  answered: number;
}

function listen(ctx: Context, o: ListenOptions): Promise<void> {
  const server = createServer(async (req, res) => {
    const body = await readBody(req);
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (SHOWN.test(name) && value !== undefined) headers[name] = Array.isArray(value) ? value.join(", ") : value;
    }
    const attempt = Number(headers["delayline-attempt"] ?? 1);
    const answered = o.failAttempts === undefined || attempt <= o.failAttempts ? o.status : 200;
    const delivery: Delivery = {
      at: new Date().toISOString(),
      method: req.method ?? "?",
      path: req.url ?? "/",
      headers,
      body: body.toString("utf8"),
      signature: await signature(headers, body, o.secret),
      answered,
    };
    res.writeHead(answered, { "content-type": "text/plain" }).end(answered < 300 ? "ok\n" : `answered ${answered} by delayline listen\n`);
    ctx.io.stdout(ctx.json ? JSON.stringify(delivery) : render(delivery));
  });
  return new Promise((resolve, reject) => {
    server.once("error", (err: NodeJS.ErrnoException) =>
      reject(err.code === "EADDRINUSE" ? new Error(`${o.host}:${o.port} is in use: pick another with --port`) : err),
    );
    server.listen(o.port, o.host, () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : o.port;
      const host = o.host.includes(":") ? `[${o.host}]` : o.host;
      const url = `http://${host}:${port}`;
      const answer = o.failAttempts === undefined ? String(o.status) : `${o.status} to the first ${o.failAttempts} attempt(s), then 200`;
      const checks = o.secret ? "signatures checked with the secret given" : "signatures not checked (pass --secret or set SIGNING_SECRET)";
      ctx.io.stdout(
        ctx.json
          ? JSON.stringify({ listening: url })
          : `listening on ${url} — answering ${answer}; ${checks}. Deliver to it with "target": {"url": "${url}/<any path>"}. Ctrl-C stops it.`,
      );
    });
    const stop = () => {
      server.close(() => resolve());
      server.closeAllConnections();
    };
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.once("end", () => resolve(Buffer.concat(chunks)));
    req.once("error", reject);
  });
}

/** What the delivery's signature says: which scheme it carries and, with a secret, whether it verifies. */
async function signature(headers: Record<string, string>, body: Buffer, secret: string | undefined): Promise<string> {
  const standard = headers["webhook-signature"] !== undefined;
  const scheme = standard ? "standard" : "delayline";
  if (!standard && headers["delayline-signature"] === undefined) return "none (unsigned)";
  if (!secret) return `${scheme}, not checked (no secret: pass --secret or set SIGNING_SECRET)`;
  const bytes = new Uint8Array(body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength) as ArrayBuffer);
  const result: VerifyResult = standard
    ? await verifyStandardSignature({
        id: headers["webhook-id"],
        timestamp: headers["webhook-timestamp"],
        signature: headers["webhook-signature"],
        body: bytes,
        secrets: secret,
      })
    : await verifySignature({ header: headers["delayline-signature"], body: bytes, secrets: secret });
  return result.ok ? `${scheme}, verified` : `${scheme}, NOT verified (${result.reason})`;
}

function render(d: Delivery): string {
  const body = d.body.length > MAX_PRINTED_BODY ? `${d.body.slice(0, MAX_PRINTED_BODY)}… (${d.body.length} characters)` : d.body;
  return [
    `${d.at}  ${d.method} ${d.path}  → ${d.answered}`,
    ...Object.entries(d.headers).map(([name, value]) => `  ${name}: ${value}`),
    `  signature: ${d.signature}`,
    `  body: ${body || "(empty)"}`,
  ].join("\n");
}
