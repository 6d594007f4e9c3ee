/**
 * The live endpoint's WebSocket, as the web app opens it: same origin, and with an API key the
 * subprotocols `tidemark.live` + `tidemark.key.<base64url(key)>` (a browser cannot set an
 * Authorization header on a WebSocket). Frames in are parsed ({@link parseServerFrame}); frames out
 * are JSON text, and a frame sent before the socket is open waits for it, in order.
 */
import { parseServerFrame, type ClientFrame, type ServerFrame } from "./live-frames.js";

/** The subprotocol the server answers with. */
export const LIVE_SUBPROTOCOL = "tidemark.live";

/** `ws://…/v1/threads/{id}/live` (wss: on an https page) on the page's own origin. */
export function liveSocketUrl(origin: string, threadId: string): string {
  const url = new URL(`/v1/threads/${encodeURIComponent(threadId)}/live`, origin);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  return url.href;
}

/** The subprotocols to ask for: none without a key (the local tenant), else the key's pair. */
export function liveSubprotocols(apiKey: string | null): string[] {
  return apiKey ? [LIVE_SUBPROTOCOL, `tidemark.key.${base64Url(apiKey)}`] : [];
}

/** The UTF-8 bytes of `text` in base64url, without padding (`=` is not allowed in a subprotocol token). */
export function base64Url(text: string): string {
  let binary = "";
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** How a live socket ended: the close code and reason, and whether it had opened at all. */
export interface LiveSocketClose {
  code: number;
  reason: string;
  wasOpen: boolean;
}

export interface LiveSocketHandlers {
  onOpen(): void;
  onFrame(frame: ServerFrame): void;
  onClose(close: LiveSocketClose): void;
}

/** An open (or opening) live socket. */
export interface LiveSocket {
  send(frame: ClientFrame): void;
  /** Closes it (1000); no handler runs after this. */
  close(): void;
}

/** Opens the live socket of `threadId`; `WebSocketClass` is the page's own unless a test gives one. */
export function openLiveSocket(
  options: { origin: string; threadId: string; apiKey: string | null; WebSocketClass?: typeof WebSocket },
  handlers: LiveSocketHandlers,
): LiveSocket {
  const SocketClass = options.WebSocketClass ?? WebSocket;
  const socket = new SocketClass(liveSocketUrl(options.origin, options.threadId), liveSubprotocols(options.apiKey));
  const waiting: string[] = [];
  let isOpen = false;
  let isClosed = false;

  socket.addEventListener("open", function onLiveSocketOpen() {
    if (isClosed) return;
    isOpen = true;
    for (const text of waiting.splice(0)) socket.send(text);
    handlers.onOpen();
  });
  socket.addEventListener("message", function onLiveSocketMessage(event: MessageEvent) {
    if (isClosed || typeof event.data !== "string") return;
    const frame = parseServerFrame(event.data);
    if (frame) handlers.onFrame(frame);
  });
  socket.addEventListener("close", function onLiveSocketClose(event: CloseEvent) {
    if (isClosed) return;
    isClosed = true;
    handlers.onClose({ code: event.code, reason: event.reason, wasOpen: isOpen });
  });

  return {
    send(frame) {
      if (isClosed) return;
      const text = JSON.stringify(frame);
      if (isOpen) socket.send(text);
      else waiting.push(text);
    },
    close() {
      if (isClosed) return;
      isClosed = true;
      socket.close(1000, "voice mode left");
    },
  };
}
