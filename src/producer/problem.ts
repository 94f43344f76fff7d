import type { ZodError } from "zod";

/**
 * RFC 9457 problem details: every error delayline's HTTP edge returns.
 */
export interface ProblemDocument {
  type: string;
  title: string;
  status: number;
  detail: string;
  errors?: Array<{ path: string; message: string }>;
  /** With `urn:delayline:redis-limit`: which limit ("record-size", "request-size", "requests", "capacity", "memory"). */
  limit?: string;
  /** With `urn:delayline:topic-full`: the topic whose maxLength refused the request, its pending jobs then, and the cap. */
  topic?: string;
  pending?: number;
  maxLength?: number;
  /** With `urn:delayline:flow-key-full`: the flow key whose maxKeyLength refused the request (its topic in `topic`, its pending jobs then in `pending`), and the cap. */
  flowKey?: string;
  maxKeyLength?: number;
}

const TITLES: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  404: "Not Found",
  405: "Method Not Allowed",
  409: "Conflict",
  413: "Content Too Large",
  415: "Unsupported Media Type",
  431: "Request Header Fields Too Large",
  422: "Unprocessable Content",
  429: "Too Many Requests",
  500: "Internal Server Error",
  503: "Service Unavailable",
  507: "Insufficient Storage",
};

/**
 * Every problem `type` the API answers with, each once: a program tells
 * problems apart by these rather than by parsing `detail`. A status has one
 * type unless a case of it is acted on differently (a 422 from the topic cap,
 * a 500 from the deployment's settings). The client adds its own
 * `urn:delayline:client:*` types for answers it never got.
 */
export const PROBLEM_TYPES = {
  /** 400: malformed JSON, invalid UTF-8, JSON nested too deep, a request the router cannot read. */
  badRequest: "urn:delayline:bad-request",
  /** 401: no bearer token, a wrong one, or a webhook signature that does not verify. */
  unauthorized: "urn:delayline:unauthorized",
  /** 404: no such route, job, topic, schedule or dead letter. */
  notFound: "urn:delayline:not-found",
  /** 405: the path exists but not with this method (see `Allow`). */
  methodNotAllowed: "urn:delayline:method-not-allowed",
  /** 409: the request conflicts with the current state (a job in flight, a stale attempt, a topic of the other mode). */
  conflict: "urn:delayline:conflict",
  /** 413: the body or a payload is larger than the limit. */
  payloadTooLarge: "urn:delayline:payload-too-large",
  /**
   * 413: the Redis request the call would make (a batch enqueue, a schedule
   * write: its JSON as sent, escapes included) is larger than the request
   * budget (95% of REDIS_MAX_REQUEST_BYTES, Upstash's 10 MB); `detail` names
   * both sizes. Refused before anything was sent: nothing was written.
   */
  requestTooLarge: "urn:delayline:request-too-large",
  /** 415: the body is not application/json. */
  unsupportedMediaType: "urn:delayline:unsupported-media-type",
  /** 422: the request breaks the schema or a rule; `errors` names each field. */
  validation: "urn:delayline:validation",
  /** 422: a new topic would pass the deployment's topic cap. */
  topicLimit: "urn:delayline:topic-limit",
  /**
   * 429: a topic's maxLength (its pending jobs: scheduled and waiting) refused
   * the jobs — overflow reject, or a request adding more jobs to a dropOldest
   * topic than its maxLength; `topic`, `pending` and `maxLength` say which
   * and where it stood. Nothing of the request was stored (a batch across
   * shards: see `stored`). Room frees as the topic's jobs are claimed.
   */
  topicFull: "urn:delayline:topic-full",
  /**
   * 429: a flow key's maxKeyLength (its own, else its topic's: the key's
   * pending jobs, scheduled and waiting) refused the jobs — the topic's
   * overflow reject, or a request adding more jobs to a key of a dropOldest
   * topic than its cap; `topic`, `flowKey`, `pending` and `maxKeyLength` say
   * which and where it stood. Nothing of the request was stored (a batch
   * across shards: see `stored`). Room frees as the key's jobs are claimed;
   * other keys still take jobs.
   */
  flowKeyFull: "urn:delayline:flow-key-full",
  /** 431: the request headers are larger than 32 KiB. */
  headersTooLarge: "urn:delayline:headers-too-large",
  /** 500: the deployment's settings are wrong (`detail` names the setting). */
  settings: "urn:delayline:settings",
  /** 500: an error the API did not expect (logged). */
  internal: "urn:delayline:internal",
  /**
   * 503: Redis did not answer; the request may or may not have taken effect
   * (`detail` says when its outcome is unknown). Also an enqueue into a
   * dropOldest topic whose oldest jobs concurrent requests kept changing:
   * nothing stored, retry.
   */
  unavailable: "urn:delayline:unavailable",
  /**
   * Redis (Upstash) refused the request at one of its limits, named in `limit`
   * and `detail`; nothing was written. 507 for storage (record size, database
   * capacity, maxmemory), 413 for a request too large, 503 with Retry-After for
   * the request-count quota.
   */
  redisLimit: "urn:delayline:redis-limit",
} as const;

