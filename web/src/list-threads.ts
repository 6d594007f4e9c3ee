/** `GET /v1/threads`: one page of the tenant's threads, most recently updated first. */
import { TidemarkApiError, type TidemarkClient, type ThreadView } from "../../src/client/index.js";

/** A page of threads; `next_cursor` is passed back as `before` for the next one. */
export interface ThreadPage {
  threads: ThreadView[];
  next_cursor: string | null;
}

/** Reads one page of threads (newest first). */
export async function listThreads(client: TidemarkClient, options: { limit?: number; before?: string | null; signal?: AbortSignal } = {}): Promise<ThreadPage> {
  const query = new URLSearchParams();
  if (options.limit !== undefined) query.set("limit", String(options.limit));
  if (options.before) query.set("before", options.before);
  const search = query.size > 0 ? `?${query.toString()}` : "";
  const response = await client.fetch(`${client.baseUrl}/v1/threads${search}`, {
    headers: { accept: "application/json", ...client.headers() },
    signal: options.signal,
  });
  if (!response.ok) throw await TidemarkApiError.fromResponse(response);
  return (await response.json()) as ThreadPage;
}
