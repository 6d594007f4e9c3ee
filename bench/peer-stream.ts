/**
 * What every peer of peer-compare offers the shapes: start one generation, count its text as it
 * arrives, press its Stop. A library peer reads the provider itself and stops with abort(); the
 * Tidemark peer reads its own server's SSE and stops with `POST /v1/runs/{id}/cancel`.
 */

/** The peers, the raw floor first; and the relay, a reference on the paced shapes only (bench/peer-relay.ts). */
export type PeerName = "raw" | "openai" | "ai-sdk" | "langgraph" | "tidemark" | "relay";

/** The peers every shape compares. */
export const PEER_NAMES: readonly PeerName[] = ["raw", "openai", "ai-sdk", "langgraph", "tidemark"];

/** One generation as a peer streams it. */
export interface PeerStream {
  /** Text deltas received so far. */
  readonly deltas: number;
  /** Characters of text received so far. */
  readonly textLength: number;
  /** Resolves once `count` deltas arrived; rejects if the stream ends first. */
  untilDeltas(count: number): Promise<void>;
  /** Resolves when the stream ended, finished or stopped; rejects only on a failure that was not a Stop. */
  readonly ended: Promise<void>;
  /** The peer's Stop; resolves once it was sent (abort() at once, a POST once answered). */
  stop(): Promise<void>;
}

/** A peer, set up once per child process. */
export interface Peer {
  readonly name: PeerName;
  start(prompt: string): PeerStream;
  /** Tidemark only: one POST round trip to its server that changes nothing (the cancel of a run already over), ms. */
  bareRoundTripMs?(): Promise<number>;
  close(): Promise<void>;
}

/** Reads a generation's text: calls `onText` per delta, ends when the stream does. */
export type Consume = (signal: AbortSignal, onText: (text: string) => void) => Promise<void>;

/**
 * A {@link PeerStream} over `consume`, started now. `stop` defaults to abort() of the signal it
 * was given; whatever `consume` throws after a Stop is the Stop's own doing and is swallowed.
 */
export function trackStream(consume: Consume, stop?: () => Promise<void>): PeerStream {
  const controller = new AbortController();
  const state = { deltas: 0, textLength: 0, isStopped: false };
  const waiters: { count: number; resolve(): void }[] = [];
  const onText = (text: string): void => {
    if (text.length === 0) return;
    state.deltas++;
    state.textLength += text.length;
    for (let index = waiters.length - 1; index >= 0; index--) {
      if (waiters[index]!.count <= state.deltas) waiters.splice(index, 1)[0]!.resolve();
    }
  };
  const ended = consume(controller.signal, onText).catch((error: unknown) => {
    if (!state.isStopped) throw error;
  });
  // Whoever waits sees a failure; an unobserved one is not an unhandled rejection.
  ended.catch(() => undefined);
  return {
    get deltas() {
      return state.deltas;
    },
    get textLength() {
      return state.textLength;
    },
    untilDeltas(count) {
      if (state.deltas >= count) return Promise.resolve();
      const reached = new Promise<void>((resolve) => waiters.push({ count, resolve }));
      const endedFirst = ended.then(() => {
        throw new Error(`the stream ended after ${state.deltas} deltas`);
      });
      return Promise.race([reached, endedFirst]);
    },
    ended,
    async stop() {
      state.isStopped = true;
      if (stop) await stop();
      else controller.abort();
    },
  };
}
