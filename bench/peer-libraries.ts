import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { AIMessageChunk } from "@langchain/core/messages";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { ChatOpenAI } from "@langchain/openai";
import { streamText } from "ai";
import { createParser } from "eventsource-parser";
import OpenAI from "openai";
import { trackStream, type Peer } from "./peer-stream.js";

/**
 * The library peers of peer-compare, each used the usual way, straight against the provider and
 * stopped with an in-process abort(): the raw floor (fetch + eventsource-parser + JSON.parse),
 * the `openai` client, the AI SDK's `streamText`, and a one-node LangGraph.js graph over ChatOpenAI.
 */

const MODEL = "m";
const API_KEY = "bench";

const resolved = (): Promise<void> => Promise.resolve();

/** The floor: what reading the stream costs with nothing between the socket and the text. */
export function rawPeer(baseURL: string): Peer {
  const consume = (prompt: string) => async (signal: AbortSignal, onText: (text: string) => void) => {
    const response = await fetch(`${baseURL}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${API_KEY}` },
      body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: prompt }], stream: true, stream_options: { include_usage: true } }),
      signal,
    });
    if (response.status !== 200 || !response.body) throw new Error(`provider answered ${response.status}`);
    const parser = createParser({
      onEvent(event) {
        if (event.data === "[DONE]") return;
        const chunk = JSON.parse(event.data) as { choices?: { delta?: { content?: string | null } }[] };
        const text = chunk.choices?.[0]?.delta?.content;
        if (text) onText(text);
      },
    });
    const decoder = new TextDecoder();
    const reader = response.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      parser.feed(decoder.decode(value, { stream: true }));
    }
  };
  return { name: "raw", start: (prompt) => trackStream(consume(prompt)), close: resolved };
}

export function openaiPeer(baseURL: string): Peer {
  const client = new OpenAI({ apiKey: API_KEY, baseURL, maxRetries: 0 });
  const consume = (prompt: string) => async (signal: AbortSignal, onText: (text: string) => void) => {
    const stream = await client.chat.completions.create(
      { model: MODEL, messages: [{ role: "user", content: prompt }], stream: true, stream_options: { include_usage: true } },
      { signal },
    );
    for await (const chunk of stream) {
      const text = chunk.choices[0]?.delta?.content;
      if (text) onText(text);
    }
  };
  return { name: "openai", start: (prompt) => trackStream(consume(prompt)), close: resolved };
}

export function aiSdkPeer(baseURL: string): Peer {
  const model = createOpenAICompatible({ name: "bench", baseURL, apiKey: API_KEY }).chatModel(MODEL);
  const consume = (prompt: string) => async (signal: AbortSignal, onText: (text: string) => void) => {
    let failure: unknown;
    const result = streamText({ model, prompt, abortSignal: signal, maxRetries: 0, onError: ({ error }) => void (failure ??= error) });
    for await (const text of result.textStream) onText(text);
    if (failure !== undefined) throw failure;
  };
  return { name: "ai-sdk", start: (prompt) => trackStream(consume(prompt)), close: resolved };
}

/** A StateGraph with one node calling ChatOpenAI, streamed with `streamMode: "messages"` (token by token). */
export function langGraphPeer(baseURL: string): Peer {
  const model = new ChatOpenAI({ model: MODEL, apiKey: API_KEY, configuration: { baseURL }, maxRetries: 0, streaming: true });
  const graph = new StateGraph(MessagesAnnotation)
    .addNode("model", async (state, config) => ({ messages: [await model.invoke(state.messages, config)] }))
    .addEdge(START, "model")
    .addEdge("model", END)
    .compile();
  const consume = (prompt: string) => async (signal: AbortSignal, onText: (text: string) => void) => {
    const stream = await graph.stream({ messages: [{ role: "user", content: prompt }] }, { streamMode: "messages", signal });
    for await (const [message] of stream) {
      // The node's finished message is not streamed again (same id), but only chunks are tokens.
      if (message instanceof AIMessageChunk && typeof message.content === "string") onText(message.content);
    }
  };
  return { name: "langgraph", start: (prompt) => trackStream(consume(prompt)), close: resolved };
}
