/**
 * The shared setup of the browser tests: Debian's chromium through playwright-core, with the flags
 * it needs to run headless in a container, a page-error collector, and where screenshots go.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { DEFAULT_WEB_ROOT } from "../../src/server/index.js";

export const CHROMIUM = "/usr/bin/chromium";
export const hasChromium = existsSync(CHROMIUM);
const SCREENSHOTS = fileURLToPath(new URL("../../docs/screenshots/", import.meta.url));

/** docs/screenshots/<name> when it is missing or TIDEMARK_UPDATE_SCREENSHOTS=1 (so a test run does not churn git), else a temp file. */
export function screenshotPath(name: string, scratch: string): string {
  const documented = join(SCREENSHOTS, name);
  if (process.env.TIDEMARK_UPDATE_SCREENSHOTS === "1" || !existsSync(documented)) {
    mkdirSync(SCREENSHOTS, { recursive: true });
    return documented;
  }
  return join(scratch, name);
}

/** Throws when the web app was not built (the server would serve nothing at `/`). */
export function requireBuiltWebApp(): void {
  if (!existsSync(join(DEFAULT_WEB_ROOT, "index.html"))) {
    throw new Error(`${DEFAULT_WEB_ROOT} has no index.html: run \`npm run build:web\` first (npm test does).`);
  }
}

export interface TestBrowser {
  context: BrowserContext;
  /** A scratch directory that lives as long as the browser (its profile, and screenshots not kept). */
  scratch: string;
  close(): Promise<void>;
}

/** A desktop window, and a phone (an iPhone 12–15's CSS viewport). */
export const DESKTOP = { width: 1280, height: 800 } as const;
export const PHONE = { width: 390, height: 844 } as const;

/**
 * Launches headless chromium with a fresh profile, at a desktop size unless `phone` (a touch
 * screen of 390×844). With `microphoneWav`, the microphone is chromium's fake device playing that
 * WAV once from the start of each capture (`%noloop`; silence after it), and it is allowed.
 */
export async function launchBrowser(options: { phone?: boolean; microphoneWav?: string } = {}): Promise<TestBrowser> {
  const scratch = mkdtempSync(join(tmpdir(), "tidemark-chromium-"));
  const context = await chromium.launchPersistentContext(scratch, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      ...(options.microphoneWav
        ? ["--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream", `--use-file-for-fake-audio-capture=${options.microphoneWav}%noloop`]
        : []),
    ],
    viewport: options.phone ? PHONE : DESKTOP,
    ...(options.phone ? { isMobile: true, hasTouch: true, deviceScaleFactor: 2 } : {}),
    colorScheme: "light",
    reducedMotion: "reduce",
    ...(options.microphoneWav ? { permissions: ["microphone"] } : {}),
  });
  return {
    context,
    scratch,
    async close() {
      await context.close();
      rmSync(scratch, { recursive: true, force: true });
    },
  };
}

/**
 * Collects the page's script errors, and (unless `consoleErrors` is false) its console errors,
 * which include a resource the Content-Security-Policy blocked. A test asserts the list is empty.
 */
export function collectPageErrors(page: Page, errors: string[], { consoleErrors = true } = {}): void {
  page.on("pageerror", (error) => errors.push(`pageerror: ${error.message}`));
  if (!consoleErrors) return;
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(`console: ${message.text()}`);
  });
}
