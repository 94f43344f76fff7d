/**
 * Every Redis key delayline uses is built here and nowhere else.
 *
 * A deployment's keys share one prefix holding a hash tag, so they all live
 * in one cluster slot and every script may touch any of them:
 *
 *   <prefix>                e.g. `dl:{main}`
 *   <prefix>:tick:last      STRING  epoch ms of the latest scheduled() start (heartbeat)
 */
export interface Keys {
  prefix: string;
  tickLast: string;
}

export function keys(prefix: string): Keys {
  return {
    prefix,
    tickLast: `${prefix}:tick:last`,
  };
}
