/** A scripted live client over a real WebSocket (the `ws` package): it sends frames and waits for the server's. */
import WebSocket from "ws";

/** A server frame as received. */
export type LiveFrame = { type: string; [field: string]: unknown };

export interface LiveClient {
  /** Every frame received so far, in order. */
  readonly frames: LiveFrame[];
  send(frame: unknown): void;
  sendRaw(data: string | Buffer, options?: { binary?: boolean }): void;
  /** Resolves with the first frame after the `from`-th (default: the frames seen so far) that matches. */
  next(type: string, where?: (frame: LiveFrame) => boolean, from?: number): Promise<LiveFrame>;
  /** The text of the output.delta frames of `messageId` received so far. */
  sentText(messageId: string): string;
  /** Closes the socket and waits for the close. */
  close(): Promise<void>;
  readonly isOpen: boolean;
}

/** Connects to `/v1/threads/{threadId}/live`; rejects with the HTTP status and body when the upgrade is refused. */
export async function connectLive(baseUrl: string, threadId: string, options: { headers?: Record<string, string>; protocols?: string[]; query?: string } = {}): Promise<LiveClient> {
  const url = `${baseUrl.replace(/^http/, "ws")}/v1/threads/${threadId}/live${options.query ?? ""}`;
  const socket = new WebSocket(url, options.protocols ?? [], { headers: options.headers });
  const frames: LiveFrame[] = [];
  const waiters = new Set<{ type: string; where: (frame: LiveFrame) => boolean; from: number; resolve: (frame: LiveFrame) => void; reject: (error: Error) => void }>();
  const settle = (): void => {
    for (const waiter of waiters) {
      const found = frames.slice(waiter.from).find((frame) => frame.type === waiter.type && waiter.where(frame));
      if (found) {
        waiters.delete(waiter);
        waiter.resolve(found);
      }
    }
  };
  socket.on("message", (data) => {
    frames.push(JSON.parse(String(data)) as LiveFrame);
    settle();
  });
  socket.on("close", () => {
    for (const waiter of waiters) waiter.reject(new Error(`the socket closed before a ${waiter.type} frame; frames: ${JSON.stringify(frames).slice(-2_000)}`));
    waiters.clear();
  });
  await new Promise<void>((resolve, reject) => {
    socket.once("open", () => resolve());
    socket.once("unexpected-response", (_request, response) => {
      let body = "";
      response.on("data", (chunk: Buffer) => (body += chunk.toString()));
      response.on("end", () => reject(Object.assign(new Error(`upgrade refused: ${response.statusCode}`), { status: response.statusCode, body: JSON.parse(body || "{}") as unknown })));
    });
    socket.once("error", reject);
  });
  return {
    frames,
    get isOpen() {
      return socket.readyState === WebSocket.OPEN;
    },
    send: (frame) => socket.send(JSON.stringify(frame)),
    sendRaw: (data, sendOptions) => socket.send(data, { binary: sendOptions?.binary ?? false }),
    next(type, where = () => true, from = frames.length) {
      return new Promise((resolve, reject) => {
        if (socket.readyState !== WebSocket.OPEN && !frames.slice(from).some((frame) => frame.type === type && where(frame))) {
          reject(new Error(`the socket is closed; no ${type} frame`));
          return;
        }
        waiters.add({ type, where, from, resolve, reject });
        settle();
      });
    },
    sentText: (messageId) =>
      frames
        .filter((frame) => frame.type === "output.delta" && frame.message_id === messageId)
        .map((frame) => frame.text as string)
        .join(""),
    async close() {
      if (socket.readyState === WebSocket.CLOSED) return;
      const closed = new Promise((resolve) => socket.once("close", resolve));
      socket.close();
      await closed;
    },
  };
}
