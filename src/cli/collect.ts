/** Gathering what a listing yields, for commands that show a bounded number of rows. */

/** The first `n` items of an async iterable (a listing walked page by page): the walk stops there, fetching no page more. */
export async function first<T>(items: AsyncIterable<T>, n: number): Promise<T[]> {
  const out: T[] = [];
  if (n <= 0) return out;
  for await (const item of items) {
    out.push(item);
    if (out.length >= n) break;
  }
  return out;
}
