/**
 * The web app in a real browser (Debian's chromium through playwright-core) against a real
 * server: create a thread, send, watch the draft stream, Stop, see the honest actions, and find
 * no partial text in the history after a reload. Skipped only when /usr/bin/chromium is missing.
 */
import { type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_WEB_ROOT } from "../src/server/index.js";
import type { ChatModel } from "../src/runtime/index.js";
import { CHROMIUM, collectPageErrors, hasChromium, launchBrowser, requireBuiltWebApp, screenshotPath, type TestBrowser } from "./support/browser.js";
import { createGatedModel } from "./support/client-session.js";
import { startHarness, type Harness } from "./support/harness.js";

if (!hasChromium) console.warn(`web-e2e: skipped, ${CHROMIUM} is missing (apt-get install chromium to run it).`);

/** What the answer says before it waits at the gate: the whole draft there is to see before the Stop. */
const BEFORE_GATE = (
  "Honest cancellation means that the answer you watched stops where you stopped it, and that nothing of it " +
  "is saved as if it had been finished, so the history only ever holds what was really completed"
).split(" ");

/**
 * The answer streams its first words, then waits at a gate the test never opens: a Stop always
 * lands mid-answer, and once the Stop has aborted the waiting answer no further word can exist,
 * so the draft's text is checked exactly instead of watched for a while.
 */
function createStoppableModel() {
  const gated = createGatedModel({ before: BEFORE_GATE, after: ["never", "streamed"] });
  let onAbort!: () => void;
  const aborted = new Promise<void>((resolve) => (onAbort = resolve));
  const model: ChatModel = {
    id: "gated-demo",
    stream(request, options) {
      options.signal.addEventListener("abort", () => onAbort(), { once: true });
      return gated.model.stream(request, options);
    },
  };
  return { model, aborted };
}

describe.skipIf(!hasChromium)("the web app in chromium: send, watch the draft, Stop, reload", () => {
  let h: Harness;
  const stoppable = createStoppableModel();
  let browser: TestBrowser;
  let page: Page;
  let userDataDir: string;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    requireBuiltWebApp();
    h = await startHarness({ webRoot: DEFAULT_WEB_ROOT, model: stoppable.model });
    browser = await launchBrowser();
    userDataDir = browser.scratch;
    page = browser.context.pages()[0] ?? (await browser.context.newPage());
    // A script error or a blocked resource (the Content-Security-Policy) must fail the test.
    collectPageErrors(page, pageErrors);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    if (h) {
      await h.expectNoViolations();
      await h.close();
    }
  });

  it("streams a draft apart from history, stops it honestly, and the history holds no partial text after a reload", async () => {
    await page.goto(`${h.url}/`);
    await page.getByRole("button", { name: "New thread" }).click();
    const composer = page.getByRole("textbox", { name: "Message" });
    await expect.poll(() => composer.evaluate((element) => element === document.activeElement)).toBe(true);
    await composer.fill("Explain honest cancellation");
    await composer.press("Enter");

    // The first message creates the thread; its address becomes the page's.
    await page.waitForURL(/\/threads\/thr_[0-9a-z]+$/);
    const threadId = new URL(page.url()).pathname.split("/").at(-1)!;
    await expect.poll(() => page.locator(".message.user").textContent()).toContain("Explain honest cancellation");

    // The draft streams, visibly marked as not saved yet.
    const draft = page.locator('[data-draft-status="streaming"]');
    await draft.waitFor();
    await expect.poll(() => draft.textContent(), { timeout: 10_000 }).toMatch(/Draft · not saved yet[\s\S]{80,}/);
    // Every word before the gate is on the page: the answer now waits there.
    await expect.poll(() => draft.locator(".message-text").textContent(), { timeout: 10_000 }).toContain(BEFORE_GATE.join(" "));
    expect(await draft.getByText("Draft · not saved yet").isVisible()).toBe(true);
    await page.screenshot({ path: screenshotPath("web-draft.png", userDataDir) });

    // The sidebar lists the new thread.
    await expect.poll(() => page.getByRole("navigation", { name: "Your threads" }).getByRole("button").count()).toBeGreaterThanOrEqual(1);

    await page.getByRole("button", { name: "Stop" }).click();

    // The four honest actions, plus "Save what I saw".
    const actions = page.getByRole("group", { name: "What to do after the Stop" });
    await actions.waitFor();
    for (const name of ["Continue from the saved point", "Change the request and continue", "Start a new branch", "Delete the draft", "Save what I saw"]) {
      expect(await actions.getByRole("button", { name }).isEnabled(), name).toBe(true);
    }
    // Focus moves to the outcome, so a keyboard user hears it and tabs straight to the actions.
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Stopped");
    await page.keyboard.press("Tab");
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Continue from the saved point");

    // The stopped draft stays visible, marked as not saved; it no longer grows.
    const stopped = page.locator('[data-draft-status="stopped"]');
    await stopped.waitFor();
    expect(await stopped.textContent()).toContain("not saved, not part of the history");
    const partial = (await stopped.locator(".message-text").textContent())!.trim();
    expect(partial.length).toBeGreaterThan(40);
    // The Stop aborted the answer while it waited at its gate: no word after the gate exists, and the
    // draft holds exactly the words before it.
    await stoppable.aborted;
    expect(partial).toBe(BEFORE_GATE.join(" "));
    expect((await stopped.locator(".message-text").textContent())!.trim()).toBe(partial);

    // The Stop is said once (issue 11): by the draft's own label, with no "interrupted" marker beside it, no
    // second "not saved" in the panel, and no thread version in the header (versions show where they matter).
    expect(await page.getByText("Previous response was interrupted").count()).toBe(0);
    expect(await page.locator(".panel.stopped").textContent()).not.toContain("not saved");
    expect(await page.locator(".conversation-header").textContent()).not.toMatch(/version/i);

    await page.screenshot({ path: screenshotPath("web-stop.png", userDataDir) });

    // The server agrees: the run is cancelled, its history is the user's message alone.
    const history = await h.api(`/v1/threads/${threadId}/history`);
    expect(history.body.messages.map((message: any) => message.role)).toEqual(["user"]);
    expect(history.body.markers.map((marker: any) => marker.type)).toEqual(["interrupted_response"]);
    const tail = partial.slice(-40);
    expect(JSON.stringify(history.body)).not.toContain(tail);

    // After a reload the page shows what the server kept: the message and the interruption, no draft.
    await page.reload();
    await page.getByText("Previous response was interrupted").waitFor();
    expect(await page.getByText("Previous response was interrupted").count()).toBe(1);
    expect(await page.locator(".message.user").count()).toBe(1);
    expect(await page.locator("[data-draft-status]").count()).toBe(0);
    expect(await page.locator(".conversation-body").textContent()).not.toContain(tail);
    // The saved point is still the head, so Continue is still offered.
    expect(await page.getByRole("button", { name: "Continue from the saved point" }).isEnabled()).toBe(true);

    // Every control has a name a screen reader can say.
    const unnamed = await page.evaluate(() =>
      [...document.querySelectorAll("button, textarea, input, a[href]")]
        .filter((element) => {
          const labelled = element.getAttribute("aria-label") || (element.id && document.querySelector(`label[for="${element.id}"]`));
          return !labelled && !(element.textContent ?? "").trim();
        })
        .map((element) => element.outerHTML.slice(0, 120)),
    );
    expect(unnamed).toEqual([]);
    expect(pageErrors).toEqual([]);
  }, 60_000);
});
