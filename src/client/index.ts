/**
 * A typed client for delayline's HTTP API. Works in Node ≥ 20, Workers,
 * Deno, Bun and browsers (anything with fetch), with no runtime dependency:
 * every import below that is not of a sibling file is of types only. Every
 * non-2xx answer becomes a {@link DelaylineError} subclass carrying the
 * problem document; requests that are safe to repeat are retried.
 */
export { Receiver, type ReceiverOptions } from "./receiver.js";
export { signPayload, signStandard } from "../protocol/sign.js";
export type { SignatureScheme } from "../protocol/signature-schemes.js";
export { verifySignature, verifyStandardSignature, type StandardVerifyOptions, type VerifyOptions, type VerifyResult } from "../protocol/verify.js";

import type { z } from "@hono/zod-openapi";
import type * as scheduleSchemas from "../producer/schedule-schemas.js";
import type * as schemas from "../producer/schemas.js";
import {
  DelaylineConflictError,
  DelaylineError,
  DelaylineNotFoundError,
  DelaylineRateLimitError,
  DelaylineUnavailableError,
  errorFromFailure,
  errorFromResponse,
} from "./errors.js";

export {
  CLIENT_PROBLEM_TYPES,
  DelaylineAuthError,
  DelaylineConflictError,
  DelaylineError,
  DelaylineNotFoundError,
  DelaylineRateLimitError,
  DelaylineUnavailableError,
  DelaylineValidationError,
  type Problem,
  type ProblemType,
} from "./errors.js";

// Every request and response type is the API's own zod schema, imported as a
// type only: the client carries no schema code, and cannot drift from the server.
type Duration = string | number;
/** A job to enqueue, as POST /v1/jobs takes it. */
export type JobRequest = z.input<typeof schemas.JobBody>;
export type Enqueued = z.output<typeof schemas.EnqueueResponse>;
export type Job = z.output<typeof schemas.JobView>;
/** A change to a topic's settings, as PUT /v1/topics/:topic takes it. */
export type TopicSettingsPatch = z.input<typeof schemas.TopicSettingsBody>;
export type Topic = z.output<typeof schemas.TopicView>;
export type TopicPage = z.output<typeof schemas.TopicList>;
export type DeadLetter = z.output<typeof schemas.DeadEntryView>;
/** One attempt of a job's history (Job.history, DeadLetter.history). */
export type Attempt = z.output<typeof schemas.AttemptView>;
/** A job as a listing shows it. */
export type ListedJob = z.output<typeof schemas.ListedJobView>;
export type JobPage = z.output<typeof schemas.JobPage>;
/** What one call of POST /v1/topics/:topic/jobs/cancel did. */
export type BulkCancelled = z.output<typeof schemas.BulkCancelResult>;

/** What a listing of a topic's jobs shows. */
export interface ListJobsOptions {
  /** "scheduled" (in due order), "inflight" (in lease-deadline order) or "dead" (dead letters, newest first). Default "scheduled". */
  state?: "scheduled" | "inflight" | "dead";
  /** Earliest due time (scheduled), lease deadline (in flight) or failed time (dead) listed: ISO 8601 or epoch ms. Default: none. */
  from?: string | number;
  /** Latest due time (scheduled), lease deadline (in flight) or failed time (dead) listed: ISO 8601 or epoch ms. Default: none. */
  to?: string | number;
  /** Jobs per page, 1–1,000. Default 100. */
  limit?: number;
  /** Include payloads. Default false. */
  payload?: boolean;
}
/** What a replay did: how many jobs it put back, and which given ids were not dead letters. */
export type Replayed = z.output<typeof schemas.ReplayResult>;
export type ClaimedJob = z.output<typeof schemas.ClaimedView>;
export type Stats = z.output<typeof schemas.StatsView>;
/** A recurring schedule, as PUT /v1/schedules/:id takes it. */
export type ScheduleRequest = z.input<typeof scheduleSchemas.ScheduleBody>;
export type Schedule = z.output<typeof scheduleSchemas.ScheduleView>;
export type SchedulePage = z.output<typeof scheduleSchemas.ScheduleList>;
/** What GET /healthz answers (200 when Redis is up, 503 when down). */
export interface Health {
  ok: boolean;
  redis: "up" | "down";
  /** When the tick last ran (epoch ms), or null when it never has. */
  lastTickAt: number | null;
  tickAgeMs: number | null;
}

