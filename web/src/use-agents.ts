/** The deployed agents (`GET /v1/agents`), read once per client; none when the server cannot list them. */
import { useEffect, useState } from "react";
import type { AgentView, TidemarkClient } from "../../src/client/index.js";

/** The agents a new message may run; empty until read, and when the list cannot be read (the chat agent still runs). */
export function useAgents(client: TidemarkClient): readonly AgentView[] {
  const [agents, setAgents] = useState<readonly AgentView[]>([]);
  useEffect(() => {
    const controller = new AbortController();
    client.listAgents({ signal: controller.signal }).then(
      (list) => setAgents(list.agents),
      // No list (an older server, a key not given yet): the page offers the default agent only, as before agents existed.
      () => setAgents([]),
    );
    return () => controller.abort();
  }, [client]);
  return agents;
}
