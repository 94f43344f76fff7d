/**
 * The topics of the shards benchmark (bench/lib/shards-*.ts): names the bench
 * Worker gives its noting handler, so the bench can pick, by placement, the
 * ones each shard holds. Enough that three shards get several each.
 */
export const SHARD_BENCH_TOPICS: readonly string[] = Array.from({ length: 48 }, (_, i) => `bench-shard-${String(i).padStart(2, "0")}`);
