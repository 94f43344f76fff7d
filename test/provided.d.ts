// Values the global setup hands to tests with `inject()`.
declare module "vitest" {
  export interface ProvidedContext {
    bridgeUrl: string;
    bridgeToken: string;
    redisUrl: string;
  }
}
export {};
