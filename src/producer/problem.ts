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
  500: "Internal Server Error",
  503: "Service Unavailable",
};

/** A `Response` carrying a problem document as `application/problem+json`. */
export function problem(
  status: number,
  detail: string,
  extra: { type?: string; errors?: ProblemDocument["errors"]; headers?: Record<string, string> } = {},
): Response {
  const body: ProblemDocument = {
    type: extra.type ?? "about:blank",
    title: TITLES[status] ?? "Error",
    status,
    detail,
    ...(extra.errors ? { errors: extra.errors } : {}),
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
  return problem(422, `the ${where} does not match the schema`, { type: "urn:delayline:validation", errors });
}
