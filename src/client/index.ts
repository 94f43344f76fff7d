/**
 * A typed client for delayline's HTTP API. Works in Node ≥ 20, Workers,
 * Deno, Bun and browsers (anything with fetch), with no runtime dependency:
 * every import of the client that is not of its own files or of
 * src/protocol is of types only. One requester sends every request (the
 * token, the timeout, the retries of what is safe to repeat, problem+json
 * turned into a {@link DelaylineError} subclass); the API's resources hang
 * off the client: `dl.jobs`, `dl.topics`, `dl.flowKeys`, `dl.deadLetters`,
 * `dl.schedules`, `dl.stats`, `dl.health` and `dl.hooks`.
 */
import { DeadLettersResource } from "./dead-letters.js";
import { FlowKeysResource } from "./flow-keys.js";
import { HealthResource } from "./health.js";
import { HooksResource } from "./hooks.js";
import { JobsResource } from "./jobs.js";
import type { DelaylineOptions } from "./options.js";
import { Requester } from "./requester.js";
import { SchedulesResource } from "./schedules.js";
import { StatsResource } from "./stats.js";
import { TopicsResource } from "./topics.js";

export * from "./errors.js";
export type { DelaylineOptions, RetryEvent, RetryOptions } from "./options.js";
export type {
  Attempt,
  BulkCancelled,
  BulkCancelOutcome,
  BulkCancelTarget,
  ClaimedJob,
  Duration,
  Enqueued,
  ExtendedLease,
  Job,
  JobPage,
  JobRequest,
  ListJobsOptions,
  ListedJob,
  Upserted,
  UpsertRequest,
} from "./jobs.js";
export type { DeadLetter, DeadLetterFilter, DeadLetterPage, PurgePreview, Replayed, ReplayOutcome, ReplayTarget } from "./dead-letters.js";
export type { FlowSettings, Topic, TopicPage, TopicSettingsPatch } from "./topics.js";
export type { FlowKey, FlowKeyPage, FlowKeySettings } from "./flow-keys.js";
export type { Schedule, SchedulePage, ScheduleRequest } from "./schedules.js";
export type { Stats } from "./stats.js";
export type { Health } from "./health.js";
export type { DeadLettersResource, FlowKeysResource, HealthResource, HooksResource, JobsResource, SchedulesResource, StatsResource, TopicsResource };

// Verifying deliveries: the Receiver, and the functions under it, shared with the server that signs them.
export { Receiver, type ReceiverOptions } from "./receiver.js";
export { signPayload, signStandard } from "../protocol/sign.js";
export type { SignatureScheme } from "../protocol/signature-schemes.js";
export { verifySignature, verifyStandardSignature, type StandardVerifyOptions, type VerifyOptions, type VerifyResult } from "../protocol/verify.js";

/**
 * The client: `new Delayline({ baseUrl, token })`, then a resource's
 * methods — `await dl.jobs.enqueue({ topic: "mail", delay: "1h" })`.
 */
export class Delayline {
  /** Jobs: enqueue, get, cancel, reschedule, a topic's listing and bulk cancel, and pull consumers' claim, ack and nack. */
  readonly jobs: JobsResource;
  /** Topics: their settings, backlog and counters; list, configure, pause, resume, delete. */
  readonly topics: TopicsResource;
  /** A topic's flow keys' own settings (limits, weight, paused) over its `flow` settings: list, get, set, delete, pause, resume. */
  readonly flowKeys: FlowKeysResource;
  /** A topic's dead letters: list, replay, purge, delete. */
  readonly deadLetters: DeadLettersResource;
  /** Recurring schedules: each occurrence stores one ordinary job from the schedule's template. */
  readonly schedules: SchedulesResource;
  /** The tick's heartbeat and every topic's figures (`/v1/stats`), and the same as Prometheus text (`/metrics`). */
  readonly stats: StatsResource;
  /** Whether the Worker and its Redis are up (`/healthz`). */
  readonly health: HealthResource;
  /** Webhook ingest with the API token (`/v1/hooks/:topic`). */
  readonly hooks: HooksResource;

  constructor(options: DelaylineOptions) {
    const requester = new Requester(options);
    this.jobs = new JobsResource(requester);
    this.topics = new TopicsResource(requester);
    this.flowKeys = new FlowKeysResource(requester);
    this.deadLetters = new DeadLettersResource(requester);
    this.schedules = new SchedulesResource(requester);
    this.stats = new StatsResource(requester);
    this.health = new HealthResource(requester);
    this.hooks = new HooksResource(requester);
  }
}
