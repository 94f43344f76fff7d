/**
 * Retry-After (RFC 9110 §10.2.3): delay-seconds (`1*DIGIT`) or an HTTP-date
 * in any of the three forms §5.6.7 has recipients accept — IMF-fixdate
 * (`Sun, 06 Nov 1994 08:49:37 GMT`), the obsolete RFC 850 form
 * (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime (`Sun Nov  6 08:49:37 1994`),
 * all in UTC. Anything else is no Retry-After: `Date.parse` would read "1.5"
 * or "-1" as dates in 2001 and so retry at once, and asctime in local time.
 */
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const MONTH = MONTHS.join("|");
const TIME = "(\\d{2}):(\\d{2}):(\\d{2})";
const IMF_FIXDATE = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\\d{2}) (${MONTH}) (\\d{4}) ${TIME} GMT$`);
const RFC850_DATE = new RegExp(`^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (\\d{2})-(${MONTH})-(\\d{2}) ${TIME} GMT$`);
const ASCTIME_DATE = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (${MONTH}) ([ \\d]\\d) ${TIME} (\\d{4})$`);

/** Epoch ms of a date's parts, or null when they name no instant (31 Feb, 25:00). */
function utc(year: number, month: string, day: string, hh: string, mm: string, ss: string): number | null {
  const m = MONTHS.indexOf(month);
  const at = Date.UTC(year, m, Number(day), Number(hh), Number(mm), Number(ss));
  const d = new Date(at);
  const same = d.getUTCFullYear() === year && d.getUTCMonth() === m && d.getUTCDate() === Number(day);
  return same && d.getUTCHours() === Number(hh) && d.getUTCMinutes() === Number(mm) && d.getUTCSeconds() === Number(ss) ? at : null;
}

/** An RFC 850 date's two-digit year: the year ending in those digits that is not more than 50 years ahead of `now` (§5.6.7). */
function fullYear(twoDigits: number, now: number): number {
  const thisYear = new Date(now).getUTCFullYear();
  const year = thisYear - (thisYear % 100) + twoDigits;
  return year > thisYear + 50 ? year - 100 : year;
}

/** An HTTP-date in epoch ms, or null when `text` is none. */
function parseHttpDate(text: string, now: number): number | null {
  let m = IMF_FIXDATE.exec(text);
  if (m) return utc(Number(m[3]), m[2]!, m[1]!, m[4]!, m[5]!, m[6]!);
  m = RFC850_DATE.exec(text);
  if (m) return utc(fullYear(Number(m[3]), now), m[2]!, m[1]!, m[4]!, m[5]!, m[6]!);
  m = ASCTIME_DATE.exec(text);
  if (m) return utc(Number(m[6]), m[1]!, m[2]!.trim(), m[3]!, m[4]!, m[5]!);
  return null;
}

/**
 * What a Retry-After header asks for, in ms from `now` (0 for a date
 * already past); null when there is none or it is neither form.
 */
export function retryAfterMs(header: string | null | undefined, now: number): number | null {
  if (header === null || header === undefined) return null;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1_000;
  const at = parseHttpDate(text, now);
  return at === null ? null : Math.max(0, at - now);
}
