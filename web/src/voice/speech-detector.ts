/**
 * Speech start and end from the microphone, by Silero VAD v5 in the page (@ricky0123/vad-web).
 * Its model, worklet and wasm (the large files) are fetched only when voice mode starts, from
 * this server (`virtual:voice-assets`), never from a CDN. Its JavaScript (about 60 KB, with
 * onnxruntime-web's) is part of the app's bundle: a lazy chunk would make vite rewrite the main
 * chunk's source map on every build, slowly enough to warn, for little gain.
 */
// Its real-time module only: the package's index also loads its offline VAD, which pulls in all of onnxruntime-web a second time.
import { MicVAD } from "@ricky0123/vad-web/dist/real-time-vad.js";
import { voiceAssetsBase } from "virtual:voice-assets";

export interface SpeechDetectorCallbacks {
  /** The VAD heard speech begin (about 30–60 ms after the onset in the audio). */
  onSpeechStart(): void;
  /** The speech ended (after the VAD's redemption time of silence). */
  onSpeechEnd(): void;
  /** What began as speech was too short to be speech after all (a click, a cough). */
  onMisfire(): void;
}

/** A running detector: the microphone can be muted (its tracks stopped) and opened again. */
export interface SpeechDetector {
  mute(): Promise<void>;
  unmute(): Promise<void>;
  destroy(): Promise<void>;
}

/**
 * Loads the VAD and opens the microphone. `audioContext` is made by the caller inside the click
 * that entered voice mode, so that the browser lets it run.
 */
export async function startSpeechDetector(callbacks: SpeechDetectorCallbacks, audioContext: AudioContext): Promise<SpeechDetector> {
  const vad = await MicVAD.new({
    model: "v5",
    baseAssetPath: voiceAssetsBase,
    onnxWASMBasePath: voiceAssetsBase,
    audioContext,
    onSpeechStart: () => callbacks.onSpeechStart(),
    onSpeechEnd: () => callbacks.onSpeechEnd(),
    onVADMisfire: () => callbacks.onMisfire(),
    ortConfig: (ort) => {
      ort.env.logLevel = "error";
      // One thread: the page is not cross-origin isolated, and a worker would need more CSP.
      ort.env.wasm.numThreads = 1;
    },
  });
  return {
    mute: () => vad.pause(),
    unmute: () => vad.start(),
    destroy: () => vad.destroy(),
  };
}
