import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { silentLogger, type ChatModel } from "../src/runtime/index.js";
import { startTidemark } from "../src/start-tidemark.js";
import { ESPEAK, readWavSamples, writeSpeechWav } from "../test/support/speech-wav.js";
import { createTempDir, requestJson } from "./bench-support.js";
import { compared, type Benchmark, type BenchmarkResult, type Figure } from "./benchmark.js";
import { audioOffsetMs } from "./audio-offset.js";
import { installVadOnsetProbe, type PageCapture, type PageRecord } from "./live-vad-onset-page.js";
import { percentile, round } from "./statistics.js";
import { ONSET_RULE, speechOnsetMs } from "./speech-onset.js";
import { BUILT_WEB_ROOT, ensureWebBuilt } from "./thread-render.js";

/*
 * Speech onset → interruption decided, through the web app's real voice mode (issue 15). A real
 * Tidemark (embedded, SQLite, serving the built web app) whose agent is always mid-answer, and
 * Debian's chromium whose fake microphone plays a WAV that espeak-ng spoke, from its start at each
 * capture (muting and unmuting is a new capture). The page's real Silero VAD hears the speech and
 * sends user.started_speaking; the server pauses the output after min_interruption_ms (500) of
 * speech (output.paused); the transcript that follows confirms the cut (turn.interrupted) and is
 * the next turn, so the agent is mid-answer again for the next sample.
 *
 * The VAD's delay is measured in audio time, with no clock: the page records the frames the VAD
 * receives (512 samples at 16 kHz, 32 ms each) and their samples, the onset is found in those
 * samples by the same rule as in the WAV, and the VAD decides inside a frame's handling, so the
 * decision is at the end of frame n, n × 32 ms into the capture's stream. The later stages are on
 * the page's clock; the onset is put on it by the frames' arrival times (`streamStartOnPageClock`),
 * which gives a lower bound, and no earlier than the capture was asked for, an upper bound.
 * Nothing is drawn at random (espeak-ng speaks the same WAV every time, the script is fixed): there
 * is no seed to set. Binds 127.0.0.1 only; every wait is on an event or a locator, bounded.
 */

const SPOKEN = "Wait, tell me about the moon instead.";
const SILENCE_BEFORE_S = 0.5;
/** More than the VAD's redemption time (1.4 s), so an utterance ends inside the WAV. */
const SILENCE_AFTER_S = 2.5;
const ANSWER = Array.from({ length: 16 }, () => "The tide turns because the moon pulls the sea, and the earth turns beneath it.").join(" ");
/** Silero VAD v5 in @ricky0123/vad-web: 512 samples at 16 kHz per frame. */
const VAD_RATE = 16_000;
const FRAME_MS = 512 / (VAD_RATE / 1000);
const MIN_INTERRUPTION_MS = 500;
const SAMPLES = 24;
const WARMUP_SAMPLES = 1;
/** Samples start only within this budget (one takes about 5 s). */
const BUDGET_MS = 180_000;
const WAIT = { timeout: 30_000 };
/** Kept per capture: the WAV's first 4 s, at 16 kHz. */
const MAX_CAPTURED_SAMPLES = 4 * VAD_RATE;
const CHROMIUM = "/usr/bin/chromium";

/** Every answer: ANSWER at once, then nothing until the turn is cut (the agent is always mid-answer). */
function midAnswerModel(): ChatModel {
  return {
    id: "vad-onset-answer",
    async *stream(_request, { signal }) {
      for (const [index, word] of ANSWER.split(" ").entries()) yield { type: "text-delta", text: index === 0 ? word : ` ${word}` };
      await new Promise<never>((_resolve, reject) => {
        if (signal.aborted) return reject(signal.reason);
        signal.addEventListener("abort", () => reject(signal.reason), { once: true });
      });
    },
  };
}

