/**
 * What the user said, by the browser's speech recognition (`SpeechRecognition`, prefixed
 * `webkitSpeechRecognition` in Chromium), one recognition per utterance: started when the VAD
 * hears speech begin, stopped when it ends, and its final words are the utterance's transcript.
 * Where there is none, or it cannot work here (no network service, no microphone for it), it says
 * so once and gives empty transcripts: the voice mode then offers the typed fallback.
 */

/** The part of the Web Speech API used here (TypeScript's DOM library does not declare it). */
interface Recognition {
  continuous: boolean;
  interimResults: boolean;
  lang: string;
  onresult: ((event: { results: ArrayLike<{ isFinal: boolean; 0: { transcript: string } }> }) => void) | null;
  onerror: ((event: { error: string }) => void) | null;
  onend: (() => void) | null;
  start(): void;
  stop(): void;
  abort(): void;
}
type RecognitionClass = new () => Recognition;

/** Errors after which recognition will not work in this page (the typed fallback takes over), in words. */
const FATAL_ERRORS: Record<string, string> = {
  "not-allowed": "it was not allowed",
  "service-not-allowed": "it was not allowed",
  network: "its service cannot be reached",
  "audio-capture": "it cannot use the microphone",
  "language-not-supported": "it does not know this language",
};

/** How long a stopped recognition may take to hand over its last words. */
const FINISH_TIMEOUT_MS = 2_000;

/** One utterance being transcribed. */
export interface UtteranceTranscript {
  /** Stops listening and resolves with the words heard ("" when none). */
  finish(): Promise<string>;
  /** Drops the utterance (a misfire, a mute). */
  cancel(): void;
}

export interface SpeechTranscriber {
  /** Whether the browser's recognition is (still) usable here. */
  isAvailable(): boolean;
  begin(): UtteranceTranscript;
}

const NOTHING: UtteranceTranscript = { finish: () => Promise.resolve(""), cancel: () => {} };

/** The page's recognition, in `lang`; `onUnavailable` is told once why it cannot be used, in words. */
export function createSpeechTranscriber(options: { lang: string; onUnavailable(reason: string): void }): SpeechTranscriber {
  const scope = globalThis as { SpeechRecognition?: RecognitionClass; webkitSpeechRecognition?: RecognitionClass };
  const RecognitionClass = scope.SpeechRecognition ?? scope.webkitSpeechRecognition;
  let isAvailable = RecognitionClass !== undefined;
  const giveUp = (reason: string): void => {
    if (!isAvailable) return;
    isAvailable = false;
    options.onUnavailable(reason);
  };

  return {
    isAvailable: () => isAvailable,
    begin() {
      if (!isAvailable || !RecognitionClass) return NOTHING;
      const recognition = new RecognitionClass();
      recognition.continuous = true;
      recognition.interimResults = true;
      recognition.lang = options.lang;
      let finalText = "";
      let interimText = "";
      let markEnded!: () => void;
      const ended = new Promise<void>((resolve) => (markEnded = resolve));
      recognition.onresult = (event) => {
        finalText = "";
        interimText = "";
        for (const result of Array.from(event.results)) {
          if (result.isFinal) finalText += result[0].transcript;
          else interimText += result[0].transcript;
        }
      };
      recognition.onerror = (event) => {
        const reason = FATAL_ERRORS[event.error];
        if (reason) giveUp(reason);
      };
      recognition.onend = () => markEnded();
      try {
        recognition.start();
      } catch (error) {
        giveUp(`it did not start${error instanceof Error ? ` (${error.message})` : ""}`);
        return NOTHING;
      }
      return {
        async finish() {
          recognition.stop();
          let timer: ReturnType<typeof setTimeout> | undefined;
          await Promise.race([ended, new Promise<void>((resolve) => (timer = setTimeout(resolve, FINISH_TIMEOUT_MS)))]);
          clearTimeout(timer);
          // The last words may still be interim when a recognizer is cut short: better than nothing.
          return (finalText || interimText).trim();
        },
        cancel() {
          recognition.abort();
        },
      };
    },
  };
}
