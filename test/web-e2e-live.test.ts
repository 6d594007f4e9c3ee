/**
 * Voice mode in chromium against a real server and its live endpoint. The microphone is
 * chromium's fake device playing a WAV that espeak-ng spoke (silence, a sentence, silence), from
 * its start at each capture: entering voice mode is one capture, muting and unmuting the
 * microphone is the next, so the test decides when the user speaks (during the agent's turn)
 * without any clock. The page's real Silero VAD detects the speech; the agent's turn is a gated
 * model that sends a long answer and then waits, so it is still going when the user speaks.
 * Headless chromium has no voices (the answer is revealed as text and acked as it is shown) and
 * no working speech recognition: the first test stands in a scripted `SpeechRecognition` for
 * the words (the VAD still decides when speech starts and ends); the second has none, and talks
 * through the typed fallback. Skipped only when chromium or espeak-ng is missing.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { DEFAULT_WEB_ROOT } from "../src/server/index.js";
import { CHROMIUM, collectPageErrors, hasChromium, launchBrowser, requireBuiltWebApp, screenshotPath, type TestBrowser } from "./support/browser.js";
import { createGatedModel } from "./support/client-session.js";
import { startHarness, type Harness } from "./support/harness.js";
import { ESPEAK, hasEspeak, writeSpeechWav } from "./support/speech-wav.js";

if (!hasChromium) console.warn(`web-e2e-live: skipped, ${CHROMIUM} is missing (apt-get install chromium to run it).`);
if (!hasEspeak) console.warn(`web-e2e-live: skipped, ${ESPEAK} is missing (apt-get install espeak-ng to run it).`);

const WAIT = { timeout: 30_000 };
const QUESTION = "Why do the tides turn?";
const SPOKEN = "Wait, tell me about the moon instead.";
/** Long enough that the page is still revealing it when the user speaks over it. */
const ANSWER = Array.from({ length: 16 }, () => "The tide turns because the moon pulls the sea, and the earth turns beneath it.").join(" ");

/** The live socket's frames, both ways, as the page sent and received them, and whether it closed (every frame is in by then). */
interface LiveFrames {
  sent: any[];
  received: any[];
  isClosed: boolean;
}

function recordLiveFrames(page: Page): LiveFrames {
  const frames: LiveFrames = { sent: [], received: [], isClosed: false };
  page.on("websocket", (socket) => {
    if (!new URL(socket.url()).pathname.endsWith("/live")) return;
    socket.on("framesent", (frame) => frames.sent.push(JSON.parse(String(frame.payload))));
    socket.on("framereceived", (frame) => frames.received.push(JSON.parse(String(frame.payload))));
    socket.on("close", () => (frames.isClosed = true));
  });
  return frames;
}

/** In the page: a `SpeechRecognition` whose utterances are `transcripts`, in order (handed over when the page stops it, as Chrome's does). */
function installScriptedRecognition(transcripts: string[]): void {
  const waiting = [...transcripts];
  class ScriptedRecognition {
    continuous = false;
    interimResults = false;
    lang = "";
    onresult: ((event: unknown) => void) | null = null;
    onerror: ((event: unknown) => void) | null = null;
    onend: (() => void) | null = null;
    start(): void {}
    stop(): void {
      const transcript = waiting.shift();
      setTimeout(() => {
        if (transcript) this.onresult?.({ results: [{ isFinal: true, 0: { transcript } }] });
        this.onend?.();
      });
    }
    abort(): void {
      setTimeout(() => this.onend?.());
    }
  }
  Object.assign(window, { SpeechRecognition: ScriptedRecognition, webkitSpeechRecognition: ScriptedRecognition });
}

/** In the page: a browser without speech recognition. */
function removeRecognition(): void {
  for (const name of ["SpeechRecognition", "webkitSpeechRecognition"]) Reflect.deleteProperty(window, name);
}

const deltaText = (frames: LiveFrames, messageId: string) =>
  frames.received.filter((frame) => frame.type === "output.delta" && frame.message_id === messageId).map((frame) => frame.text as string).join("");
const lastAck = (frames: LiveFrames, messageId: string) =>
  frames.sent.filter((frame) => frame.type === "playback" && frame.message_id === messageId).at(-1)?.played_chars as number | undefined;

