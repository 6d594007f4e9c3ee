/** The API client of the server that served this page, with the API key the user gave (if any). */
import { createTidemarkClient, type TidemarkClient } from "../../src/client/index.js";

const KEY_STORAGE = "tidemark.apiKey";

/** The key kept for this tab only (sessionStorage): it never outlives the tab. */
export function storedApiKey(): string | null {
  try {
    return window.sessionStorage.getItem(KEY_STORAGE);
  } catch {
    return null;
  }
}

/** Keeps `key` for this tab (`null` forgets it). */
export function storeApiKey(key: string | null): void {
  try {
    if (key === null) window.sessionStorage.removeItem(KEY_STORAGE);
    else window.sessionStorage.setItem(KEY_STORAGE, key);
  } catch {
    // Storage refused (a private window): the key lasts until the page is closed.
  }
}

/** A client of this page's origin. */
export function createPageClient(apiKey: string | null): TidemarkClient {
  return createTidemarkClient({ baseUrl: window.location.origin, ...(apiKey ? { apiKey } : {}) });
}
