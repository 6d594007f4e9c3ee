// The route API on its own: one route, a sink that prints, and a barge-in after 4 heard words.
import { LiveBridge, UserStartedSpeaking, UserStoppedSpeaking, EmergencyStop } from "tidemark";

const words = "The tide comes in twice a day, pulled by the moon and, a little, by the sun.".split(" ");
const bridge = new LiveBridge();
let heard = 0;
let hasBargedIn = false;

bridge
  .on(UserStoppedSpeaking)
  .interruptOn([UserStartedSpeaking, EmergencyStop], {
    minInterruptionMs: 0, // pause at once (the default is 500 ms of speech)
    handler: (event) => console.log(`handler: ran after the generation stopped (${event.constructor.name})`),
  })
  .stream(async function* generate(event, turn) {
    try {
      for (const word of words) {
        if (turn.signal.aborted) return;
        await new Promise((resolve) => setTimeout(resolve, 50));
        yield `${word} `;
      }
    } finally {
      console.log(`generate: finally (${turn.signal.aborted ? turn.signal.reason.reason : "played to the end"})`);
    }
  })
  .broadcast();

bridge.subscribe({
  turnStarted: () => {
    heard = 0;
    console.log("turn.started");
  },
  delta: (messageId, text) => {
    console.log(`output.delta ${JSON.stringify(text)}`);
    // The "player" acknowledges each word as it is said; the user barges in after the 4th, once.
    heard += text.length;
    bridge.ack(messageId, heard);
    if (!hasBargedIn && text === words[3] + " ") {
      hasBargedIn = true;
      bridge.emit(new UserStartedSpeaking());
      bridge.emit(new UserStoppedSpeaking("Why twice?"));
    }
  },
  done: () => console.log("output.done"),
  paused: () => console.log("output.paused"),
  resumed: () => console.log("output.resumed"),
  interrupted: ({ heardChars, reason }) => console.log(`turn.interrupted: ${reason}, heard ${heardChars} characters`),
});

bridge.emit(new UserStoppedSpeaking("Tell me about tides"));
await new Promise((resolve) => setTimeout(resolve, 100));
await bridge.idle();
await bridge.close();
