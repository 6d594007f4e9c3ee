/**
 * What `live-vad-onset` records inside the page, installed with `page.addInitScript` before the
 * app's first script. It observes and never changes what the app does:
 *
 * - `navigator.mediaDevices.getUserMedia`: each call starts a capture record (the VAD calls it on
 *   entering voice mode and on every unmute); its resolution is stamped.
 * - `AudioWorkletNode`: the VAD's worklet posts one frame of 512 samples at 16 kHz (32 ms) per
 *   message. The port's `onmessage`, which the VAD sets, is wrapped so that each frame's arrival
 *   is stamped and its samples copied before the VAD's handler runs, and so that frames whose
 *   handling overlaps (a frame arriving while the previous one is still being classified) are seen.
 * - `WebSocket`: `user.started_speaking` as the page sends it (stamped with the number of frames
 *   of the capture that had arrived: the VAD decides inside a frame's handling, so that frame is
 *   the last one), and the server's frames as the page receives them.
 *
 * Times are the page's `performance.now()`.
 */

/** One frame of the VAD's input: when it reached the page's main thread, and whether a previous frame was still being handled. */
export interface PageFrame {
  at: number;
  isOverlapping: boolean;
}

/** One microphone capture, from its `getUserMedia` call. */
export interface PageCapture {
  requestedAt: number;
  grantedAt: number | null;
  frames: PageFrame[];
  /** The capture's first samples as the VAD received them (16 kHz), up to `maxSamples`. */
  samples: number[];
  /** `user.started_speaking` sent: when, how many frames of this capture had arrived, and whether one was still being handled by then. */
  speechStart: { at: number; frames: number; handlersInFlight: number } | null;
  /** The audio track's `stats` (Chrome: capture → delivery latency), read when the capture is collected; null where unsupported. */
  trackStats: Record<string, number> | null;
}

/** A server frame as the page received it. */
export interface PageReceived {
  type: string;
  at: number;
}

export interface PageRecord {
  captures: PageCapture[];
  received: PageReceived[];
}

/** Installed in the page (serialised by playwright: self-contained, no imports). */
export function installVadOnsetProbe(options: { maxSamples: number; transcript: string }): void {
  const record: PageRecord = { captures: [], received: [] };
  const tracks = new WeakMap<PageCapture, MediaStreamTrack>();
  let handlersInFlight = 0;
  const current = () => record.captures.at(-1);

  const original = navigator.mediaDevices.getUserMedia.bind(navigator.mediaDevices);
  navigator.mediaDevices.getUserMedia = async function observedGetUserMedia(constraints) {
    const capture: PageCapture = { requestedAt: performance.now(), grantedAt: null, frames: [], samples: [], speechStart: null, trackStats: null };
    record.captures.push(capture);
    const stream = await original(constraints);
    capture.grantedAt = performance.now();
    const track = stream.getAudioTracks()[0];
    if (track) tracks.set(capture, track);
    return stream;
  };

  const onmessage = Object.getOwnPropertyDescriptor(MessagePort.prototype, "onmessage")!;
  class ObservedAudioWorkletNode extends AudioWorkletNode {
    constructor(context: BaseAudioContext, name: string, nodeOptions?: AudioWorkletNodeOptions) {
      super(context, name, nodeOptions);
      const port = this.port;
      Object.defineProperty(port, "onmessage", {
        configurable: true,
        get: () => onmessage.get!.call(port),
        set(handler: ((event: MessageEvent) => unknown) | null) {
          onmessage.set!.call(
            port,
            handler &&
              async function observedFrame(this: MessagePort, event: MessageEvent) {
                const capture = current();
                const data = (event.data as { data?: unknown } | null)?.data;
                if (capture && data instanceof ArrayBuffer) {
                  capture.frames.push({ at: performance.now(), isOverlapping: handlersInFlight > 0 });
                  if (capture.samples.length < options.maxSamples) capture.samples.push(...new Float32Array(data));
                }
                handlersInFlight++;
                try {
                  return await handler.call(this, event);
                } finally {
                  handlersInFlight--;
                }
              },
          );
        },
      });
    }
  }
  window.AudioWorkletNode = ObservedAudioWorkletNode;

  const PageWebSocket = window.WebSocket;
  class ObservedWebSocket extends PageWebSocket {
    constructor(url: string | URL, protocols?: string | string[]) {
      super(url, protocols);
      this.addEventListener("message", (event: MessageEvent) => {
        if (typeof event.data !== "string") return;
        const at = performance.now();
        record.received.push({ type: (JSON.parse(event.data) as { type: string }).type, at });
      });
    }
    override send(data: Parameters<WebSocket["send"]>[0]): void {
      const capture = current();
      if (capture && typeof data === "string" && data.includes('"type":"user.started_speaking"') && capture.speechStart === null) {
        capture.speechStart = { at: performance.now(), frames: capture.frames.length, handlersInFlight };
      }
      super.send(data);
    }
  }
  window.WebSocket = ObservedWebSocket;

  // Headless chromium's speech recognition does not work: every utterance's words are `transcript`
  // (handed over when the page stops it, as Chrome's are); the VAD still decides when speech starts and ends.
  class ScriptedRecognition {
    continuous = false;
    interimResults = false;
    lang = "";
    onresult: ((event: unknown) => void) | null = null;
    onerror: ((event: unknown) => void) | null = null;
    onend: (() => void) | null = null;
    start(): void {}
    stop(): void {
      setTimeout(() => {
        this.onresult?.({ results: [{ isFinal: true, 0: { transcript: options.transcript } }] });
        this.onend?.();
      });
    }
    abort(): void {
      setTimeout(() => this.onend?.());
    }
  }
  Object.assign(window, { SpeechRecognition: ScriptedRecognition, webkitSpeechRecognition: ScriptedRecognition });

  Object.assign(window, {
    __vadOnset: {
      /** Everything recorded since the last take (the latest capture's track stats read first), and forgets it. */
      take(): PageRecord {
        const capture = current();
        const track = capture && tracks.get(capture);
        const stats = (track as (MediaStreamTrack & { stats?: Record<string, unknown> }) | undefined)?.stats;
        if (capture && stats) {
          capture.trackStats = Object.fromEntries(
            ["latency", "averageLatency", "minimumLatency", "maximumLatency", "deliveredFrames", "totalFrames"].flatMap((key) =>
              typeof stats[key] === "number" ? [[key, stats[key]]] : [],
            ),
          );
        }
        const taken = { captures: record.captures.splice(0), received: record.received.splice(0) };
        return taken;
      },
    },
  });
}
