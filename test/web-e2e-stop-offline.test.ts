/**
 * A Stop pressed while the network is down, in chromium against a real server: the page says the
 * Stop is not confirmed yet (one alert, no "answer is saved"), keeps sending it, and once the
 * network is back shows the truth: cancelled (the actions after a Stop), or too late (the run
 * completed, and its saved answer is shown). The network is cut twice over: the browser goes
 * offline (no new connection) and a TCP proxy drops the open ones (the live stream).
 * Skipped only when chromium is missing.
 */
import type { Page } from "playwright-core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { DEFAULT_WEB_ROOT } from "../src/server/index.js";
import { CHROMIUM, collectPageErrors, hasChromium, launchBrowser, requireBuiltWebApp, screenshotPath, type TestBrowser } from "./support/browser.js";
import { createGatedModel, type GatedModel } from "./support/client-session.js";
import { startHarness, type Harness } from "./support/harness.js";
import { startTcpProxy, type TcpProxy } from "./support/tcp-proxy.js";

if (!hasChromium) console.warn(`web-e2e-stop-offline: skipped, ${CHROMIUM} is missing (apt-get install chromium to run it).`);

const WAIT = { timeout: 20_000 };
const ANSWER = "The tide turns because the moon pulls the sea, and the earth turns beneath it.";

describe.skipIf(!hasChromium)("the web app: a Stop while the network is down", () => {
  let h: Harness;
  let gated: GatedModel;
  let browser: TestBrowser;
  let proxy: TcpProxy;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    requireBuiltWebApp();
    // The answer waits halfway until the test releases it: the test decides whether the Stop is in time.
    gated = createGatedModel();
    h = await startHarness({ webRoot: DEFAULT_WEB_ROOT, model: gated.model });
    proxy = await startTcpProxy(h.url);
    browser = await launchBrowser();
  }, 60_000);

  beforeEach(() => {
    pageErrors.length = 0;
  });

  afterAll(async () => {
    await browser?.close();
    await proxy?.close();
    if (h) {
      await h.expectNoViolations();
      await h.close();
    }
  });

  const runOf = async (threadId: string) => {
    const thread = (await h.api(`/v1/threads/${threadId}`)).body;
    return thread.active_run_id as string | null;
  };
  const runStatus = async (runId: string) => (await h.api(`/v1/runs/${runId}`)).body.status as string;

  /** A page (through the proxy) with a run whose answer has started streaming; returns its thread and run. */
  async function streamingPage(): Promise<{ page: Page; threadId: string; runId: string; failedCancels: () => number }> {
    const page = await browser.context.newPage();
    // Requests fail on purpose here: the browser logs them as console errors.
    collectPageErrors(page, pageErrors, { consoleErrors: false });
    let failedCancels = 0;
    page.on("requestfailed", (request) => {
      if (request.method() === "POST" && new URL(request.url()).pathname.endsWith("/cancel")) failedCancels++;
    });
    await page.goto(`${proxy.url}/`);
    const composer = page.getByRole("textbox", { name: "Message" });
    await composer.fill("Why do tides turn?");
    await composer.press("Enter");
    await page.waitForURL(/\/threads\/thr_[0-9a-z]+$/, WAIT);
    const threadId = new URL(page.url()).pathname.split("/").at(-1)!;
    await page.locator('[data-draft-status="streaming"]').getByText("The tide turns because the moon").waitFor(WAIT);
    const runId = (await runOf(threadId))!;
    return { page, threadId, runId, failedCancels: () => failedCancels };
  }

  async function cutNetwork(): Promise<void> {
    await browser.context.setOffline(true);
    proxy.dropConnections();
  }

  /** Presses Stop with the network down and checks what the page says: not confirmed, once. */
  async function stopWhileOffline(page: Page, runId: string, failedCancels: () => number): Promise<void> {
    await cutNetwork();
    await page.getByRole("button", { name: "Stop" }).click();
    const alert = page.getByRole("alert");
    await alert.getByText("Stop not confirmed yet.").waitFor(WAIT);
    // It keeps trying (a cancel is idempotent): at least two attempts failed.
    await expect.poll(failedCancels, WAIT).toBeGreaterThanOrEqual(2);
    expect(await page.getByRole("alert").count()).toBe(1);
    expect(await page.locator('[data-draft-status="stopped"]').textContent()).toContain("Stop not confirmed yet");
    expect(await page.getByRole("heading", { name: "Stopped" }).count()).toBe(0);
    expect(await page.getByRole("button", { name: "Stopping…" }).isDisabled()).toBe(true);
    const status = await page.locator(".visually-hidden[role=status]").textContent();
    expect(status).toBe("Stop not confirmed yet; trying again.");
    // The server never heard of it: the run goes on.
    expect(await runStatus(runId)).toBe("running");
  }

  it("says the Stop is not confirmed while offline, and shows it cancelled once the network is back", async () => {
    const { page, threadId, runId, failedCancels } = await streamingPage();
    await stopWhileOffline(page, runId, failedCancels);
    await page.screenshot({ path: screenshotPath("web-stop-unconfirmed.png", browser.scratch) });

    await browser.context.setOffline(false);
    const actions = page.getByRole("group", { name: "What to do after the Stop" });
    await actions.waitFor(WAIT);
    expect(await runStatus(runId)).toBe("cancelled");
    expect(await actions.getByRole("button", { name: "Continue from the saved point" }).isEnabled()).toBe(true);
    expect(await page.getByRole("alert").count()).toBe(0);
    expect(await page.locator('[data-draft-status="stopped"]').textContent()).toContain("Stopped · not saved, not part of the history");
    const history = (await h.api(`/v1/threads/${threadId}/history`)).body;
    expect(history.messages.map((message: any) => message.role)).toEqual(["user"]);
    expect(pageErrors).toEqual([]);
    await page.close();
  }, 60_000);

  it("a Stop that reaches the server too late says so, and shows the saved answer", async () => {
    const { page, threadId, runId, failedCancels } = await streamingPage();
    await stopWhileOffline(page, runId, failedCancels);
    // Meanwhile, on the server, the answer completes and is saved.
    gated.release();
    await expect.poll(() => runStatus(runId), WAIT).toBe("completed");

    await browser.context.setOffline(false);
    await page.getByText("Too late to stop: the answer had already been completed and saved.").waitFor(WAIT);
    const saved = (await h.api(`/v1/threads/${threadId}/history`)).body.messages;
    expect(saved.map((message: any) => message.role)).toEqual(["user", "assistant"]);
    expect(saved[1].content).toBe(ANSWER);
    await expect.poll(() => page.locator(".message.assistant:not(.draft) .message-text").textContent(), WAIT).toBe(ANSWER);
    expect(await page.locator("[data-draft-status]").count()).toBe(0);
    expect(await page.getByRole("heading", { name: "Stopped" }).count()).toBe(0);
    expect(await page.getByRole("alert").count()).toBe(0);
    expect(await page.locator(".visually-hidden[role=status]").textContent()).toBe("Too late to stop: the answer was completed and saved.");
    expect(pageErrors).toEqual([]);
    await page.close();
  }, 60_000);
});
