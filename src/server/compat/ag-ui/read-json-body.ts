import type { Context } from "hono";
import { TidemarkError } from "../../../core/index.js";

const JSON_MEDIA_TYPE = /^application\/([\w.-]+\+)?json$/i;

/** The request's JSON body: 415 for another media type, 400 `invalid_json` for a body that does not parse. */
export async function readJsonBody(c: Context): Promise<unknown> {
  const mediaType = (c.req.header("content-type") ?? "").split(";")[0]!.trim();
  if (!JSON_MEDIA_TYPE.test(mediaType)) throw new TidemarkError("unsupported_media_type", "Send the body as application/json.");
  const text = await c.req.text();
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new TidemarkError("invalid_json", "The request body is not valid JSON.");
  }
}
