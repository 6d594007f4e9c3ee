/** Mounts the {@link Chat} of the useStream browser test (test/compat-langgraph-usestream.test.ts). */
import { createRoot } from "react-dom/client";
import { Chat } from "./chat.js";

createRoot(document.getElementById("root")!).render(<Chat />);
