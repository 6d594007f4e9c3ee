import type { Store } from "../store/index.js";
import { LeaseLostError } from "./lease-lost-error.js";

/**
 * The store as one run's execution sees it: once `isFenced()` (the process let go of the run,
 * decision 014), every call is refused with a {@link LeaseLostError} before it reaches the
 * database, so the execution writes nothing more, whatever code path it is on.
 */
export function fencedStore(store: Store, isFenced: () => boolean): Store {
  return new Proxy(store, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== "function") return value;
      return function callUnlessFenced(...args: unknown[]): unknown {
        if (isFenced()) return Promise.reject(new LeaseLostError());
        return (value as (...values: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}
