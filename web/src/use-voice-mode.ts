/**
 * Voice mode on the open thread, as React state: `enter()` (from a click: the microphone's audio
 * context must start inside the user's act) opens a {@link VoiceSession}, `leave()` closes it and
 * tells the page, which reloads the thread (the live turns' published messages are in its history
 * now). Switching threads or keys leaves voice mode.
 */
import { useCallback, useEffect, useRef, useState, useSyncExternalStore } from "react";
import { createVoiceSession, type VoiceSession, type VoiceSnapshot } from "./voice/voice-session.js";

export interface VoiceMode {
  session: VoiceSession | null;
  snapshot: VoiceSnapshot | null;
  enter(): void;
  leave(): void;
}

/** The voice mode of `threadId` (none without a thread), with `apiKey` for the live socket. */
export function useVoiceMode(threadId: string | null, apiKey: string | null, onLeave: () => void): VoiceMode {
  const [session, setSession] = useState<VoiceSession | null>(null);
  const current = useRef<VoiceSession | null>(null);
  const leaveCallback = useRef(onLeave);
  leaveCallback.current = onLeave;

  const enter = useCallback(() => {
    if (threadId === null || current.current) return;
    const opened = createVoiceSession({ origin: window.location.origin, threadId, apiKey, lang: navigator.language || "en-US" });
    current.current = opened;
    setSession(opened);
  }, [threadId, apiKey]);

  const leave = useCallback(() => {
    const open = current.current;
    if (!open) return;
    open.close();
    current.current = null;
    setSession(null);
    leaveCallback.current();
  }, []);

  // Another thread or key: the session belonged to the old one.
  useEffect(
    () => () => {
      current.current?.close();
      current.current = null;
      setSession(null);
    },
    [threadId, apiKey],
  );

  const source = session ?? noSession;
  const snapshot = useSyncExternalStore<VoiceSnapshot | null>(source.subscribe, source.getSnapshot);
  return { session, snapshot, enter, leave };
}

const noSession = { subscribe: () => () => {}, getSnapshot: (): VoiceSnapshot | null => null };
