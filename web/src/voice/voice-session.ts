/**
 * One voice mode session on a thread: the live socket, the microphone's speech detection and
 * transcription, the typed fallback, and the playback of the agent's messages with its acks. Its
 * state is a {@link VoiceSnapshot} for `useSyncExternalStore`; everything it shows comes from
 * {@link voiceReducer}.
 *
 * Speech: the VAD's start is sent at once (`user.started_speaking`); at its end the utterance's
 * transcript (speech recognition, when the browser has one that works) goes with
 * `user.stopped_speaking`. Utterance frames leave in order: one utterance's stop before the next
 * one's start, even while a transcript is still being finished.
 */
import { createMessagePlayer, type OutputMode } from "./create-message-player.js";
import type { ClientFrame } from "./live-frames.js";
import { openLiveSocket, type LiveSocket } from "./live-socket.js";
import { createPlaybackQueue } from "./playback-queue.js";
import { startSpeechDetector, type SpeechDetector } from "./speech-detector.js";
import { createSpeechTranscriber, type UtteranceTranscript } from "./speech-transcriber.js";
import { INITIAL_VOICE_STATE, voiceReducer, type AgentMessage, type VoiceAction, type VoiceState } from "./voice-state.js";

export type { OutputMode } from "./create-message-player.js";

/** Where the microphone is: loading the VAD, listening, hearing speech, muted, off (closed) or failed. */
export type MicrophoneStatus = "starting" | "listening" | "hearing" | "muted" | "off" | "failed";

/** What the voice screen shows. */
export interface VoiceSnapshot {
  voice: VoiceState;
  microphone: MicrophoneStatus;
  microphoneError: string | null;
  /** How many utterances the VAD heard begin (misfires included). */
  utterances: number;
  /** Why speech recognition cannot be used here (type instead), or null while it can. */
  recognitionUnavailable: string | null;
  outputMode: OutputMode;
  /** The browser has voices to speak with. */
  canSpeak: boolean;
}

export interface VoiceSession {
  getSnapshot(): VoiceSnapshot;
  subscribe(listener: () => void): () => void;
  /** The typed fallback: sent as a transcript alone (`user.stopped_speaking` with it), which cuts a playing answer. */
  sendTyped(text: string): void;
  setMuted(isMuted: boolean): void;
  /** How the next agent message is played. */
  setOutputMode(mode: OutputMode): void;
  /** Cuts the agent off at once, whatever the interruption options. */
  emergencyStop(): void;
  dismissError(): void;
  /** Leaves voice mode: the socket, the microphone and playback stop. */
  close(): void;
}

/**
 * Opens a voice session on `threadId`. Call it from the click that enters voice mode: the
 * microphone's audio context is made there, while the browser still counts it as the user's act.
 */