/** One barge-in, all in ms. */
export interface OnsetSample {
  /** The onset in the stream of frames the VAD received, from the capture's first sample. */
  onsetInStreamMs: number;
  /** Where the WAV's first sample is in that stream, by cross-correlation, and the correlation (1: identical up to gain). */
  wavStartInStreamMs: number;
  wavCorrelation: number;
  /** The onset in the stream by the cross-correlation: wavStartInStreamMs + the WAV's onset. */
  alignedOnsetInStreamMs: number;
  /** The frame whose handling sent user.started_speaking (1-based, of the capture). */
  decisionFrame: number;
  /** Audio time: decisionFrame × 32 ms − onsetInStreamMs. */
  vadDelayAudioMs: number;
  /** The same from the aligned onset. */
  vadDelayAlignedMs: number;
  /** Page clock: the decision frame reached the main thread → user.started_speaking sent (the model's inference). */
  frameToSpeechStartSentMs: number;
  /** Page clock: how far the decision frame arrived after the capture's arrival line (its least-delayed frame). */
  decisionFrameLagMs: number;
  /** Page clock: user.started_speaking sent → output.paused received. */
  speechStartSentToPausedMs: number;
  /** The onset on the page's clock (see onsetOnPageClock) → output.paused received. */
  onsetToPausedMs: number;
  /** The same → turn.interrupted received (the transcript confirmed the cut). */
  onsetToInterruptedMs: number;
  /**
   * An upper bound of onsetToPausedMs: the fake device cannot play the WAV's first sample before
   * the capture was asked for, so the onset is no earlier than getUserMedia called + the WAV's onset.
   */
  onsetToPausedUpperMs: number;
  /** getUserMedia called → resolved. */
  requestToGrantedMs: number;
  /** getUserMedia resolved → the capture's arrival line origin (its stream's first sample, nominally). */
  grantedToStreamStartMs: number;
  /** A frame up to the decision arrived while the previous one was still being handled (the frame count could then be off). */
  isOverlapping: boolean;
  trackStats: Record<string, number> | null;
}

/**
 * The capture's stream on the page's clock: frame k (1-based) holds the stream's samples up to
 * k × 32 ms and cannot reach the page before they were captured, so min over k of (arrival − k × 32)
 * is the stream's start as seen through its least-delayed frame. The onset is placed at that
 * start + its position in the stream: later than the truth by the pipeline's least latency
 * (device → worklet → main thread), which this cannot see, so times from it are lower bounds.
 */
function streamStartOnPageClock(capture: PageCapture): number {
  return Math.min(...capture.frames.map((frame, index) => frame.at - (index + 1) * FRAME_MS));
}

/** The WAV the fake microphone plays, and its onset by the rule. */
interface SpokenWav {
  rate: number;
  samples: Float32Array;
  onsetMs: number;
}

function sampleOf(capture: PageCapture, received: PageRecord["received"], wav: SpokenWav): OnsetSample {
  const wavOnsetMs = wav.onsetMs;
  const start = capture.speechStart;
  if (!start) throw new Error("the capture sent no user.started_speaking");
  const onsetInStreamMs = speechOnsetMs(capture.samples, VAD_RATE);
  if (onsetInStreamMs === null) throw new Error("no speech onset in the captured stream");
  const after = (type: string) => received.find((frame) => frame.type === type && frame.at >= start.at)?.at;
  const pausedAt = after("output.paused");
  const interruptedAt = after("turn.interrupted");
  if (pausedAt === undefined || interruptedAt === undefined) throw new Error("output.paused or turn.interrupted did not follow the speech start");
  const decisionFrame = capture.frames[start.frames - 1]!;
  // The WAV's first 400 ms of speech against the stream: its start is within a frame of leftovers before or after the stream's.
  const aligned = audioOffsetMs(capture.samples, VAD_RATE, wav.samples, wav.rate, { fromMs: wavOnsetMs, lengthMs: 400, minLagMs: -40, maxLagMs: 120 });
  const streamStart = streamStartOnPageClock(capture);
  const onsetOnPageClock = streamStart + onsetInStreamMs;
  return {
    onsetInStreamMs,
    wavStartInStreamMs: aligned.offsetMs,
    wavCorrelation: aligned.correlation,
    alignedOnsetInStreamMs: aligned.offsetMs + wavOnsetMs,
    decisionFrame: start.frames,
    vadDelayAudioMs: start.frames * FRAME_MS - onsetInStreamMs,
    vadDelayAlignedMs: start.frames * FRAME_MS - (aligned.offsetMs + wavOnsetMs),
    frameToSpeechStartSentMs: start.at - decisionFrame.at,
    decisionFrameLagMs: decisionFrame.at - (streamStart + start.frames * FRAME_MS),
    speechStartSentToPausedMs: pausedAt - start.at,
    onsetToPausedMs: pausedAt - onsetOnPageClock,
    onsetToInterruptedMs: interruptedAt - onsetOnPageClock,
    onsetToPausedUpperMs: pausedAt - (capture.requestedAt + wavOnsetMs),
    requestToGrantedMs: (capture.grantedAt ?? Number.NaN) - capture.requestedAt,
    grantedToStreamStartMs: streamStart - (capture.grantedAt ?? Number.NaN),
    isOverlapping: start.handlersInFlight > 1 || capture.frames.slice(0, start.frames).some((frame) => frame.isOverlapping),
    trackStats: capture.trackStats,
  };
}