export type ProblemType = (typeof PROBLEM_TYPES)[keyof typeof PROBLEM_TYPES];

/** The type a status gets when nothing more specific applies. */
const TYPE_BY_STATUS: Record<number, ProblemType> = {
  400: PROBLEM_TYPES.badRequest,
  401: PROBLEM_TYPES.unauthorized,
  404: PROBLEM_TYPES.notFound,
  405: PROBLEM_TYPES.methodNotAllowed,
  409: PROBLEM_TYPES.conflict,
  413: PROBLEM_TYPES.payloadTooLarge,
  415: PROBLEM_TYPES.unsupportedMediaType,
  422: PROBLEM_TYPES.validation,
  431: PROBLEM_TYPES.headersTooLarge,
  500: PROBLEM_TYPES.internal,
  503: PROBLEM_TYPES.unavailable,
};

/** The type of a problem with `status`: a 4xx hono raised that has no entry of its own is a bad request. */
function problemType(status: number): ProblemType {
  return TYPE_BY_STATUS[status] ?? (status >= 500 ? PROBLEM_TYPES.internal : PROBLEM_TYPES.badRequest);
}

/** A `Response` carrying a problem document as `application/problem+json`. */
export function problem(
  status: number,
  detail: string,
  extra: {
    type?: ProblemType;
    errors?: ProblemDocument["errors"];
    headers?: Record<string, string>;
    limit?: string;
    full?: Pick<ProblemDocument, "topic" | "pending" | "maxLength" | "flowKey" | "maxKeyLength">;
  } = {},
): Response {
  const body: ProblemDocument = {
    type: extra.type ?? problemType(status),
    title: TITLES[status] ?? "Error",
    status,
    detail,
    ...(extra.errors ? { errors: extra.errors } : {}),
    ...(extra.limit ? { limit: extra.limit } : {}),
    ...extra.full,
  };
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/problem+json", ...extra.headers },
  });
}

/** Thrown by a route handler to answer with a problem document (the app's one error hook renders it). */
export class ApiProblem extends Error {
  constructor(
    readonly status: number,
    detail: string,
    readonly headers: Record<string, string> = {},
    /** Rules the request broke, with their JSON paths (a 422 the schema could not see). */
    readonly errors?: ProblemDocument["errors"],
  ) {
    super(detail);
    this.name = "ApiProblem";
  }
}

/** A 422 for rules that need more than the schema (e.g. the deployment's settings), shaped like {@link validationProblem}'s. */
export function invalid(where: string, errors: NonNullable<ProblemDocument["errors"]>): ApiProblem {
  return new ApiProblem(422, `the ${where} does not match the schema`, {}, errors);
}

/** 422 listing every violated rule with its JSON path (e.g. `jobs[3].topic`). */
export function validationProblem(error: ZodError, where: string): Response {
  const errors = error.issues.map((i) => ({
    path: i.path.reduce<string>((acc, p) => (typeof p === "number" ? `${acc}[${p}]` : acc ? `${acc}.${String(p)}` : String(p)), ""),
    message: i.message,
  }));
  return problem(422, `the ${where} does not match the schema`, { type: PROBLEM_TYPES.validation, errors });
}
