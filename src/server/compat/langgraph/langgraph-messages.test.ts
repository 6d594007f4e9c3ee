import { describe, expect, it } from "vitest";
import { aiMessageChunk, aiMessageChunkJson } from "./langgraph-messages.js";

describe("aiMessageChunkJson", () => {
  it.each(["", "plain text ", 'quotes " and \\ backslashes', "new\nlines\r\tand\u0000controls", "unicode ✓ 🌊 \u2028\u2029", "\ud800 lone surrogate"])(
    "is JSON.stringify(aiMessageChunk(…)) byte for byte: %j",
    (text) => {
      expect(aiMessageChunkJson("msg_01abc", text)).toBe(JSON.stringify(aiMessageChunk("msg_01abc", text)));
    },
  );
});
