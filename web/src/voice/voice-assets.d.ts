/** Answered by web/vite-voice-assets.ts: where the voice mode's model, worklet and wasm files are served. */
declare module "virtual:voice-assets" {
  /** An absolute path ending in `/`, e.g. `/assets/voice-0123456789/`. */
  export const voiceAssetsBase: string;
}
