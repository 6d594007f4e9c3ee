/** Runs one user action at a time: its name while it runs (buttons show it and wait), and what went wrong, in words. */
import { useCallback, useState } from "react";
import { TidemarkClientError } from "../../src/client/index.js";
import { describeError } from "./describe-error.js";

export interface Performer {
  /** The action being carried out, or null. */
  busyAction: string | null;
  /** The last refused action's message, until dismissed or another action starts. */
  actionError: string | null;
  setActionError(message: string | null): void;
  /** Runs `work` as the action `name`; undefined when it failed (the failure is in `actionError`). */
  perform<T>(name: string, work: () => Promise<T>): Promise<T | undefined>;
}

/** The page's {@link Performer}. */
export function usePerform(): Performer {
  const [busyAction, setBusyAction] = useState<string | null>(null);
  const [actionError, setActionError] = useState<string | null>(null);
  const perform = useCallback(async <T,>(name: string, work: () => Promise<T>): Promise<T | undefined> => {
    setBusyAction(name);
    setActionError(null);
    try {
      return await work();
    } catch (error) {
      // A session closed by a thread switch has nothing left to report here.
      if (!(TidemarkClientError.isInstance(error) && error.code === "session_closed")) setActionError(describeError(error));
      return undefined;
    } finally {
      setBusyAction(null);
    }
  }, []);
  return { busyAction, actionError, setActionError, perform };
}
