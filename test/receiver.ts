import { answersByPath, requestLog, startReceiver as startHarnessReceiver, type Receiver } from "../harness/receiver.js";

export type { Delivery } from "../harness/receiver.js";

/**
 * The receiver of the delivery tests (harness/receiver.ts): every request is kept whole (`GET /__deliveries?prefix=`
 * lists them) and answered as its path says ({@link answersByPath}: …/ok, …/status/<code>, …/statuses/<a>,<b>,
 * …/redirect, …/huge/<code>, …/slow/<code>, …/hang).
 */
export function startReceiver(): Promise<Receiver> {
  return startHarnessReceiver([requestLog(), answersByPath()]);
}
