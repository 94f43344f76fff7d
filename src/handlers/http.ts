import { cutErrorText } from "../error-text.js";
import { ATTEMPT_ERROR_BYTES } from "../limits.js";
import { retryAfterMs } from "../protocol/retry-after.js";
import { deliverySigner, type DeliverySigner } from "../protocol/sign.js";
import type { SignatureScheme } from "../protocol/signature-schemes.js";
import { Deadlines } from "./deadlines.js";
import { isConnectionHeader, isDelaylineHeader } from "./headers.js";
import { PermanentError, RetryableError, type JobContext } from "./registry.js";
import { forbiddenTarget } from "./ssrf.js";

/** Where and how the built-in http handler delivers. */
export interface HttpDelivery {
  /** The topic's URL, used when the job has no target of its own. */
  topicUrl?: string;
  /**
   * Sign deliveries, the current secret first (the topic's signingSecret,
   * else the deployment's), then the topic's previousSigningSecrets.
   * Unsigned when empty. Default none.
   */
  signingSecrets?: readonly string[];
  /** How deliveries are signed (the topic's signatureScheme, else SIGNING_SCHEME). Default `delayline`. */
  signatureScheme?: SignatureScheme;
  /** Deliver to loopback and private addresses too (local development). */
  allowPrivate: boolean;
  /** Where the wait for a response body is timed: the dispatched chunk's, shared by its deliveries. Default one of its own. */
  deadlines?: Deadlines;
  /** What the SSRF guard says of `topicUrl` (null: allowed), worked out once for a chunk's deliveries. Default: asked per delivery. */
  topicUrlRefused?: string | null;
  /** Signs the deliveries, made once for a chunk's (its keys imported once); when given, `signingSecrets` and `signatureScheme` are not read. Default: one per delivery, from those two. */
  signer?: DeliverySigner;
}

const RETRYABLE = new Set([408, 425, 429]);

/**
 * Most of a response body the handler reads. Reading a body to its end lets
 * workerd keep the connection for the next delivery (cancelling it closes
 * the connection, so every delivery paid for a new one); an acknowledgement
 * fits with room to spare, and a longer body is cut off there, its connection closed.
 */
const BODY_LIMIT_BYTES = 64 * 1024;

/** How long the handler waits for a response body once its status has arrived; a slower body is cut off there. */
export const BODY_WAIT_MS = 1_000;

/** Why a body read was cut off: one reason for every request, made once. */
const CUT_OFF = new Error("response body cut off");

/**
 * Reads `res`'s body to its end, or until BODY_LIMIT_BYTES or BODY_WAIT_MS,
 * whichever comes first, and then aborts the rest through `stop` (the
 * request's own controller). Returns the first `keep` bytes. Never throws: a
 * body that breaks off keeps what arrived.
 */
async function readBody(res: Response, stop: AbortController, keep: number, deadlines: Deadlines): Promise<Uint8Array[]> {
  const headers = res.headers;
  const length = Number(headers.get("content-length") ?? Number.NaN);
  const encoding = headers.get("content-encoding");
  // A body of known, small length as sent (not decompressed on the way,
  // which could make it any size): read whole, workerd's cheapest read (a
  // response without a body reads as empty). The wait is timed by aborting
  // the request, which rejects the read: no race and no promise of its own,
  // since nearly every delivery takes this path.
  if (length <= BODY_LIMIT_BYTES && (encoding === null || encoding.toLowerCase() === "identity")) {
    const cancel = deadlines.add(BODY_WAIT_MS, () => stop.abort(CUT_OFF));
    try {
      const body = await res.arrayBuffer();
      return keep > 0 ? [new Uint8Array(body, 0, Math.min(keep, body.byteLength))] : [];
    } catch {
      // Cut off by the wait, or broken off by the connection or the job's timeout.
      stop.abort(CUT_OFF);
      return [];
    } finally {
      cancel();
    }
  }
  return res.body ? readStream(res.body, stop, keep, deadlines) : [];
}

/** {@link readBody} of a body of unknown or large length, or compressed: read in parts, up to BODY_LIMIT_BYTES. */
async function readStream(body: ReadableStream<Uint8Array>, stop: AbortController, keep: number, deadlines: Deadlines): Promise<Uint8Array[]> {
  const kept: Uint8Array[] = [];
  let cancel = () => {};
  const late = new Promise<"late">((resolve) => {
    cancel = deadlines.add(BODY_WAIT_MS, () => resolve("late"));
  });
  let ended = false;
  try {
    const reader = body.getReader();
    let total = 0;
    let keptBytes = 0;
    for (;;) {
      const read = reader.read();
      // A read left behind by the timer rejects when the request is aborted; that is not an error.
      read.catch(() => {});
      const r = await Promise.race([read, late]);
      if (r === "late") break;
      if (r.done) {
        ended = true;
        break;
      }
      total += r.value.byteLength;
      if (keptBytes < keep) {
        const part = r.value.subarray(0, keep - keptBytes);
        kept.push(part);
        keptBytes += part.byteLength;
      }
      if (total >= BODY_LIMIT_BYTES) break;
    }
  } catch {
    // The body broke off (the connection, or the job's timeout): what arrived is kept.
  } finally {
    cancel();
    if (!ended) stop.abort(CUT_OFF);
  }
  return kept;
}

/** The start of an error response's body ("" without one), cut as every error text is, from a read of as many bytes. */
async function errorBody(res: Response, stop: AbortController, deadlines: Deadlines): Promise<string> {
  const parts = await readBody(res, stop, ATTEMPT_ERROR_BYTES, deadlines);
  const decoder = new TextDecoder();
  let text = "";
  for (const part of parts) text += decoder.decode(part, { stream: true });
  return cutErrorText(text);
}

