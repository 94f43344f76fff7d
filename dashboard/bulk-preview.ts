/**
 * The preview before a bulk action: the action's dry run says how many items
 * it would take and names the first 20, and nothing happens until the user
 * goes ahead. Items that arrive between the preview and the action are taken
 * too (the action runs with the same filter, not the previewed ids).
 */
import { byId, el, fmtCount } from "./dom.js";

/** What a dry run answered: how many items, and the first of them. */
export interface DryRun {
  count: number;
  ids: string[];
}

/** How the preview words its action: "Cancel" + "scheduled jobs" of "mail". */
export interface BulkAction {
  verb: string;
  noun: string;
  topic: string;
  /** Said under the count, e.g. that a purge cannot be undone. */
  warning?: string;
}

/** Shows the dry run; resolves true when the user goes ahead, false on Back (or when there is nothing to take). */
export function confirmBulk(action: BulkAction, dry: DryRun): Promise<boolean> {
  const dialog = byId<HTMLDialogElement>("bulk-preview");
  const go = byId<HTMLButtonElement>("bulk-preview-go");
  const back = byId<HTMLButtonElement>("bulk-preview-back");
  byId("bulk-preview-text").textContent =
    dry.count === 0
      ? `Nothing to ${action.verb.toLowerCase()}: ${action.topic} has no ${action.noun} that it would take.`
      : `${action.verb} ${fmtCount(dry.count)} ${action.noun} of ${action.topic}?`;
  byId("bulk-preview-text").dataset.count = String(dry.count);
  const more = dry.count - dry.ids.length;
  byId("bulk-preview-ids").replaceChildren(
    ...dry.ids.map((id) => el("li", { text: id, className: "mono" })),
    ...(more > 0 ? [el("li", { text: `and ${fmtCount(more)} more`, className: "muted" })] : []),
  );
  const warning = byId("bulk-preview-warning");
  warning.hidden = action.warning === undefined || dry.count === 0;
  warning.textContent = action.warning ?? "";
  go.hidden = dry.count === 0;
  go.textContent = `${action.verb} ${fmtCount(dry.count)}`;
  return new Promise((resolve) => {
    const done = (ahead: boolean) => {
      go.removeEventListener("click", onGo);
      back.removeEventListener("click", onBack);
      dialog.removeEventListener("cancel", onBack);
      dialog.close();
      resolve(ahead);
    };
    const onGo = () => done(true);
    const onBack = () => done(false);
    go.addEventListener("click", onGo);
    back.addEventListener("click", onBack);
    dialog.addEventListener("cancel", onBack);
    dialog.showModal();
  });
}
