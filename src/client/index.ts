/**
 * A typed client for delayline's HTTP API. Works in Node ≥ 20 and Workers
 * (anything with fetch). Every non-2xx answer becomes a {@link DelaylineError}
 * carrying the problem document.
 */
export { Receiver, signPayload, verifySignature, type VerifyOptions, type VerifyResult } from "./signature.js";

import type { z } from "@hono/zod-openapi";
import type * as scheduleSchemas from "../producer/schedule-schemas.js";
import type * as schemas from "../producer/schemas.js";

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
export type Problem = z.output<typeof schemas.Problem>;
export type Stats = z.output<typeof schemas.StatsView>;
/** A recurring schedule, as PUT /v1/schedules/:id takes it. */
export type ScheduleRequest = z.input<typeof scheduleSchemas.ScheduleBody>;
export type Schedule = z.output<typeof scheduleSchemas.ScheduleView>;
export type SchedulePage = z.output<typeof scheduleSchemas.ScheduleList>;

/** A non-2xx answer. `status` and `problem` say what went wrong; 503s are safe to retry with an idempotency key. */
export class DelaylineError extends Error {
  override name = "DelaylineError";
  constructor(
    readonly status: number,
    readonly problem: Problem,
  ) {
    super(`${status} ${problem.title}: ${problem.detail}`);
  }
}

/** Options of {@link Delayline}. */
export interface DelaylineOptions {
  /** The Worker's URL, e.g. `https://delayline.example.workers.dev`. */
  baseUrl: string;
  /** An API token (`DELAYLINE_TOKEN`). */
  token: string;
  /** Replaces the global fetch (tests, service bindings). Default `globalThis.fetch`. */
  fetch?: (request: Request) => Response | Promise<Response>;
}

export class Delayline {
  private readonly base: string;
  private readonly doFetch: (request: Request) => Response | Promise<Response>;

  constructor(private readonly options: DelaylineOptions) {
    this.base = options.baseUrl.replace(/\/+$/, "");
    this.doFetch = options.fetch ?? ((r) => fetch(r));
  }