/**
 * A delivery's request headers: delayline's, and the job's own when it has
 * any. Most jobs have none, and those get a plain object, which fetch reads
 * in one go; a job's own go into a Headers first, which is case-insensitive
 * where a plain object is not ({"Content-Type": …, "content-type": …} would
 * go out joined): each once, a Content-Type of its own replacing
 * application/json, and delayline's always winning.
 */
async function deliveryHeaders(job: JobContext, delivery: HttpDelivery, body: string | undefined): Promise<Record<string, string> | Headers> {
  // Signed at each attempt: the timestamp is the attempt's (a receiver's
  // replay window), while Standard Webhooks' webhook-id, the job id, stays
  // the same across retries so a receiver can deduplicate by it.
  const sign = delivery.signer ?? deliverySigner(delivery.signatureScheme ?? "delayline", delivery.signingSecrets ?? []);
  const signed = await sign({ id: job.id, body: body ?? "" });
  // An ingested webhook's provider headers go on with it (X-GitHub-Event …); the job's own target headers win over them.
  const own = job.webhookHeaders === undefined ? job.target?.headers : { ...job.webhookHeaders, ...job.target?.headers };
  const ours: Record<string, string> = {
    "user-agent": "delayline",
    "delayline-job-id": job.id,
    "delayline-topic": job.topic,
    "delayline-attempt": String(job.attempt),
  };
  if (job.schedule) {
    ours["delayline-schedule-id"] = job.schedule.id;
    ours["delayline-scheduled-for"] = new Date(job.schedule.scheduledFor).toISOString();
  }
  for (const name in signed) ours[name] = signed[name]!;
  if (own === undefined) {
    ours["content-type"] = "application/json";
    return ours;
  }
  const headers = new Headers();
  for (const [name, value] of Object.entries(own)) {
    if (!isDelaylineHeader(name) && !isConnectionHeader(name)) headers.set(name, value);
  }
  if (!headers.has("content-type")) headers.set("content-type", "application/json");
  for (const name in ours) headers.set(name, ours[name]!);
  return headers;
}

/**
 * The built-in `http` handler: sends the payload as JSON to the job's target
 * (or the topic's URL), signed. 2xx is success; 408, 425, 429, 5xx, timeouts
 * and network errors retry (honouring Retry-After); redirects and other 4xx
 * are permanent. Redirects are never followed: a target could bounce the
 * request to an address the guard refuses. Resolves to the response's
 * status; a failure carries it as `httpStatus`.
 *
 * `stop`, when given, is the controller of `job.signal` itself, which the
 * handler may abort (the dispatch's, one per attempt); without it the
 * request gets a controller of its own that the job's signal aborts.
 */
export async function deliverHttp(job: JobContext, delivery: HttpDelivery, stop?: AbortController): Promise<{ status: number }> {
  const url = job.target?.url ?? delivery.topicUrl;
  if (!url) throw new PermanentError(`topic ${job.topic} has no url and the job no target; set one with PUT /v1/topics/${job.topic}`);
  const refused = url === delivery.topicUrl && delivery.topicUrlRefused !== undefined ? delivery.topicUrlRefused : forbiddenTarget(url, delivery.allowPrivate);
  if (refused) throw new PermanentError(`refused target ${url}: ${refused}`);
  const method = job.target?.method ?? "POST";
  const body = method === "GET" ? undefined : JSON.stringify(job.payload ?? null);
  const headers = await deliveryHeaders(job, delivery, body);
  if (stop) return request(job, delivery, url, { method, headers, body }, stop);
  // The request's own signal: the job's timeout aborts it, and so does the
  // handler when it stops reading a response body (which frees the connection).
  const own = new AbortController();
  const onTimeout = () => own.abort(job.signal.reason);
  if (job.signal.aborted) onTimeout();
  else job.signal.addEventListener("abort", onTimeout, { once: true });
  try {
    return await request(job, delivery, url, { method, headers, body }, own);
  } finally {
    job.signal.removeEventListener("abort", onTimeout);
  }
}

/** What a delivery sends. */
interface Sent {
  method: string;
  headers: Record<string, string> | Headers;
  body: string | undefined;
}

/** Sends the delivery and reads its response into a status or an error, aborting through `stop` what it stops reading. */
async function request(job: JobContext, delivery: HttpDelivery, url: string, sent: Sent, stop: AbortController): Promise<{ status: number }> {
  let res: Response;
  try {
    res = await job.fetch(url, { method: sent.method, headers: sent.headers, body: sent.body, redirect: "manual", signal: stop.signal });
  } catch (err) {
    throw new RetryableError(`${job.signal.aborted ? "timed out" : "network error"}: ${(err as Error).message}`);
  }
  const deadlines = delivery.deadlines ?? new Deadlines();
  if (res.ok) {
    await readBody(res, stop, 0, deadlines);
    return { status: res.status };
  }
  const text = cutErrorText(`HTTP ${res.status}${(await errorBody(res, stop, deadlines)).replace(/^/, ": ").replace(/^: $/, "")}`);
  if (res.status >= 500 || RETRYABLE.has(res.status)) {
    throw new RetryableError(text, retryAfterMs(res.headers.get("retry-after"), Date.now()) ?? undefined, res.status);
  }
  if (res.status >= 300 && res.status < 400) throw new PermanentError(`${text} (redirects are not followed)`, res.status);
  throw new PermanentError(text, res.status);
}