const take = (page: Page) => page.evaluate(() => (window as unknown as { __vadOnset: { take(): PageRecord } }).__vadOnset.take());

/** Mutes and unmutes: the new capture plays the WAV from its start. Resolves once the cut it makes was confirmed and the next answer plays. */
async function bargeIn(page: Page, utterancesBefore: number, interruptedBefore: number, wav: SpokenWav): Promise<OnsetSample> {
  await page.getByRole("button", { name: "Mute the microphone" }).click();
  await page.locator('[data-microphone="muted"]').waitFor(WAIT);
  await page.getByRole("button", { name: "Unmute the microphone" }).click();
  await page.locator(`[data-utterances="${utterancesBefore + 1}"]`).waitFor(WAIT);
  await page.locator('[data-phase="interrupted"]').nth(interruptedBefore).waitFor(WAIT);
  await page.locator(`[data-utterances="${utterancesBefore + 1}"][data-microphone="listening"]`).waitFor(WAIT);
  await page.locator('[data-phase="playing"]').waitFor(WAIT);
  const record = await take(page);
  if (record.captures.length !== 1) throw new Error(`expected one capture per barge-in, got ${record.captures.length}`);
  return sampleOf(record.captures[0]!, record.received, wav);
}

function stats(values: readonly number[]) {
  return {
    count: values.length,
    min: round(Math.min(...values), 2),
    p50: round(percentile(values, 50), 2),
    p99: round(percentile(values, 99), 2),
    max: round(Math.max(...values), 2),
  };
}

/** Speech onset in a recorded WAV → the VAD's speech start → the server's output.paused, through the web app in chromium. */
export const liveVadOnset: Benchmark = {
  name: "live-vad-onset",
  summary:
    "web app's voice mode in chromium (fake microphone playing an espeak-ng WAV, the real Silero VAD) against an embedded Tidemark mid-answer: " +
    `speech onset in the audio → VAD speech start (audio time) → output.paused received, beside min_interruption_ms ${MIN_INTERRUPTION_MS}`,
  async run({ log }): Promise<BenchmarkResult> {
    const missing = [CHROMIUM, ESPEAK].filter((path) => !existsSync(path));
    if (missing.length > 0) {
      const reason = `${missing.join(" and ")} missing (apt-get install chromium espeak-ng)`;
      log(`live-vad-onset: skipped, ${reason}`);
      // One row, so that the table says so too.
      return { figures: [{ label: `skipped: ${reason}`, value: Number.NaN, unit: "" }], details: { skipped: reason } };
    }
    ensureWebBuilt(log);
    // Loaded here: playwright-core is a dev dependency, and only the browser benchmarks need it.
    const { collectPageErrors, launchBrowser } = await import("../test/support/browser.js");
    const temp = createTempDir("live-vad-onset");
    const samples: OnsetSample[] = [];
    const pageErrors: string[] = [];
    let seconds = 0;
    const wavPath = writeSpeechWav(temp.dir, "barge-in", SPOKEN, { silenceBeforeS: SILENCE_BEFORE_S, silenceAfterS: SILENCE_AFTER_S });
    const wav = readWavSamples(wavPath);
    const wavOnsetMs = speechOnsetMs(wav.samples, wav.rate);
    if (wavOnsetMs === null) throw new Error("espeak-ng's WAV has no speech onset");
    const spoken: SpokenWav = { ...wav, onsetMs: wavOnsetMs };
    log(`live-vad-onset: WAV ${wav.rate} Hz, ${round((wav.samples.length / wav.rate) * 1000, 0)} ms, onset at ${round(wavOnsetMs, 1)} ms`);
    try {
      const tidemark = await startTidemark({ dbPath: join(temp.dir, "live-vad-onset.db"), port: 0, model: midAnswerModel(), logger: silentLogger, webRoot: BUILT_WEB_ROOT });
      try {
        const browser = await launchBrowser({ microphoneWav: wavPath });
        try {
          const page = await browser.context.newPage();
          collectPageErrors(page, pageErrors);
          await page.addInitScript(installVadOnsetProbe, { maxSamples: MAX_CAPTURED_SAMPLES, transcript: SPOKEN });
          const { thread_id: threadId } = await requestJson<{ thread_id: string }>("POST", `${tidemark.url}/v1/threads`, {}, [201]);
          await page.goto(`${tidemark.url}/threads/${threadId}`);
          await page.getByRole("button", { name: "Voice mode" }).click();
          await page.locator('[data-connection="open"]').waitFor(WAIT);
          // The first capture: the VAD hears the WAV, its words are the first turn, and the agent answers.
          await page.locator('[data-utterances="1"][data-microphone="listening"]').waitFor(WAIT);
          await page.locator('[data-phase="playing"]').waitFor(WAIT);
          await take(page);
          for (let index = 0; index < WARMUP_SAMPLES; index++) await bargeIn(page, 1 + index, index, spoken);
          const startedAt = performance.now();
          while (samples.length < SAMPLES && performance.now() - startedAt < BUDGET_MS) {
            const done = WARMUP_SAMPLES + samples.length;
            samples.push(await bargeIn(page, 1 + done, done, spoken));
            if (samples.length % 4 === 0) log(`live-vad-onset: ${samples.length}/${SAMPLES} barge-ins`);
          }
          seconds = round((performance.now() - startedAt) / 1000, 1);
          if (pageErrors.length > 0) throw new Error(`the page failed: ${pageErrors.join(" | ")}`);
        } finally {
          await browser.close();
        }
      } finally {
        await tidemark.close();
      }
    } finally {
      temp.remove();
    }
    const wavOnsetByThreshold = Object.fromEntries(
      [0.003, 0.01, 0.03].map((rmsThreshold) => [rmsThreshold, round(speechOnsetMs(wav.samples, wav.rate, { windowMs: ONSET_RULE.windowMs, rmsThreshold }) ?? Number.NaN, 2)]),
    );
    return report(samples, { onsetMs: wavOnsetMs, rate: wav.rate, onsetByThreshold: wavOnsetByThreshold }, seconds);
  },
};

