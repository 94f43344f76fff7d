// workerd provides node:async_hooks under nodejs_compat (wrangler.toml); the
// workers project's types do not include @types/node, so this declares the
// one class the model-based tick test uses.
declare module "node:async_hooks" {
  export class AsyncLocalStorage<T> {
    run<R>(store: T, fn: () => R): R;
    getStore(): T | undefined;
  }
}
