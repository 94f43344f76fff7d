/**
 * RFC 9457 problem details: every error delayline's HTTP edge returns.
 */
export interface Problem {
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
  422: "Unprocessable Content",
  500: "Internal Server Error",
  503: "Service Unavailable",
};

/** A `Response` carrying a problem document as `application/problem+json`. */
export function problem(
  status: number,
  detail: string,
  extra: { type?: string; errors?: Problem["errors"]; headers?: Record<string, string> } = {},
): Response {
  const body: Problem = {
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
