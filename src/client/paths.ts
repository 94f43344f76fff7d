/** The API's paths as the resources build them. */

/** A path whose every interpolated part is one URL segment, percent-encoded: path`/v1/jobs/${id}`. */
export function path(strings: TemplateStringsArray, ...segments: string[]): string {
  let out = strings[0]!;
  for (const [i, segment] of segments.entries()) out += encodeURIComponent(segment) + strings[i + 1]!;
  return out;
}

/** `?name=value&…` of the parameters given ("" when none): undefined, null and false are left out, as the API's flags default to false. */
export function query(params: Record<string, string | number | boolean | null | undefined>): string {
  const q = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined && value !== null && value !== false) q.set(name, String(value));
  return q.size > 0 ? `?${q}` : "";
}
