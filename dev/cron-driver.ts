/** Options of the local cron driver. */
export interface CronDriverOptions {
  /** Base URL of the local Worker; its `/__scheduled` route runs the scheduled handler (dev/worker-host.ts). */
  workerUrl: string;
  /** Cron expression reported to the Worker. Default `* * * * *`. */
  cron?: string;
  /** Receives one line per invocation and per failure. */
  log?: (line: string) => void;
}

export interface CronDriver {
  /** Invocations started so far. */
  readonly fired: number;
  /** Stops scheduling and aborts invocations still running. */
  stop(): void;
}

/**
 * Plays Cloudflare's cron locally: invokes the Worker's scheduled handler
 * once at start, then at every minute boundary. Invocations are not awaited
 * one after another — a tick runs for most of its minute and the next one
 * overlaps it, exactly as in production.
 */
export function startCronDriver(options: CronDriverOptions): CronDriver {
  const cron = options.cron ?? "* * * * *";
  const log = options.log ?? (() => {});
  const inflight = new Set<AbortController>();
  let stopped = false;
  let fired = 0;

  const fire = (scheduledTime: number) => {
    fired++;
    const abort = new AbortController();
    inflight.add(abort);
    const url = new URL("/__scheduled", options.workerUrl);
    url.searchParams.set("cron", cron);
    url.searchParams.set("time", String(scheduledTime));
    const started = Date.now();
    fetch(url, { signal: abort.signal })
      .then(async (res) => {
        await res.arrayBuffer();
        log(`scheduled(${new Date(scheduledTime).toISOString()}) → ${res.status} after ${Date.now() - started} ms`);
      })
      .catch((err: Error) => {
        if (!stopped) log(`scheduled(${new Date(scheduledTime).toISOString()}) failed: ${err.message}`);
      })
      .finally(() => inflight.delete(abort));
  };

  const stopClock = everyMinute(fire);
  return {
    get fired() {
      return fired;
    },
    stop() {
      stopped = true;
      stopClock();
      for (const a of inflight) a.abort();
    },
  };
}

/**
 * Cron's `* * * * *` on this machine's clock: `fire` now, then at every
 * minute boundary (with that boundary as its scheduled time), until the
 * function returned is called.
 */
export function everyMinute(fire: (scheduledTime: number) => void): () => void {
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const arm = () => {
    const next = Math.floor(Date.now() / 60_000) * 60_000 + 60_000;
    timer = setTimeout(() => {
      if (stopped) return;
      fire(next);
      arm();
    }, next - Date.now());
  };
  fire(Date.now());
  arm();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
