import { derivedNameOf, rootOf } from "../queue/ids.js";
import type { Queue } from "../queue/queue.js";
import type { TopicSecrets, TopicSettings } from "../queue/topics.js";

/** A topic's settings and secrets, as a claim returns them. */
type TopicConf = { settings: TopicSettings; secrets: TopicSecrets };

/**
 * Signing is one unit: a derived topic (a subscription's, or a callbacks
 * topic: `<topic>@<name>`) that sets no signingSecret of its own signs as
 * its root does, with the root's secrets (previous ones too) and scheme, so
 * a receiver verifies callbacks and subscription deliveries with the
 * secret it already has for the topic. The root's are read once per loop
 * (a loop lasts about a minute), so a rotation of the root's secret reaches
 * these deliveries from the next loop: a receiver accepting the previous
 * secret during a rotation, as rotating asks, sees no gap.
 */
export class RootSigning {
  private readonly read = new WeakMap<Queue, Map<string, Promise<TopicConf>>>();

  /**
   * `conf` of `topic`'s chunk, with its root's signing when it signs as its
   * root; `spend` is told of the one read a root costs a loop.
   */
  async of(queue: Queue, topic: string, conf: TopicConf, spend: () => void): Promise<TopicConf> {
    if (derivedNameOf(topic) === null || conf.secrets.signingSecret !== undefined) return conf;
    const root = rootOf(topic);
    const roots = this.read.get(queue) ?? new Map<string, Promise<TopicConf>>();
    this.read.set(queue, roots);
    let rootConf = roots.get(root);
    if (!rootConf) {
      spend();
      rootConf = queue.topicSettings(root);
      roots.set(root, rootConf);
      // A failed read is not remembered: the next chunk reads again.
      rootConf.catch(() => roots.delete(root));
    }
    const { settings, secrets } = await rootConf;
    const signing: TopicSecrets = {};
    if (secrets.signingSecret !== undefined) signing.signingSecret = secrets.signingSecret;
    if (secrets.previousSigningSecrets !== undefined) signing.previousSigningSecrets = secrets.previousSigningSecrets;
    return { settings: { ...conf.settings, signatureScheme: settings.signatureScheme }, secrets: { ...conf.secrets, ...signing } };
  }
}