describe.skipIf(!hasChromium || !hasEspeak)("the web app's voice mode", () => {
  let h: Harness;
  let browser: TestBrowser;
  let scratch: string;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    requireBuiltWebApp();
    scratch = mkdtempSync(join(tmpdir(), "tidemark-voice-"));
    const microphoneWav = writeSpeechWav(scratch, "barge-in", SPOKEN, { silenceBeforeS: 0.5, silenceAfterS: 2.5 });
    // Every answer sends ANSWER at once, then waits until the turn is cut (the test never releases it).
    const gated = createGatedModel({ before: ANSWER.split(" "), after: ["Ebb."] });
    h = await startHarness({ webRoot: DEFAULT_WEB_ROOT, model: gated.model });
    browser = await launchBrowser({ microphoneWav });
  }, 60_000);

  beforeEach(() => {
    pageErrors.length = 0;
  });

  afterAll(async () => {
    await browser?.close();
    if (h) {
      await h.expectNoViolations();
      await h.close();
    }
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  /** A page on a new thread, in voice mode, recording the live socket's frames. */
  async function voicePage(prepare: (page: Page) => Promise<unknown>): Promise<{ page: Page; threadId: string; frames: LiveFrames }> {
    const page = await browser.context.newPage();
    collectPageErrors(page, pageErrors);
    await prepare(page);
    const frames = recordLiveFrames(page);
    const threadId = await h.createThread();
    await page.goto(`${h.url}/threads/${threadId}`);
    await page.getByRole("button", { name: "Voice mode" }).click();
    await page.locator('[data-connection="open"]').waitFor(WAIT);
    return { page, threadId, frames };
  }

  /** The agent's message being revealed: waits until all of it was received and its first words were shown. */
  async function answerPlaying(page: Page, frames: LiveFrames): Promise<string> {
    await expect.poll(() => frames.received.find((frame) => frame.type === "turn.started"), WAIT).toBeDefined();
    const messageId = frames.received.find((frame) => frame.type === "turn.started").message_id as string;
    await expect.poll(() => deltaText(frames, messageId), WAIT).toBe(ANSWER);
    await expect.poll(() => page.locator(`[data-message-id="${messageId}"] [data-voice-heard]`).textContent(), WAIT).toMatch(/^The tide turns/);
    return messageId;
  }

  /** Mutes and unmutes the microphone: the new capture plays the WAV again from its start, so the user speaks now. */
  async function speakAgain(page: Page, utterancesBefore: number): Promise<void> {
    await page.getByRole("button", { name: "Mute the microphone" }).click();
    await page.locator('[data-microphone="muted"]').waitFor(WAIT);
    await page.getByRole("button", { name: "Unmute the microphone" }).click();
    await page.locator(`[data-utterances="${utterancesBefore + 1}"]`).waitFor(WAIT);
  }

  it("a spoken barge-in cuts the answer at what was shown: heard vs discarded on screen, the heard prefix in history, marked interrupted", async () => {
    const { page, threadId, frames } = await voicePage((page) => page.addInitScript(installScriptedRecognition, [QUESTION, SPOKEN]));
    // The first capture: the VAD hears the WAV's sentence, and its words (scripted) are the first turn.
    await page.locator("[data-voice-user]").getByText(QUESTION).waitFor(WAIT);
    const messageId = await answerPlaying(page, frames);
    const message = page.locator(`[data-message-id="${messageId}"]`);

    await speakAgain(page, 1);
    await message.and(page.locator('[data-phase="interrupted"]')).waitFor(WAIT);
    const heard = (await message.locator("[data-voice-heard]").textContent())!;
    const discarded = (await message.locator("[data-voice-discarded]").textContent())!;
    expect(heard.length).toBeGreaterThan(0);
    expect(discarded.length).toBeGreaterThan(0);
    expect(heard + discarded).toBe(ANSWER);

    // The wire: the output paused while the user spoke, the transcript confirmed the cut at the last ack, exactly.
    const interrupted = frames.received.find((frame) => frame.type === "turn.interrupted");
    expect(interrupted).toMatchObject({ message_id: messageId, reason: "user_speech", heard_chars: heard.length });
    expect(lastAck(frames, messageId)).toBe(heard.length);
    const types = frames.received.map((frame) => frame.type as string);
    expect(types.indexOf("output.paused")).toBeGreaterThan(-1);
    expect(types.indexOf("output.paused")).toBeLessThan(types.indexOf("turn.interrupted"));
    await expect.poll(() => frames.received.find((frame) => frame.type === "message.published" && frame.message_id === messageId), WAIT).toMatchObject({
      content: heard,
      interrupted: true,
    });
    const speech = frames.sent.filter((frame) => frame.type.startsWith("user."));
    expect(speech).toEqual([
      { type: "user.started_speaking" },
      { type: "user.stopped_speaking", transcript: QUESTION },
      { type: "user.started_speaking" },
      { type: "user.stopped_speaking", transcript: SPOKEN },
    ]);
    await page.locator("[data-voice-user]").getByText(SPOKEN).waitFor(WAIT);

    // The thread's history holds exactly what was heard, marked interrupted, and the run was cancelled.
    const history = (await h.api(`/v1/threads/${threadId}/history`)).body.messages as any[];
    expect(history.slice(0, 2).map((entry) => [entry.role, entry.content, entry.interrupted])).toEqual([
      ["user", QUESTION, false],
      ["assistant", heard, true],
    ]);
    await expect.poll(async () => (await h.api(`/v1/runs/${interrupted.run_id}`)).body.status, WAIT).toBe("cancelled");
    await page.screenshot({ path: screenshotPath("web-voice-barge-in.png", browser.scratch) });

    await page.getByRole("button", { name: "Leave voice mode" }).click();
    // Back in the conversation, the saved answer is the heard part, labelled as cut.
    const saved = page.locator(".message.assistant").filter({ hasText: "Interrupted in voice mode" }).first();
    await saved.waitFor(WAIT);
    expect(await saved.locator(".message-text").textContent()).toBe(heard);
    expect(pageErrors).toEqual([]);
    await page.close();
  }, 120_000);

  it("speech without words pauses the answer, which resumes (a false interruption); the typed fallback speaks for the user", async () => {
    const { page, threadId, frames } = await voicePage((page) => page.addInitScript(removeRecognition));
    await page.locator("[data-typed-fallback]").waitFor(WAIT);
    // The first capture's sentence has no words here and no turn to interrupt: nothing happens.
    await page.locator('[data-utterances="1"][data-microphone="listening"]').waitFor(WAIT);
    expect(frames.sent.filter((frame) => frame.type.startsWith("user."))).toEqual([{ type: "user.started_speaking" }, { type: "user.stopped_speaking" }]);

    await page.getByRole("textbox", { name: "What you say" }).fill(QUESTION);
    await page.getByRole("button", { name: "Say it" }).click();
    const messageId = await answerPlaying(page, frames);
    const message = page.locator(`[data-message-id="${messageId}"]`);

    await speakAgain(page, 1);
    await expect.poll(() => frames.received.some((frame) => frame.type === "output.resumed"), WAIT).toBe(true);
    const types = frames.received.map((frame) => frame.type as string);
    expect(types.indexOf("output.paused")).toBeGreaterThan(-1);
    expect(types.indexOf("output.paused")).toBeLessThan(types.indexOf("output.resumed"));
    expect(types).not.toContain("turn.interrupted");
    // Revealing goes on after the resume.
    const atResume = lastAck(frames, messageId)!;
    await expect.poll(() => lastAck(frames, messageId)!, WAIT).toBeGreaterThan(atResume);
    expect(await message.getAttribute("data-phase")).toBe("playing");

    // Leaving voice mode closes the socket: the turn is cut where the user had got to, and that much is saved.
    await page.getByRole("button", { name: "Leave voice mode" }).click();
    await expect.poll(() => frames.isClosed, WAIT).toBe(true);
    const heardChars = lastAck(frames, messageId)!;
    await expect
      .poll(async () => ((await h.api(`/v1/threads/${threadId}/history`)).body.messages as any[]).map((entry) => [entry.role, entry.content, entry.interrupted]), WAIT)
      .toEqual([
        ["user", QUESTION, false],
        ["assistant", ANSWER.slice(0, heardChars), true],
      ]);
    expect(pageErrors).toEqual([]);
    await page.close();
  }, 120_000);

  it("typed words cut a playing answer at what was shown (no speech to time: they are deliberate)", async () => {
    const { page, threadId, frames } = await voicePage((page) => page.addInitScript(removeRecognition));
    await page.locator("[data-typed-fallback]").waitFor(WAIT);
    await page.locator('[data-utterances="1"][data-microphone="listening"]').waitFor(WAIT);
    const typed = page.getByRole("textbox", { name: "What you say" });
    await typed.fill(QUESTION);
    await page.getByRole("button", { name: "Say it" }).click();
    const messageId = await answerPlaying(page, frames);
    const message = page.locator(`[data-message-id="${messageId}"]`);

    // Some of it was acked (on the same socket, so before the typed words reach the server).
    await expect.poll(() => lastAck(frames, messageId) ?? 0, WAIT).toBeGreaterThan(0);
    await typed.fill(SPOKEN);
    await page.getByRole("button", { name: "Say it" }).click();
    await message.and(page.locator('[data-phase="interrupted"]')).waitFor(WAIT);
    // Typed words are a transcript alone: no speech frame before them, no pause; the cut is at the server's last ack.
    expect(frames.sent.filter((frame) => frame.type.startsWith("user.")).slice(-1)).toEqual([{ type: "user.stopped_speaking", transcript: SPOKEN }]);
    const interrupted = frames.received.find((frame) => frame.type === "turn.interrupted");
    expect(interrupted).toMatchObject({ message_id: messageId, reason: "user_speech" });
    const heardChars = interrupted.heard_chars as number;
    expect(heardChars).toBeGreaterThan(0);
    expect(heardChars).toBeLessThanOrEqual(lastAck(frames, messageId)!);
    expect(await message.locator("[data-voice-heard]").textContent()).toBe(ANSWER.slice(0, heardChars));
    await page.locator("[data-voice-user]").getByText(SPOKEN).waitFor(WAIT);
    await expect
      .poll(async () => ((await h.api(`/v1/threads/${threadId}/history`)).body.messages as any[]).slice(0, 3).map((entry) => [entry.role, entry.content, entry.interrupted]), WAIT)
      .toEqual([
        ["user", QUESTION, false],
        ["assistant", ANSWER.slice(0, heardChars), true],
        ["user", SPOKEN, false],
      ]);
    await page.getByRole("button", { name: "Leave voice mode" }).click();
    await expect.poll(() => frames.isClosed, WAIT).toBe(true);
    expect(pageErrors).toEqual([]);
    await page.close();
  }, 120_000);

  it("with API keys, the page's key opens the live socket (as a subprotocol); a wrong key is refused and said so", async () => {
    const keyed = await startHarness({ webRoot: DEFAULT_WEB_ROOT, apiKeys: new Map([["tm-voice-key", "tenant-voice"]]) });
    try {
      const threadId = await keyed.createThread("tm-voice-key");
      for (const key of ["tm-voice-key", "tm-wrong-key"]) {
        const page = await browser.context.newPage();
        // A refused handshake is logged by the browser as a console error: only script errors count here.
        collectPageErrors(page, pageErrors, { consoleErrors: false });
        await page.addInitScript((stored) => window.sessionStorage.setItem("tidemark.apiKey", stored), key);
        await page.addInitScript(removeRecognition);
        const frames = recordLiveFrames(page);
        await page.goto(`${keyed.url}/threads/${threadId}`);
        await page.getByRole("button", { name: "Voice mode" }).click();
        if (key === "tm-voice-key") {
          await page.locator('[data-connection="open"]').waitFor(WAIT);
          expect(frames.received[0]).toMatchObject({ type: "session.ready", thread_id: threadId });
        } else {
          await page.getByRole("alert").getByText("The live connection could not be opened.").waitFor(WAIT);
          expect(frames.received).toEqual([]);
        }
        await page.close();
      }
      expect(pageErrors).toEqual([]);
      await keyed.expectNoViolations();
    } finally {
      await keyed.close();
    }
  }, 60_000);
});
