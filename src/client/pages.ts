/**
 * The API's two uses of a cursor: a listing's pages, and a bulk change done
 * in bounded calls. A cursor is a position, so what changes meanwhile never
 * makes a page repeat or skip one.
 */

/** What a page or a bounded call answers: where to go on from, null when done. */
interface Cursored {
  nextCursor: string | null;
}

/** `{ cursor }`, or nothing for the first call. */
const at = (cursor: string | null | undefined): { cursor?: string } => (cursor === null || cursor === undefined ? {} : { cursor });

/**
 * Every page of a listing, fetching the next only when the loop reaches it;
 * or every call of a bounded change, until the API says it is done.
 */
export async function* everyPage<P extends Cursored>(page: (cursor: { cursor?: string }) => Promise<P>): AsyncGenerator<P, void, undefined> {
  let cursor: string | null = null;
  do {
    const p: P = await page(at(cursor));
    yield p;
    cursor = p.nextCursor;
  } while (cursor !== null);
}

/** How many ids a dry run answers: the first its calls name, as many as one call of the API names (src/limits.ts DRY_RUN_IDS). */
const DRY_RUN_IDS = 20;

/** Adds a dry-run call's ids to those of the calls before it, up to {@link DRY_RUN_IDS}. */
export function addDryRunIds(ids: string[], more: string[] | undefined): void {
  for (const id of more ?? []) if (ids.length < DRY_RUN_IDS) ids.push(id);
}
