import { getEventListeners } from "node:events";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { CancelScope, DEFAULT_SHIELD_TIMEOUT_MS, type ShieldContext } from "./cancel-scope.js";
import { ShieldTimeoutError } from "./shield-timeout-error.js";
import { abortableDelay } from "../core/abortable-delay.js";

function abortListenerCount(signal: AbortSignal): number {
  return getEventListeners(signal, "abort").length;
}

describe("CancelScope", () => {
  it("propagates a cancel from parent to every descendant, with the parent's reason", () => {
    const root = CancelScope.root();
    const step = root.child();
    const request = step.child();
    const reason = new Error("stop pressed");

    root.cancel(reason);

    for (const scope of [root, step, request]) {
      expect(scope.signal.aborted).toBe(true);
      expect(scope.signal.reason).toBe(reason);
      expect(scope.isCancelRequested).toBe(true);
    }
  });

  it("never cancels the parent or a sibling when a child is cancelled", () => {
    const root = CancelScope.root();
    const step = root.child();
    const sibling = root.child();
    const request = step.child();

    step.cancel("tool timed out");

    expect(step.signal.reason).toBe("tool timed out");
    expect(request.signal.aborted).toBe(true);
    expect(root.signal.aborted).toBe(false);
    expect(root.isCancelRequested).toBe(false);
    expect(sibling.signal.aborted).toBe(false);
  });

  it("uses an AbortError as the default reason", () => {
    const root = CancelScope.root();
    root.cancel();
    expect(root.signal.reason).toBeInstanceOf(DOMException);
    expect((root.signal.reason as DOMException).name).toBe("AbortError");
  });

  it("is idempotent: the first reason wins and the signal aborts once", () => {
    const root = CancelScope.root();
    const onAbort = vi.fn();
    root.signal.addEventListener("abort", onAbort);

    root.cancel("first");
    root.cancel("second");

    expect(root.signal.reason).toBe("first");
    expect(onAbort).toHaveBeenCalledTimes(1);
  });

  it("creates an already-aborted child under a cancelled parent", () => {
    const root = CancelScope.root();
    root.cancel("gone");
    const late = root.child();
    expect(late.signal.aborted).toBe(true);
    expect(late.signal.reason).toBe("gone");
    expect(late.isCancelRequested).toBe(true);
  });

  it("keeps a cancel request of the parent visible on a disposed child", () => {
    const root = CancelScope.root();
    const step = root.child();
    step.dispose();

    root.cancel();

    // Disposed: it no longer hears the parent's signal, but the request is still truthful.
    expect(step.signal.aborted).toBe(false);
    expect(step.isCancelRequested).toBe(true);
  });

  describe("shield", () => {
    it("runs fn with a signal that the ancestors' cancel does not abort", async () => {
      const root = CancelScope.root();
      const step = root.child();
      let shieldedSignal: AbortSignal | undefined;
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));

      const written = step.shield(async (signal) => {
        shieldedSignal = signal;
        await released;
        return signal.aborted ? "aborted" : "checkpoint written";
      });
      root.cancel("stop");
      step.cancel("stop too");
      release();

      await expect(written).resolves.toBe("checkpoint written");
      expect(shieldedSignal?.aborted).toBe(false);
      expect(step.isCancelRequested).toBe(true);
    });

    it("still runs when the scope is already cancelled (the final checkpoint write)", async () => {
      const root = CancelScope.root();
      root.cancel();
      const fn = vi.fn((signal: AbortSignal) => Promise.resolve(signal.aborted));
      await expect(root.shield(fn)).resolves.toBe(false);
      expect(fn).toHaveBeenCalledTimes(1);
      expect(root.isCancelRequested).toBe(true);
    });

    it("passes fn's rejection through", async () => {
      const root = CancelScope.root();
      const failure = new Error("commit refused");
      await expect(root.shield(() => Promise.reject(failure))).rejects.toBe(failure);
    });

    it("passes a synchronous throw through as a rejection, leaving no listener behind", async () => {
      const root = CancelScope.root();
      const failure = new Error("thrown before any await");
      await expect(
        root.shield(() => {
          throw failure;
        }),
      ).rejects.toBe(failure);
      expect(abortListenerCount(root.signal)).toBe(0);
    });

    it("lets fn hear the cancel request while its own signal stays unaborted", async () => {
      const root = CancelScope.root();
      const step = root.child();
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let heardBefore: boolean | undefined;
      const entered = new Promise<{ signal: AbortSignal; context: ShieldContext }>((resolveEntered) => {
        void step.shield(async (signal, context) => {
          heardBefore = context.isCancelRequested;
          resolveEntered({ signal, context });
          await released;
        });
      });
      const { signal, context } = await entered;
      const heard = new Promise<unknown>((resolve) => context.requested.addEventListener("abort", () => resolve(context.requested.reason)));

      root.cancel("stop");

      await expect(heard).resolves.toBe("stop");
      expect(heardBefore).toBe(false);
      expect(context.isCancelRequested).toBe(true);
      expect(signal.aborted).toBe(false);
      release();
    });

    describe("its bound (fake time)", () => {
      beforeEach(() => {
        vi.useFakeTimers();
      });
      afterEach(() => {
        vi.useRealTimers();
      });

      it("is not timed while nobody asked for a cancel", async () => {
        const root = CancelScope.root({ shieldTimeoutMs: 50 });
        let release!: (value: string) => void;
        const written = root.shield(() => new Promise<string>((resolve) => (release = resolve)));

        await vi.advanceTimersByTimeAsync(10_000);
        release("done");

        await expect(written).resolves.toBe("done");
      });

      it("aborts the work and rejects with a ShieldTimeoutError once the bound after the request ran out", async () => {
        const root = CancelScope.root({ shieldTimeoutMs: 50 });
        const step = root.child();
        let shieldedSignal: AbortSignal | undefined;
        // A commit that hangs for ever and ignores its signal.
        const committed = step.shield((signal) => {
          shieldedSignal = signal;
          return new Promise<never>(() => undefined);
        });
        const outcome = committed.then(
          () => "resolved",
          (error: unknown) => error,
        );

        await vi.advanceTimersByTimeAsync(1_000);
        expect(shieldedSignal?.aborted).toBe(false);
        root.cancel("stop");
        await vi.advanceTimersByTimeAsync(49);
        expect(shieldedSignal?.aborted).toBe(false);
        await vi.advanceTimersByTimeAsync(1);

        const error = await outcome;
        expect(ShieldTimeoutError.isInstance(error)).toBe(true);
        expect(error).toMatchObject({ name: "ShieldTimeoutError", timeoutMs: 50 });
        expect(shieldedSignal?.reason).toBe(error);
        expect(abortListenerCount(step.signal)).toBe(0); // the shield stopped listening
        expect(vi.getTimerCount()).toBe(0);
      });

      it("starts the bound at once when the scope was already cancelled, and a per-call timeout wins", async () => {
        const root = CancelScope.root({ shieldTimeoutMs: 30_000 });
        root.cancel("shutdown");
        const written = root.shield(() => new Promise<never>(() => undefined), { timeoutMs: 20 });
        const outcome = written.then(
          () => "resolved",
          (error: unknown) => error,
        );

        await vi.advanceTimersByTimeAsync(20);

        await expect(outcome).resolves.toMatchObject({ name: "ShieldTimeoutError", timeoutMs: 20 });
      });

      it("clears its timer when the work finishes within the bound", async () => {
        const root = CancelScope.root({ shieldTimeoutMs: 50 });
        let release!: (value: string) => void;
        const written = root.shield(() => new Promise<string>((resolve) => (release = resolve)));
        root.cancel("stop");
        await vi.advanceTimersByTimeAsync(10);
        release("committed");

        await expect(written).resolves.toBe("committed");
        expect(vi.getTimerCount()).toBe(0);
      });

      it("uses the default bound when the root names none", () => {
        expect(CancelScope.root().child().shieldTimeoutMs).toBe(DEFAULT_SHIELD_TIMEOUT_MS);
        expect(CancelScope.root({ shieldTimeoutMs: 7 }).child().shieldTimeoutMs).toBe(7);
      });
    });
  });

  describe("dispose", () => {
    it("removes the listener it put on the parent", () => {
      const root = CancelScope.root();
      const step = root.child();
      expect(abortListenerCount(root.signal)).toBe(1);
      step.dispose();
      expect(abortListenerCount(root.signal)).toBe(0);
      step.dispose(); // idempotent
      expect(abortListenerCount(root.signal)).toBe(0);
    });

    it("leaves no listener behind when 10,000 children come and go", () => {
      const root = CancelScope.root();
      for (let index = 0; index < 10_000; index += 1) {
        const step = root.child();
        const request = step.child();
        request.dispose();
        step.dispose();
        expect(abortListenerCount(step.signal)).toBe(0);
      }
      expect(abortListenerCount(root.signal)).toBe(0);
    });

    it("holds one listener per live child, and none once they are disposed", () => {
      const root = CancelScope.root();
      const children = Array.from({ length: 10_000 }, () => root.child());
      expect(abortListenerCount(root.signal)).toBe(10_000);
      for (const child of children) child.dispose();
      expect(abortListenerCount(root.signal)).toBe(0);
    });

    it("detaches a child from its parent once the child is cancelled", () => {
      const root = CancelScope.root();
      const step = root.child();
      step.cancel();
      expect(abortListenerCount(root.signal)).toBe(0);
      root.cancel("later");
      expect(step.signal.reason).not.toBe("later");
    });
  });
});

describe("abortableDelay", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("resolves after ms and removes its listener", async () => {
    vi.useFakeTimers();
    const scope = CancelScope.root();
    let isResolved = false;
    const delay = abortableDelay(1_000, scope.signal).then(() => (isResolved = true));

    await vi.advanceTimersByTimeAsync(999);
    expect(isResolved).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await delay;

    expect(isResolved).toBe(true);
    expect(abortListenerCount(scope.signal)).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("rejects with signal.reason as soon as the signal aborts, and clears its timer", async () => {
    vi.useFakeTimers();
    const scope = CancelScope.root();
    const reason = new Error("stop");
    const delay = abortableDelay(60_000, scope.signal);
    expect(vi.getTimerCount()).toBe(1);

    scope.cancel(reason);

    await expect(delay).rejects.toBe(reason);
    expect(vi.getTimerCount()).toBe(0);
    expect(abortListenerCount(scope.signal)).toBe(0);
  });

  it("rejects at once on an already-aborted signal without arming a timer", async () => {
    vi.useFakeTimers();
    const scope = CancelScope.root();
    scope.cancel("already");
    await expect(abortableDelay(10, scope.signal)).rejects.toBe("already");
    expect(vi.getTimerCount()).toBe(0);
  });
});