function report(samples: readonly OnsetSample[], wav: { onsetMs: number; rate: number; onsetByThreshold: Record<string, number> }, seconds: number): BenchmarkResult {
  const wavOnsetMs = wav.onsetMs;
  const of = (key: keyof OnsetSample) => samples.map((sample) => sample[key] as number);
  const n = samples.length;
  const vad = stats(of("vadDelayAudioMs"));
  const paused = stats(of("onsetToPausedMs"));
  const sentToPaused = stats(of("speechStartSentToPausedMs"));
  const upper = stats(of("onsetToPausedUpperMs"));
  const figures: Figure[] = [
    { label: `VAD delay, audio time: onset → end of the frame that started speech, p50 (${n} barge-ins; min ${vad.min}, max ${vad.max})`, value: vad.p50, unit: "ms" },
    { label: "the same, p99", value: vad.p99, unit: "ms" },
    { label: "page: decision frame arrived → user.started_speaking sent, p50", value: stats(of("frameToSpeechStartSentMs")).p50, unit: "ms" },
    compared(
      { label: `page: user.started_speaking sent → output.paused received, p50 (min ${sentToPaused.min}, max ${sentToPaused.max})`, value: sentToPaused.p50, unit: "ms" },
      { label: "min_interruption_ms", value: MIN_INTERRUPTION_MS },
    ),
    compared({ label: "the same, p99", value: sentToPaused.p99, unit: "ms" }, { label: "min_interruption_ms", value: MIN_INTERRUPTION_MS }),
    compared(
      { label: `speech onset → output.paused received (interruption decided), lower bound, p50 (min ${paused.min}, max ${paused.max})`, value: paused.p50, unit: "ms" },
      { label: "min_interruption_ms", value: MIN_INTERRUPTION_MS },
    ),
    compared({ label: "the same, p99", value: paused.p99, unit: "ms" }, { label: "min_interruption_ms", value: MIN_INTERRUPTION_MS }),
    compared(
      { label: `speech onset → output.paused received, upper bound (from getUserMedia called), p50 (min ${upper.min}, max ${upper.max})`, value: upper.p50, unit: "ms" },
      { label: "min_interruption_ms", value: MIN_INTERRUPTION_MS },
    ),
    compared({ label: "the same, p99", value: upper.p99, unit: "ms" }, { label: "min_interruption_ms", value: MIN_INTERRUPTION_MS }),
    { label: "speech onset → turn.interrupted received (the transcript confirmed it; lower bound), p50", value: stats(of("onsetToInterruptedMs")).p50, unit: "ms" },
    { label: "VAD delay, audio time, from the onset placed by cross-correlating the WAV with the VAD's input, p50", value: stats(of("vadDelayAlignedMs")).p50, unit: "ms" },
    { label: "the WAV's start in the VAD's input stream of a capture (cross-correlation), p50", value: stats(of("wavStartInStreamMs")).p50, unit: "ms" },
  ];
  return {
    figures,
    details: {
      samples: n,
      warmup: WARMUP_SAMPLES,
      measuredSeconds: seconds,
      wav: { text: SPOKEN, rate: wav.rate, silenceBeforeS: SILENCE_BEFORE_S, silenceAfterS: SILENCE_AFTER_S, onsetMs: round(wavOnsetMs, 2), onsetMsByRmsThreshold: wav.onsetByThreshold },
      onsetRule: { ...ONSET_RULE, note: "the first non-overlapping window whose RMS (full scale 1) exceeds the threshold; the same rule on the WAV and on the VAD's 16 kHz input" },
      vad: { model: "silero v5 (@ricky0123/vad-web, the app's options)", frameMs: FRAME_MS, rate: VAD_RATE },
      minInterruptionMs: MIN_INTERRUPTION_MS,
      method:
        "one chromium page in voice mode; each barge-in mutes and unmutes the microphone (a new capture: the fake device plays the WAV from its start) while the agent is mid-answer, " +
        "and waits until the cut was confirmed, the utterance ended and the next answer plays. In the page (addInitScript, observing only): getUserMedia calls, the VAD worklet's frames " +
        "(arrival time and samples, before the VAD's handler), user.started_speaking as sent, the server's frames as received. VAD delay in audio time: the VAD decides inside the " +
        "handling of a frame, so the decision is at the end of frame n of the capture (n × 32 ms of stream), minus the onset found in the same stream's samples: no clock involved, " +
        "resolution 10 ms (the onset window) and 32 ms steps (frames). Onset on the page clock: min over frames k of (arrival − k × 32 ms) + the onset's position in the stream: " +
        "later than the sound by the pipeline's least latency (fake device → audio worklet → main thread, not measured), so onset → output.paused is a lower bound by that much. " +
        "Upper bound: the fake device cannot play the WAV before its capture was asked for, so the onset is no earlier than getUserMedia called + the WAV's onset",
      vadDelayAudioMs: vad,
      frameToSpeechStartSentMs: stats(of("frameToSpeechStartSentMs")),
      decisionFrameLagMs: stats(of("decisionFrameLagMs")),
      speechStartSentToPausedMs: sentToPaused,
      onsetToPausedMs: paused,
      onsetToPausedUpperMs: upper,
      onsetToInterruptedMs: stats(of("onsetToInterruptedMs")),
      requestToGrantedMs: stats(of("requestToGrantedMs")),
      onsetInStreamMs: stats(of("onsetInStreamMs")),
      onsetInStreamMinusWavMs: stats(of("onsetInStreamMs").map((value) => value - wavOnsetMs)),
      wavStartInStreamMs: stats(of("wavStartInStreamMs")),
      wavCorrelation: stats(of("wavCorrelation")),
      vadDelayAlignedMs: stats(of("vadDelayAlignedMs")),
      ruleOnsetMinusAlignedOnsetMs: stats(samples.map((sample) => sample.onsetInStreamMs - sample.alignedOnsetInStreamMs)),
      grantedToStreamStartMs: stats(of("grantedToStreamStartMs")),
      decisionFrame: stats(of("decisionFrame")),
      overlappingSamples: samples.filter((sample) => sample.isOverlapping).length,
      trackStats: samples.map((sample) => sample.trackStats),
      perSample: {
        columns: ["onset in stream ms", "decision frame", "VAD delay ms", "(aligned)", "frame → sent ms", "sent → paused ms", "onset → paused ms (lower)", "(upper)", "onset → interrupted ms"],
        rows: samples.map((sample) => [
          round(sample.onsetInStreamMs, 1),
          sample.decisionFrame,
          round(sample.vadDelayAudioMs, 1),
          round(sample.vadDelayAlignedMs, 1),
          round(sample.frameToSpeechStartSentMs, 2),
          round(sample.speechStartSentToPausedMs, 1),
          round(sample.onsetToPausedMs, 1),
          round(sample.onsetToPausedUpperMs, 1),
          round(sample.onsetToInterruptedMs, 1),
        ]),
      },
    },
  };
}