/** How the client retries a request that is safe to retry. */
export interface RetryOptions {
  /** Retries after the first attempt. Default 5. */
  retries?: number;
  /**
   * The wait in ms before retry number `retryCount` (0 for the first retry).
   * Default: 200 ms doubling up to 5 s, each with jitter (a random half to
   * all of it) so clients that failed together do not retry together —
   * about 3 to 6 s over the 5 default retries. A Retry-After longer than
   * the backoff is waited instead (503s from the Worker ask for 1 s).
   */
  backoff?: (retryCount: number) => number;
}

/** What {@link DelaylineOptions.onRetry} is told before each wait. */
export interface RetryEvent {
  method: string;
  /** The path and query, e.g. `/v1/jobs`. */
  path: string;
  /** The attempt that failed, 1 for the first. */
  attempt: number;
  /** How long the client waits before the next attempt. */
  delayMs: number;
  error: DelaylineError;
}

/** Options of {@link Delayline}. */
export interface DelaylineOptions {
  /** The Worker's URL, e.g. `https://delayline.example.workers.dev`. */
  baseUrl: string;
  /** An API token (`DELAYLINE_TOKEN`). */
  token: string;
  /** Replaces the global fetch (tests, service bindings). Default `globalThis.fetch`. */
  fetch?: (request: Request) => Response | Promise<Response>;
  /**
   * How long one attempt may take, in ms, before it is abandoned as a
   * {@link DelaylineUnavailableError} (status 0) — and retried if the
   * request is safe to retry. 0 waits as long as fetch does. Default 10,000.
   */
  timeoutMs?: number;
  /**
   * Retries of 503s, 429s (honouring Retry-After), network errors and
   * timeouts, for requests that are safe to repeat (see the README's table:
   * reads, enqueues with an idempotency key, settings, cancels, deletes,
   * replays and purges; never claim, ack, nack or ingest). `false` turns them
   * off. Default `{ retries: 5 }` with the default backoff.
   */
  retry?: RetryOptions | false;
  /**
   * Whether an enqueue without an `idempotencyKey` gets one
   * (crypto.randomUUID()), so that retrying it can never store the job
   * twice. Each key is a Redis string kept for the Worker's
   * IDEMPOTENCY_WINDOW_MS (24 h by default), and keyed enqueues take the
   * Lua script rather than the three-command path. `false`: enqueues
   * without a key are sent once and never retried. Default true (false when
   * `retry` is false).
   */
  idempotencyKeys?: boolean;
  /** Called before each retry's wait, e.g. to log it. Default: nothing. */
  onRetry?: (event: RetryEvent) => void;
}

/** 200 ms doubling to 5 s, each a random half to all of it. */
/** A 2xx answer that is not the API's (not a JSON object): the base URL names something else. */
function notTheApi(method: string, url: string, text: string): DelaylineError {
  const shown = text.length > 80 ? `${text.slice(0, 80)}…` : text;
  return new DelaylineError(0, {
    type: "urn:delayline:client:not-the-api",
    title: "Not delayline's API",
    status: 0,
    detail: `${method} ${url} answered ${JSON.stringify(shown)}, not a JSON object as delayline's API does: is the base URL the Worker's?`,
  });
}

const defaultBackoff = (retryCount: number): number => Math.min(5_000, 200 * 2 ** retryCount) * (0.5 + Math.random() / 2);

/** A Retry-After past this is not waited for: the error goes to the caller, who can decide to wait that long. */
const MAX_RETRY_AFTER_MS = 60_000;

/** How a request may be repeated. */
interface SendOptions {
  headers?: Record<string, string>;
  /** Whether sending it again after an unknown outcome can do no more than sending it once. */
  retry: boolean;
  /** Whether a non-2xx answer's body is the answer rather than a problem. */
  accept?: (status: number, text: string) => boolean;
}

/** Whether a body is GET /healthz's answer. */
function isHealth(text: string): boolean {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === "object" && v !== null && "ok" in v && "redis" in v;
  } catch {
    return false;
  }
}