export function createVoiceSession(options: { origin: string; threadId: string; apiKey: string | null; lang: string }): VoiceSession {
  const synthesis = typeof speechSynthesis === "undefined" ? null : speechSynthesis;
  const audioContext = new AudioContext();
  const listeners = new Set<() => void>();
  let state = INITIAL_VOICE_STATE;
  let microphone: MicrophoneStatus = "starting";
  let microphoneError: string | null = null;
  let utterances = 0;
  let recognitionUnavailable: string | null = null;
  let chosenMode: OutputMode | null = null;
  let detector: SpeechDetector | null = null;
  let isMuted = false;
  let isClosed = false;
  let utterance: UtteranceTranscript | null = null;
  let typedDuringSpeech: string[] = [];
  let outgoing: Promise<void> = Promise.resolve();
  const acked = new Map<string, number>();
  let snapshot = buildSnapshot();

  function voices(): SpeechSynthesisVoice[] {
    return synthesis?.getVoices() ?? [];
  }
  function buildSnapshot(): VoiceSnapshot {
    const canSpeak = voices().length > 0;
    return { voice: state, microphone, microphoneError, utterances, recognitionUnavailable, outputMode: chosenMode ?? (canSpeak ? "speech" : "text"), canSpeak };
  }
  function emit(): void {
    snapshot = buildSnapshot();
    for (const listener of listeners) listener();
  }
  function dispatch(action: VoiceAction): void {
    state = voiceReducer(state, action);
    emit();
  }
  function send(frame: ClientFrame): void {
    socket.send(frame);
  }
  /** Sends utterance frames in order, after those already waiting for a transcript. */
  function enqueue(work: () => Promise<void> | void): void {
    outgoing = outgoing.then(work).catch((error: unknown) => console.error("voice mode: an utterance could not be sent", error));
  }

  const transcriber = createSpeechTranscriber({
    lang: options.lang,
    onUnavailable(reason) {
      recognitionUnavailable = reason;
      emit();
    },
  });
  if (!transcriber.isAvailable()) recognitionUnavailable = "this browser has none";

  const playback = createPlaybackQueue(
    (_messageId, callbacks) =>
      createMessagePlayer(snapshot.outputMode, { ...callbacks, onSpeechFailed: () => setOutputMode("text") }, { synthesis, voice: pickVoice(voices(), options.lang) }),
    function ackPlayed(messageId, playedChars) {
      dispatch({ type: "played", messageId, playedChars });
      const message = state.entries.find((entry): entry is AgentMessage => entry.kind === "agent" && entry.messageId === messageId);
      if (!message || message.playedChars <= (acked.get(messageId) ?? 0)) return;
      acked.set(messageId, message.playedChars);
      send({ type: "playback", message_id: messageId, played_chars: message.playedChars });
    },
  );

  const socket: LiveSocket = openLiveSocket(
    { origin: options.origin, threadId: options.threadId, apiKey: options.apiKey },
    {
      onOpen() {},
      onFrame(frame) {
        dispatch({ type: "frame", frame });
        playback.apply(frame, state);
      },
      onClose(close) {
        dispatch({ type: "closed", ...close });
        shutDown();
      },
    },
  );

  function sendUtterance(transcript: string): void {
    const words = transcript.trim();
    if (words === "") {
      send({ type: "user.stopped_speaking" });
      return;
    }
    send({ type: "user.stopped_speaking", transcript: words });
    dispatch({ type: "said", transcript: words });
  }

  function endUtterance(words: Promise<string>): void {
    utterance = null;
    if (microphone === "hearing") microphone = "listening";
    emit();
    enqueue(async () => sendUtterance(await words));
    for (const text of typedDuringSpeech.splice(0)) enqueue(() => sendUtterance(text));
  }

  const detection = {
    onSpeechStart() {
      if (isClosed || isMuted || utterance) return;
      utterance = transcriber.begin();
      utterances++;
      microphone = "hearing";
      emit();
      enqueue(() => send({ type: "user.started_speaking" }));
    },
    onSpeechEnd() {
      if (utterance) endUtterance(utterance.finish());
    },
    onMisfire() {
      if (!utterance) return;
      utterance.cancel();
      endUtterance(Promise.resolve(""));
    },
  };

  async function startMicrophone(): Promise<void> {
    try {
      const started = await startSpeechDetector(detection, audioContext);
      if (isClosed) return await started.destroy();
      detector = started;
      if (isMuted) await started.mute();
      microphone = isMuted ? "muted" : "listening";
    } catch (error) {
      if (isClosed) return;
      microphone = "failed";
      microphoneError = describeMicrophoneError(error);
    }
    emit();
  }
  void startMicrophone();

  function setOutputMode(mode: OutputMode): void {
    chosenMode = mode;
    emit();
  }

  function onVoicesChanged(): void {
    emit();
  }
  synthesis?.addEventListener("voiceschanged", onVoicesChanged);

  function shutDown(): void {
    if (isClosed) return;
    isClosed = true;
    playback.stop();
    utterance?.cancel();
    utterance = null;
    synthesis?.removeEventListener("voiceschanged", onVoicesChanged);
    const running = detector;
    detector = null;
    void (running ? running.destroy() : Promise.resolve())
      .catch(() => {})
      .finally(() => audioContext.close().catch(() => {}));
    if (microphone !== "failed") microphone = "off";
    emit();
  }

  return {
    getSnapshot: () => snapshot,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    sendTyped(text) {
      if (isClosed || text.trim() === "") return;
      // Typed words are a transcript with no speech before it: the server takes them as deliberate,
      // so they cut a playing answer. Said while the microphone hears speech: they follow that utterance.
      if (utterance) typedDuringSpeech.push(text);
      else enqueue(() => sendUtterance(text));
    },
    setMuted(nextIsMuted) {
      if (isClosed || nextIsMuted === isMuted) return;
      isMuted = nextIsMuted;
      // Muted mid-utterance: the utterance ends here, without words (the server decides what that means).
      if (isMuted && utterance) {
        utterance.cancel();
        endUtterance(Promise.resolve(""));
      }
      if (detector) {
        const running = detector;
        microphone = isMuted ? "muted" : "listening";
        void (isMuted ? running.mute() : running.unmute()).catch((error: unknown) => {
          microphone = "failed";
          microphoneError = describeMicrophoneError(error);
          emit();
        });
      }
      emit();
    },
    setOutputMode,
    emergencyStop() {
      send({ type: "emergency_stop" });
    },
    dismissError() {
      dispatch({ type: "dismiss_error" });
    },
    close() {
      typedDuringSpeech = [];
      socket.close();
      shutDown();
    },
  };
}

/** A voice in the page's language (a local one first), else the browser's default. */
function pickVoice(voices: readonly SpeechSynthesisVoice[], lang: string): SpeechSynthesisVoice | null {
  const language = lang.split("-")[0]!.toLowerCase();
  const matching = voices.filter((voice) => voice.lang.toLowerCase().startsWith(language));
  return matching.find((voice) => voice.localService) ?? matching[0] ?? null;
}

function describeMicrophoneError(error: unknown): string {
  if (error instanceof DOMException && (error.name === "NotAllowedError" || error.name === "SecurityError")) return "The microphone was not allowed.";
  if (error instanceof DOMException && error.name === "NotFoundError") return "No microphone was found.";
  return "The microphone or speech detection could not start.";
}
