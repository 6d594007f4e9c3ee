import { stableStringify } from "../core/hash.js";
import { abortableDelay } from "../core/abortable-delay.js";
import { createHash } from "node:crypto";
import { z } from "zod";
import type { DemoOutbox, OutboxReceipt } from "./demo-outbox.js";
import { defineTool, type ConsequentialTool, type ReadTool } from "./tool.js";

/**
 * The demo's two tools, one of each kind that matters for Stop (DESIGN §6): `search_catalog`
 * is idempotent and stops at once; `send_email` is consequential, needs approval, and commits
 * once per business key into the {@link DemoOutbox}.
 *
 * @example
 * const outbox = createDemoOutbox("tidemark.db");
 * const [searchCatalog, sendEmail] = createDemoTools({ outbox });
 */

/** The demo tools' names (the demo model asks for them by these names). */
export const DEMO_TOOL_NAMES = { searchCatalog: "search_catalog", sendEmail: "send_email" } as const;

/** Options for {@link createDemoTools}. */
export interface DemoToolsOptions {
  /** Where `send_email` sends. */
  outbox: DemoOutbox;
  /** How long a search takes (default 1500 ms, so a person can press Stop during it). */
  searchDelayMs?: number;
}

/** The search tool's input. */
export type CatalogQuery = { query: string };
/** One catalog item. */
export type CatalogItem = { sku: string; name: string; price: number };
/** The search tool's result. */
export type CatalogResult = { query: string; items: CatalogItem[] };

/** The email tool's input. */
export type EmailInput = { to: string; subject: string; body: string };
/** What the email tool shows for approval. */
export type EmailPreview = { to: string; subject: string; body_preview: string };

const catalogQuerySchema = z.object({ query: z.string().min(1).max(200) });

const emailInputSchema = z.object({
  // Email-ish on purpose: one "@", a dot in the domain, no spaces. The demo sends nowhere real.
  to: z
    .string()
    .max(320)
    .regex(/^[^\s@]+@[^\s@]+\.[^\s@]+$/, "expected an email address"),
  subject: z.string().min(1).max(200),
  body: z.string().max(50_000),
});

const BODY_PREVIEW_LENGTH = 120;
const EDITIONS = ["Basic", "Plus", "Pro"] as const;

/** Creates the demo tools: `[search_catalog, send_email]`. */
export function createDemoTools(
  options: DemoToolsOptions,
): [ReadTool<CatalogQuery, CatalogResult>, ConsequentialTool<EmailInput, OutboxReceipt, EmailPreview>] {
  const { outbox, searchDelayMs = 1500 } = options;

  const searchCatalog = defineTool<CatalogQuery, CatalogResult>({
    name: DEMO_TOOL_NAMES.searchCatalog,
    description: "Searches the demo product catalog and returns up to three matching items with their prices.",
    effect: "idempotent",
    honoursSignal: true,
    input: catalogQuerySchema,
    async execute(input, context) {
      await abortableDelay(searchDelayMs, context.signal);
      return { query: input.query, items: catalogItems(input.query) };
    },
  });

  const sendEmail = defineTool<EmailInput, OutboxReceipt, EmailPreview>({
    name: DEMO_TOOL_NAMES.sendEmail,
    description: "Sends an email from the demo outbox. Needs the user's approval; the same email on the same thread is sent once.",
    effect: "consequential",
    approval: "required",
    input: emailInputSchema,
    // The business action: this email on this thread, whichever run or attempt asks for it.
    idempotencyKey: (input, context) => `email:${context.threadId}:${stableHash(input)}`,
    async prepare(input, context) {
      context.signal.throwIfAborted();
      return { to: input.to, subject: input.subject, body_preview: input.body.slice(0, BODY_PREVIEW_LENGTH) };
    },
    commit: (input, context) => outbox.send({ ...input, idempotencyKey: context.idempotencyKey }, { signal: context.signal }),
    async status(idempotencyKey, context) {
      context.signal.throwIfAborted();
      const record = outbox.findByKey(idempotencyKey);
      return record
        ? { outcome: "committed", result: { message_id: record.message_id, sent_at: record.sent_at } }
        : { outcome: "not_committed" };
    },
  });

  return [searchCatalog, sendEmail];
}

/** A short hash of a JSON value that does not depend on key order. */
export function stableHash(value: unknown): string {
  return createHash("sha256").update(stableStringify(value)).digest("hex").slice(0, 16);
}

/** Three items derived from the query: the same query always finds the same items. */
function catalogItems(query: string): CatalogItem[] {
  const digest = createHash("sha256").update(query).digest();
  const label = query.replace(/\s+/g, " ").trim().slice(0, 40);
  return EDITIONS.map((edition, index) => {
    const cents = 999 + (digest.readUInt16BE(index * 2) % 9000) + index * 1000;
    return {
      sku: `SKU-${digest.toString("hex", index * 3, index * 3 + 3).toUpperCase()}`,
      name: `${label} ${edition}`,
      price: cents / 100,
    };
  });
}
