// A scripted live client: a turn, 20 heard characters, a barge-in, then the thread's history.
import WebSocket from "ws";

const base = process.env.TIDEMARK_URL ?? "http://localhost:8787";
const json = (response) => response.json();
const { thread_id: threadId } = await fetch(`${base}/v1/threads`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }).then(json);

const socket = new WebSocket(`${base.replace(/^http/, "ws")}/v1/threads/${threadId}/live`);
const send = (frame) => socket.send(JSON.stringify(frame));
let sent = "";
let bargedIn = false;

socket.on("message", (data) => {
  const frame = JSON.parse(String(data));
  console.log("←", JSON.stringify(frame).slice(0, 160));
  if (frame.type === "session.ready") {
    send({ type: "session.update", interruption: { min_interruption_ms: 0 } });
    send({ type: "user.stopped_speaking", transcript: "Tell me a long story about the sea." });
  }
  if (frame.type === "output.delta") {
    sent += frame.text;
    if (!bargedIn && sent.length >= 40) {
      bargedIn = true;
      send({ type: "playback", message_id: frame.message_id, played_chars: 20 });
      send({ type: "user.started_speaking" });
      send({ type: "user.stopped_speaking", transcript: "Stop, that is enough." });
    }
  }
  if (frame.type === "turn.ended" && bargedIn) {
    socket.close();
  }
});

socket.on("close", async () => {
  const history = await fetch(`${base}/v1/threads/${threadId}/history`).then(json);
  for (const message of history.messages) console.log(`${message.role}${message.interrupted ? " (interrupted)" : ""}: ${message.content.slice(0, 120)}`);
});