  private async request<T>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
    const text = await this.send(method, path, body, headers);
    return (text ? JSON.parse(text) : null) as T;
  }

  /** Sends a request and returns the body of a 2xx answer as text; throws a DelaylineError otherwise. */
  private async send(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<string> {
    const init: RequestInit = { method, headers: { authorization: `Bearer ${this.options.token}`, ...headers } };
    if (body !== undefined) {
      init.body = typeof body === "string" ? body : JSON.stringify(body);
      (init.headers as Record<string, string>)["content-type"] ??= "application/json";
    }
    const res = await this.doFetch(new Request(this.base + path, init));
    const text = await res.text();
    if (!res.ok) {
      let parsed: unknown = null;
      try {
        parsed = JSON.parse(text);
      } catch {
        // not a problem document: described from the status below
      }
      const problem =
        parsed && typeof parsed === "object" && "status" in parsed
          ? (parsed as Problem)
          : { type: "about:blank", title: res.statusText, status: res.status, detail: text.slice(0, 200) };
      throw new DelaylineError(res.status, problem);
    }
    return text;
  }

  private static seg(s: string): string {
    return encodeURIComponent(s);
  }

  /** Enqueues one job; a repeated idempotency key returns the first job with `deduplicated: true`. */
  enqueue(job: JobRequest): Promise<Enqueued> {
    return this.request("POST", "/v1/jobs", job);
  }

  /** Enqueues up to 1,000 jobs, all or nothing. */
  async enqueueBatch(jobs: JobRequest[]): Promise<Enqueued[]> {
    return (await this.request<{ jobs: Enqueued[] }>("POST", "/v1/jobs/batch", { jobs })).jobs;
  }

  /** A job's state, or null when unknown or past its retention. */
  async get(id: string): Promise<Job | null> {
    try {
      return await this.request<Job>("GET", `/v1/jobs/${Delayline.seg(id)}`);
    } catch (err) {
      if (err instanceof DelaylineError && err.status === 404) return null;
      throw err;
    }
  }

  /** Cancels a scheduled job (409 when in flight). */
  async cancel(id: string): Promise<void> {
    await this.request("DELETE", `/v1/jobs/${Delayline.seg(id)}`);
  }

  /** Moves a scheduled job to a new time. */
  reschedule(id: string, when: { delay: Duration } | { runAt: string | number }): Promise<{ id: string; dueAt: string }> {
    return this.request("PATCH", `/v1/jobs/${Delayline.seg(id)}`, when);
  }

  async topics(): Promise<Topic[]> {
    return (await this.request<{ topics: Topic[] }>("GET", "/v1/topics")).topics;
  }

  topic(name: string): Promise<Topic> {
    return this.request("GET", `/v1/topics/${Delayline.seg(name)}`);
  }

  configureTopic(name: string, patch: TopicSettingsPatch): Promise<Topic> {
    return this.request("PUT", `/v1/topics/${Delayline.seg(name)}`, patch);
  }

  /**
   * Deletes a topic with its settings and metrics. Refused (409, a
   * {@link DelaylineError}) while it holds jobs; `purge: true` drops its
   * scheduled jobs and dead letters too. Jobs in flight always refuse it.
   */
  deleteTopic(name: string, options: { purge?: boolean } = {}): Promise<{ topic: string; deleted: true; purged: { scheduled: number; dead: number } }> {
    return this.request("DELETE", `/v1/topics/${Delayline.seg(name)}${options.purge ? "?purge=true" : ""}`);
  }

  pause(name: string): Promise<Topic> {
    return this.request("POST", `/v1/topics/${Delayline.seg(name)}/pause`);
  }

  resume(name: string): Promise<Topic> {
    return this.request("POST", `/v1/topics/${Delayline.seg(name)}/resume`);
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
    return this.request("GET", `/v1/topics/${Delayline.seg(topic)}/jobs${qs ? `?${qs}` : ""}`);
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
      const r: BulkCancelled = await this.request("POST", `/v1/topics/${Delayline.seg(topic)}/jobs/cancel`, { ...what, ...(cursor === null ? {} : { cursor }) });
      cancelled += r.cancelled;
      cursor = r.cursor;
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
    return this.request("GET", `/v1/topics/${Delayline.seg(topic)}/dead${qs ? `?${qs}` : ""}`);
  }

  /**
   * Puts dead jobs back on the schedule with fresh attempts: given ids, all,
   * or those a filter picks (`failedFrom`, `failedTo`, `error`: a text their
   * last error holds), call after call through the cursor, each a bounded
   * batch on the server. `spread` ("10m") spreads the jobs over that long.
   * `notFound` lists the given ids that were not dead letters.
   */
  async replay(
    topic: string,
    what: ({ ids: string[] } | { all: true } | { failedFrom?: string | number; failedTo?: string | number; error?: string }) & { delay?: Duration; spread?: Duration },
  ): Promise<{ replayed: number; notFound: string[] }> {
    let replayed = 0;
    let cursor: string | null = null;
    for (;;) {
      const r: Replayed = await this.request("POST", `/v1/topics/${Delayline.seg(topic)}/dead/replay`, { ...what, ...(cursor === null ? {} : { cursor }) });
      replayed += r.replayed;
      cursor = r.cursor;
      if (cursor === null) return { replayed, notFound: r.notFound };
    }
  }

  /** Drops a topic's dead letters — all, or those a filter picks — call after call through the cursor; returns how many. */
  async purgeDead(topic: string, filter: { failedFrom?: string | number; failedTo?: string | number; error?: string } = {}): Promise<number> {
    let purged = 0;
    let cursor: string | null = null;
    for (;;) {
      const q = new URLSearchParams();
      for (const [name, value] of Object.entries({ ...filter, cursor })) if (value !== undefined && value !== null) q.set(name, String(value));
      const qs = q.toString();
      const r: { purged: number; cursor: string | null } = await this.request("DELETE", `/v1/topics/${Delayline.seg(topic)}/dead${qs ? `?${qs}` : ""}`);
      purged += r.purged;
      cursor = r.cursor;
      if (cursor === null) return purged;
    }
  }

  /** Drops one dead letter; false when the topic holds none with that id. */
  async deleteDeadLetter(topic: string, id: string): Promise<boolean> {
    try {
      await this.request("DELETE", `/v1/topics/${Delayline.seg(topic)}/dead/${Delayline.seg(id)}`);
      return true;
    } catch (err) {
      if (err instanceof DelaylineError && err.status === 404) return false;
      throw err;
    }
  }

  /** Pull consumers: lease up to `max` due jobs of a pull-mode topic. */
  async claim(topic: string, options: { max?: number; leaseMs?: number } = {}): Promise<ClaimedJob[]> {
    return (await this.request<{ jobs: ClaimedJob[] }>("POST", `/v1/topics/${Delayline.seg(topic)}/claim`, options)).jobs;
  }

  /** Pull consumers: the attempt succeeded. A stale attempt throws a 409 DelaylineError. */
  async ack(id: string, attempt: number): Promise<void> {
    await this.request("POST", `/v1/jobs/${Delayline.seg(id)}/ack`, { attempt });
  }

  /** Pull consumers: the attempt failed; retried by policy (or after retryAfterMs), or dead when permanent or out of attempts. */
  async nack(id: string, attempt: number, failure: { error: string; retryAfterMs?: number; permanent?: boolean }): Promise<"scheduled" | "dead"> {
    return (await this.request<{ state: "scheduled" | "dead" }>("POST", `/v1/jobs/${Delayline.seg(id)}/nack`, { attempt, ...failure })).state;
  }

  /** Every topic's backlog, counters, histograms and `minutes` (default 60, 0–1,440) of per-minute series, and the tick's heartbeat. */
  stats(options: { minutes?: number } = {}): Promise<Stats> {
    return this.request("GET", `/v1/stats${options.minutes !== undefined ? `?minutes=${options.minutes}` : ""}`);
  }

  /** The Prometheus exposition text of GET /metrics. */
  metrics(): Promise<string> {
    return this.send("GET", "/metrics");
  }

  /** Sends a raw webhook body to a topic's ingest endpoint (with the API token). */
  ingest(topic: string, body: string, options: { contentType?: string; delay?: Duration } = {}): Promise<{ id: string; deduplicated: boolean }> {
    const qs = options.delay !== undefined ? `?delay=${encodeURIComponent(String(options.delay))}` : "";
    return this.request("POST", `/v1/hooks/${Delayline.seg(topic)}${qs}`, body, { "content-type": options.contentType ?? "application/octet-stream" });
  }

  /** Recurring schedules: each occurrence stores one ordinary job from the schedule's template. */
  readonly schedules = {
    /** Creates or replaces a schedule (a replacement with the same timing keeps its next occurrence). */
    upsert: async (id: string, schedule: ScheduleRequest): Promise<Schedule> =>
      this.request<Schedule>("PUT", `/v1/schedules/${Delayline.seg(id)}`, schedule),
    /** A schedule with its next occurrences and last run, or null when there is none. */
    get: async (id: string): Promise<Schedule | null> => {
      try {
        return await this.request<Schedule>("GET", `/v1/schedules/${Delayline.seg(id)}`);
      } catch (err) {
        if (err instanceof DelaylineError && err.status === 404) return null;
        throw err;
      }
    },
    /** One page of schedules in id order. */
    list: (options: { limit?: number; cursor?: string } = {}): Promise<SchedulePage> => {
      const q = new URLSearchParams();
      if (options.limit !== undefined) q.set("limit", String(options.limit));
      if (options.cursor !== undefined) q.set("cursor", options.cursor);
      return this.request<SchedulePage>("GET", `/v1/schedules${q.size > 0 ? `?${q}` : ""}`);
    },
    /** Every schedule, page after page: `for await (const s of dl.schedules.all())`. */
    all: (): AsyncGenerator<Schedule, void, undefined> => this.allSchedules(),
    /** Deletes a schedule (the jobs it stored stay); false when there was none. */
    delete: async (id: string): Promise<boolean> => {
      try {
        await this.request("DELETE", `/v1/schedules/${Delayline.seg(id)}`);
        return true;
      } catch (err) {
        if (err instanceof DelaylineError && err.status === 404) return false;
        throw err;
      }
    },
    /** Skips the schedule's occurrences until it is resumed. */
    pause: (id: string): Promise<Schedule> => this.request<Schedule>("POST", `/v1/schedules/${Delayline.seg(id)}/pause`),
    /** Goes on from the schedule's next occurrence after now. */
    resume: (id: string): Promise<Schedule> => this.request<Schedule>("POST", `/v1/schedules/${Delayline.seg(id)}/resume`),
  };

  private async *allSchedules(): AsyncGenerator<Schedule, void, undefined> {
    let cursor: string | undefined;
    do {
      const page: SchedulePage = await this.schedules.list(cursor === undefined ? {} : { cursor });
      yield* page.schedules;
      cursor = page.cursor ?? undefined;
    } while (cursor !== undefined);
  }
}
