// Errors the queue's operations refuse with, in a module of their own so
// every part of src/queue can throw them without importing the queue itself.

/** Refused: the registry already holds MAX_TOPICS topics. */
export class TopicLimitError extends Error {
  override name = "TopicLimitError";
  constructor(
    readonly count: number,
    readonly limit: number,
  ) {
    super(`${count} topics exist and the limit is ${limit} (MAX_TOPICS); delete unused ones with DELETE /v1/topics/:topic or raise MAX_TOPICS`);
  }
}