const SAFE: SendOptions = { retry: true };
const ONCE: SendOptions = { retry: false };

export class Delayline {
  private readonly base: string;
  private readonly doFetch: (request: Request) => Response | Promise<Response>;
  private readonly timeoutMs: number;
  private readonly retries: number;
  private readonly backoff: (retryCount: number) => number;
  private readonly generateKeys: boolean;

  constructor(private readonly options: DelaylineOptions) {
    this.base = options.baseUrl.replace(/\/+$/, "");
    this.doFetch = options.fetch ?? ((r) => fetch(r));
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.retries = options.retry === false ? 0 : Math.max(0, Math.floor(options.retry?.retries ?? 5));
    this.backoff = (options.retry === false ? undefined : options.retry?.backoff) ?? defaultBackoff;
    this.generateKeys = options.idempotencyKeys ?? this.retries > 0;
  }

  private async request<T>(method: string, path: string, body: unknown, how: SendOptions): Promise<T> {
    const text = await this.send(method, path, body, how);
    if (!text) return null as T;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    // Every answer of the API is a JSON object: anything else came from something that is not the Worker (a wrong baseUrl).
    if (parsed === null || typeof parsed !== "object") throw notTheApi(method, this.base + path, text);
    return parsed as T;
  }

  /**
   * Sends a request and returns the body of a 2xx answer as text; throws a
   * DelaylineError otherwise. A request marked safe is sent again after a
   * 503, a 429, a network error or a timeout, up to the retries allowed.
   */
  private async send(method: string, path: string, body: unknown, how: SendOptions): Promise<string> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.options.token}`, ...how.headers };
    let payload: string | undefined;
    if (body !== undefined) {
      payload = typeof body === "string" ? body : JSON.stringify(body);
      headers["content-type"] ??= "application/json";
    }
    for (let attempt = 1; ; attempt++) {
      let error: DelaylineError;
      try {
        return await this.attempt(method, path, payload, headers, how.accept);
      } catch (err) {
        if (!(err instanceof DelaylineError)) throw err;
        error = err;
      }
      error.attempts = attempt;
      if (!how.retry || !(error instanceof DelaylineUnavailableError || error instanceof DelaylineRateLimitError) || attempt > this.retries) throw error;
      const asked = error.retryAfterMs;
      if (asked !== null && asked > MAX_RETRY_AFTER_MS) throw error;
      const delayMs = Math.max(0, Math.round(Math.max(this.backoff(attempt - 1), asked ?? 0)));
      this.options.onRetry?.({ method, path, attempt, delayMs, error });
      await new Promise((r) => setTimeout(r, delayMs));
    }
  }

  /** One attempt: a fresh Request (a body can be read once), under its own timeout. */
  private async attempt(
    method: string,
    path: string,
    payload: string | undefined,
    headers: Record<string, string>,
    accept?: SendOptions["accept"],
  ): Promise<string> {
    const signal = this.timeoutMs > 0 ? AbortSignal.timeout(this.timeoutMs) : undefined;
    const init: RequestInit = { method, headers };
    if (payload !== undefined) init.body = payload;
    if (signal) init.signal = signal;
    let res: Response;
    let text: string;
    try {
      res = await this.doFetch(new Request(this.base + path, init));
      text = await res.text();
    } catch (err) {
      throw errorFromFailure(err, signal?.aborted === true, this.timeoutMs);
    }
    if (!res.ok && !accept?.(res.status, text)) throw errorFromResponse(res, text);
    return text;
  }

  private static seg(s: string): string {
    return encodeURIComponent(s);
  }

  /** The Worker's liveness, Redis's reachability and the tick's heartbeat (GET /healthz, no token needed). Sent once: it says how things are now. */
  health(): Promise<Health> {
    // The Worker's 503 is the answer "Redis is down", in the same shape as its 200; anyone else's is an error.
    return this.request<Health>("GET", "/healthz", undefined, { retry: false, accept: (status, text) => status === 503 && isHealth(text) });
  }

  /**
   * Enqueues one job; a repeated idempotency key returns the first job with
   * `deduplicated: true`. Without a key the client makes one
   * ({@link DelaylineOptions.idempotencyKeys}), so a retry after a lost
   * answer returns the job the first attempt stored; `deduplicated` is then
   * false, since no earlier call of the caller's made it.
   */
  async enqueue(job: JobRequest): Promise<Enqueued> {
    const given = job.idempotencyKey;
    const key = given ?? (this.generateKeys ? crypto.randomUUID() : undefined);
    if (key === undefined) return this.request("POST", "/v1/jobs", job, ONCE);
    const r = await this.request<Enqueued>("POST", "/v1/jobs", job, { headers: { "idempotency-key": key }, retry: true });
    return given === undefined ? { ...r, deduplicated: false } : r;
  }

  /**
   * Enqueues up to 1,000 jobs, all or nothing. Jobs without an idempotency
   * key get one as {@link enqueue}'s do, so a retried batch stores each job
   * once; the batch is retried only when every job has a key.
   */
  async enqueueBatch(jobs: JobRequest[]): Promise<Enqueued[]> {
    const keyed = jobs.map((j) => (j.idempotencyKey === undefined && this.generateKeys ? { ...j, idempotencyKey: crypto.randomUUID() } : j));
    const retry = keyed.every((j) => j.idempotencyKey !== undefined);
    const r = (await this.request<{ jobs: Enqueued[] }>("POST", "/v1/jobs/batch", { jobs: keyed }, { retry })).jobs;
    return r.map((e, i) => (jobs[i]?.idempotencyKey === undefined ? { ...e, deduplicated: false } : e));
  }

  /** A job's state, or null when unknown or past its retention. */
  async get(id: string): Promise<Job | null> {
    try {
      return await this.request<Job>("GET", `/v1/jobs/${Delayline.seg(id)}`, undefined, SAFE);
    } catch (err) {
      if (err instanceof DelaylineNotFoundError) return null;
      throw err;
    }
  }

  /**
   * Cancels a scheduled job: a {@link DelaylineConflictError} when it is in
   * flight or finished, {@link DelaylineNotFoundError} when unknown. Retried
   * like a read: when a retry finds the job already cancelled (the lost
   * answer's attempt did it), the cancel succeeded.
   */
  async cancel(id: string): Promise<void> {
    try {
      await this.request("DELETE", `/v1/jobs/${Delayline.seg(id)}`, undefined, SAFE);
    } catch (err) {
      if (err instanceof DelaylineConflictError && err.attempts > 1 && (await this.get(id))?.state === "cancelled") return;
      throw err;
    }
  }

  /** Moves a scheduled job to a new time. */
  reschedule(id: string, when: { delay: Duration } | { runAt: string | number }): Promise<{ id: string; dueAt: string }> {
    return this.request("PATCH", `/v1/jobs/${Delayline.seg(id)}`, when, SAFE);
  }

  /**
   * One page of the registered topics in name order (default 100 a page, at
   * most 500); pass `nextCursor` back as `cursor` for the next. `total` counts
   * every topic.
   */
  listTopics(options: { limit?: number; cursor?: string } = {}): Promise<TopicPage> {
    return this.request("GET", `/v1/topics${Delayline.pageQuery(options)}`, undefined, SAFE);
  }

  /**
   * Every topic, page after page: `for await (const t of dl.allTopics())`.
   * Fetches the next page only when the loop reaches it.
   */
  async *allTopics(options: { limit?: number } = {}): AsyncGenerator<Topic, void, undefined> {
    let cursor: string | undefined;
    do {
      const page: TopicPage = await this.listTopics({ ...options, ...(cursor === undefined ? {} : { cursor }) });
      yield* page.topics;
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
  }

  /** Every topic in one array, read page after page (see {@link allTopics} to stop early). */
  async topics(): Promise<Topic[]> {
    const all: Topic[] = [];
    for await (const t of this.allTopics({ limit: 500 })) all.push(t);
    return all;
  }

  private static pageQuery(options: { limit?: number; cursor?: string; minutes?: number }): string {
    const q = new URLSearchParams();
    if (options.minutes !== undefined) q.set("minutes", String(options.minutes));
    if (options.limit !== undefined) q.set("limit", String(options.limit));
    if (options.cursor !== undefined) q.set("cursor", options.cursor);
    return q.size > 0 ? `?${q}` : "";
  }

  topic(name: string): Promise<Topic> {
    return this.request("GET", `/v1/topics/${Delayline.seg(name)}`, undefined, SAFE);
  }

  configureTopic(name: string, patch: TopicSettingsPatch): Promise<Topic> {
    return this.request("PUT", `/v1/topics/${Delayline.seg(name)}`, patch, SAFE);
  }

  /**
   * Deletes a topic with its settings and metrics. Refused (409, a
   * {@link DelaylineError}) while it holds jobs; `purge: true` drops its
   * scheduled jobs and dead letters too. Jobs in flight always refuse it.
   */
  deleteTopic(name: string, options: { purge?: boolean } = {}): Promise<{ topic: string; deleted: true; purged: { scheduled: number; dead: number } }> {
    return this.request("DELETE", `/v1/topics/${Delayline.seg(name)}${options.purge ? "?purge=true" : ""}`, undefined, SAFE);
  }

  pause(name: string): Promise<Topic> {
    return this.request("POST", `/v1/topics/${Delayline.seg(name)}/pause`, undefined, SAFE);
  }

  resume(name: string): Promise<Topic> {
    return this.request("POST", `/v1/topics/${Delayline.seg(name)}/resume`, undefined, SAFE);
  }

  /**
   * One page of a topic's scheduled jobs, jobs in flight or dead letters; pass `nextCursor`
   * back as `cursor` for the next. A cursor is a position, so jobs enqueued,
   * claimed or cancelled meanwhile never make a page repeat or skip one.
   */
  listJobs(topic: string, options: ListJobsOptions & { cursor?: string } = {}): Promise<JobPage> {
    const q = new URLSearchParams();
    if (options.state !== undefined) q.set("state", options.state);
    if (options.from !== undefined) q.set("from", String(options.from));
    if (options.to !== undefined) q.set("to", String(options.to));
    if (options.limit !== undefined) q.set("limit", String(options.limit));
    if (options.cursor !== undefined) q.set("cursor", options.cursor);
    if (options.payload) q.set("payload", "true");
    const qs = q.toString();
    return this.request("GET", `/v1/topics/${Delayline.seg(topic)}/jobs${qs ? `?${qs}` : ""}`, undefined, SAFE);
  }

  /**
   * Every job of a listing, page after page:
   * `for await (const job of dl.jobs("mail", { state: "scheduled" }))`.
   * Fetches the next page only when the loop reaches it.
   */
  async *jobs(topic: string, options: ListJobsOptions = {}): AsyncGenerator<ListedJob, void, undefined> {
    let cursor: string | undefined;
    do {
      const page: JobPage = await this.listJobs(topic, { ...options, ...(cursor === undefined ? {} : { cursor }) });
      yield* page.jobs;
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
  }

  /**
   * Cancels scheduled jobs of a topic — given ids (up to 1,000), a due
   * window, or all — call after call through the cursor, each call a bounded
   * batch on the server. Jobs in flight are left alone: `inflight` counts the
   * given ones in flight (ids), or the topic's jobs in flight (a window or all).
   */
  async cancelJobs(
    topic: string,
    what: { ids: string[] } | { dueFrom?: string | number; dueTo?: string | number } | { all: true },
  ): Promise<{ cancelled: number; inflight: number; notScheduled?: number }> {
    let cancelled = 0;
    let cursor: string | null = null;
    for (;;) {
      const r: BulkCancelled = await this.request(
        "POST",
        `/v1/topics/${Delayline.seg(topic)}/jobs/cancel`,
        { ...what, ...(cursor === null ? {} : { cursor }) },
        SAFE,
      );
      cancelled += r.cancelled;
      cursor = r.nextCursor;
      if (cursor === null) return { cancelled, inflight: r.inflight, ...(r.notScheduled === undefined ? {} : { notScheduled: r.notScheduled }) };
    }
  }

  /**
   * A page of dead letters, newest first, optionally within a failed-time
   * window; pass `nextCursor` back as `cursor` for the next. A cursor is a
   * position, so letters that arrive or go meanwhile never make a page
   * repeat or skip one.
   */
  deadLetters(
    topic: string,
    page: { limit?: number; cursor?: string; failedFrom?: string | number; failedTo?: string | number } = {},
  ): Promise<{ entries: DeadLetter[]; nextCursor: string | null }> {
    const q = new URLSearchParams();
    for (const [name, value] of Object.entries(page)) if (value !== undefined) q.set(name, String(value));
    const qs = q.toString();
    return this.request("GET", `/v1/topics/${Delayline.seg(topic)}/dead${qs ? `?${qs}` : ""}`, undefined, SAFE);
  }

  /**
   * Puts dead jobs back on the schedule with fresh attempts: given ids, all,
   * or those a filter picks (`failedFrom`, `failedTo`, `error`: a text their
   * last error holds), call after call through the cursor, each a bounded
   * batch on the server. `spread` ("10m") spreads the jobs over that long.
   * `notFound` lists the given ids that were not dead letters.
   */
  async replayDeadLetters(
    topic: string,
    what: ({ ids: string[] } | { all: true } | { failedFrom?: string | number; failedTo?: string | number; error?: string }) & {
      delay?: Duration;
      spread?: Duration;
    },
  ): Promise<{ replayed: number; notFound: string[] }> {
    let replayed = 0;
    let cursor: string | null = null;
    for (;;) {
      const r: Replayed = await this.request(
        "POST",
        `/v1/topics/${Delayline.seg(topic)}/dead/replay`,
        { ...what, ...(cursor === null ? {} : { cursor }) },
        SAFE,
      );
      replayed += r.replayed;
      cursor = r.nextCursor;
      if (cursor === null) return { replayed, notFound: r.notFound };
    }
  }

  /** Drops a topic's dead letters — all, or those a filter picks — call after call through the cursor; returns how many. */
  async purgeDeadLetters(topic: string, filter: { failedFrom?: string | number; failedTo?: string | number; error?: string } = {}): Promise<number> {
    let purged = 0;
    let cursor: string | null = null;
    for (;;) {
      const q = new URLSearchParams();
      for (const [name, value] of Object.entries({ ...filter, cursor })) if (value !== undefined && value !== null) q.set(name, String(value));
      const qs = q.toString();
      const r: { purged: number; nextCursor: string | null } = await this.request(
        "DELETE",
        `/v1/topics/${Delayline.seg(topic)}/dead${qs ? `?${qs}` : ""}`,
        undefined,
        SAFE,
      );
      purged += r.purged;
      cursor = r.nextCursor;
      if (cursor === null) return purged;
    }
  }

  /** Drops one dead letter; false when the topic holds none with that id. */
  async deleteDeadLetter(topic: string, id: string): Promise<boolean> {
    try {
      await this.request("DELETE", `/v1/topics/${Delayline.seg(topic)}/dead/${Delayline.seg(id)}`, undefined, SAFE);
      return true;
    } catch (err) {
      if (err instanceof DelaylineNotFoundError) return false;
      throw err;
    }
  }

  /** Pull consumers: lease up to `max` due jobs of a pull-mode topic. */
  async claim(topic: string, options: { max?: number; leaseMs?: number } = {}): Promise<ClaimedJob[]> {
    return (await this.request<{ jobs: ClaimedJob[] }>("POST", `/v1/topics/${Delayline.seg(topic)}/claim`, options, ONCE)).jobs;
  }

  /** Pull consumers: the attempt succeeded. A stale attempt throws a 409 DelaylineError. */
  async ack(id: string, attempt: number): Promise<void> {
    await this.request("POST", `/v1/jobs/${Delayline.seg(id)}/ack`, { attempt }, ONCE);
  }

  /** Pull consumers: the attempt failed; retried by policy (or after retryAfterMs), or dead when permanent or out of attempts. */
  async nack(id: string, attempt: number, failure: { error: string; retryAfterMs?: number; permanent?: boolean }): Promise<"scheduled" | "dead"> {
    return (await this.request<{ state: "scheduled" | "dead" }>("POST", `/v1/jobs/${Delayline.seg(id)}/nack`, { attempt, ...failure }, ONCE)).state;
  }

  /**
   * The tick's heartbeat and one page of topics (name order) with their
   * backlog, counters, histograms and `minutes` (default 60, 0–1,440) of
   * per-minute series: `limit` topics (default 50, at most 100; fewer when
   * minutes × topics would pass 3,000). Pass `nextCursor` back as `cursor`
   * for the next page; `total` counts every topic.
   */
  stats(options: { minutes?: number; limit?: number; cursor?: string } = {}): Promise<Stats> {
    return this.request("GET", `/v1/stats${Delayline.pageQuery(options)}`, undefined, SAFE);
  }

  /** Every page of {@link stats}, one after another: `for await (const page of dl.statsPages({ minutes: 0 }))`. */
  async *statsPages(options: { minutes?: number; limit?: number } = {}): AsyncGenerator<Stats, void, undefined> {
    let cursor: string | undefined;
    do {
      const page: Stats = await this.stats({ ...options, ...(cursor === undefined ? {} : { cursor }) });
      yield page;
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
  }

  /** The Prometheus exposition text of GET /metrics. */
  metrics(): Promise<string> {
    return this.send("GET", "/metrics", undefined, SAFE);
  }

  /** Sends a raw webhook body to a topic's ingest endpoint (with the API token). */
  ingest(topic: string, body: string, options: { contentType?: string; delay?: Duration } = {}): Promise<{ id: string; deduplicated: boolean }> {
    const qs = options.delay !== undefined ? `?delay=${encodeURIComponent(String(options.delay))}` : "";
    return this.request("POST", `/v1/hooks/${Delayline.seg(topic)}${qs}`, body, {
      headers: { "content-type": options.contentType ?? "application/octet-stream" },
      retry: false,
    });
  }

  /** Recurring schedules: each occurrence stores one ordinary job from the schedule's template. */
  readonly schedules = {
    /** Creates or replaces a schedule (a replacement with the same timing keeps its next occurrence). */
    upsert: async (id: string, schedule: ScheduleRequest): Promise<Schedule> =>
      this.request<Schedule>("PUT", `/v1/schedules/${Delayline.seg(id)}`, schedule, SAFE),
    /** A schedule with its next occurrences and last run, or null when there is none. */
    get: async (id: string): Promise<Schedule | null> => {
      try {
        return await this.request<Schedule>("GET", `/v1/schedules/${Delayline.seg(id)}`, undefined, SAFE);
      } catch (err) {
        if (err instanceof DelaylineNotFoundError) return null;
        throw err;
      }
    },
    /** One page of schedules in id order. */
    list: (options: { limit?: number; cursor?: string } = {}): Promise<SchedulePage> => {
      const q = new URLSearchParams();
      if (options.limit !== undefined) q.set("limit", String(options.limit));
      if (options.cursor !== undefined) q.set("cursor", options.cursor);
      return this.request<SchedulePage>("GET", `/v1/schedules${q.size > 0 ? `?${q}` : ""}`, undefined, SAFE);
    },
    /** Every schedule, page after page: `for await (const s of dl.schedules.all())`. */
    all: (): AsyncGenerator<Schedule, void, undefined> => this.allSchedules(),
    /** Deletes a schedule (the jobs it stored stay); false when there was none. */
    delete: async (id: string): Promise<boolean> => {
      try {
        await this.request("DELETE", `/v1/schedules/${Delayline.seg(id)}`, undefined, SAFE);
        return true;
      } catch (err) {
        if (err instanceof DelaylineNotFoundError) return false;
        throw err;
      }
    },
    /** Skips the schedule's occurrences until it is resumed. */
    pause: (id: string): Promise<Schedule> => this.request<Schedule>("POST", `/v1/schedules/${Delayline.seg(id)}/pause`, undefined, SAFE),
    /** Goes on from the schedule's next occurrence after now. */
    resume: (id: string): Promise<Schedule> => this.request<Schedule>("POST", `/v1/schedules/${Delayline.seg(id)}/resume`, undefined, SAFE),
  };

  private async *allSchedules(): AsyncGenerator<Schedule, void, undefined> {
    let cursor: string | undefined;
    do {
      const page: SchedulePage = await this.schedules.list(cursor === undefined ? {} : { cursor });
      yield* page.schedules;
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
  }
}
