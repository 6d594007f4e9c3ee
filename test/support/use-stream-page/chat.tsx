/**
 * The chat of docs/compat.md's `useStream` example, as its test runs it: the real hook of
 * `@langchain/langgraph-sdk/react`, unchanged, against Tidemark's `/langgraph` layer. The page is
 * served by the same server as the API; the test puts the API key in the address's fragment, and
 * `resumable=0` there runs it without `reconnectOnMount` (whose Stop only drops the stream).
 */
import { useStream } from "@langchain/langgraph-sdk/react";
import { useState } from "react";

const apiUrl = `${location.origin}/langgraph`;
const fragment = new URLSearchParams(location.hash.slice(1));
const token = fragment.get("key");
const reconnectOnMount = fragment.get("resumable") !== "0";

/** A text box, Send, the thread's messages as they stream, and Stop while the answer is loading. */
export function Chat() {
  const thread = useStream({
    apiUrl, // Tidemark's LangGraph layer
    assistantId: "chat", // a Tidemark agent's name
    defaultHeaders: { authorization: `Bearer ${token}` },
    reconnectOnMount, // true (docs/compat.md's value) unless the address says resumable=0
  });
  const [text, setText] = useState("");
  return (
    <main>
      {thread.messages.map((message) => (
        <p key={message.id} data-type={message.type}>
          {typeof message.content === "string" ? message.content : ""}
        </p>
      ))}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          void thread.submit({ messages: [{ type: "human", content: text }] });
          setText("");
        }}
      >
        <input aria-label="Message" value={text} onChange={(event) => setText(event.target.value)} />
        <button type="submit">Send</button>
        {thread.isLoading && (
          <button type="button" onClick={() => void thread.stop()}>
            Stop
          </button>
        )}
      </form>
    </main>
  );
}
