// The API reference page in a real browser: Playwright (playwright-core)
// drives Debian's chromium. Run by TestDocs_BrowserRendersEveryOperationAndTriesACall
// (test/docs_test.go) from a directory where node_modules links to
// PLAYWRIGHT_DIR/node_modules; it reads its inputs from the environment:
//
//   BASE_URL      the app, http://127.0.0.1:PORT
//   TOKEN         a bearer token to paste into the authorize dialog
//   TRY_METHOD, TRY_PATH   the operation to run with "try it" (get, /cloud-blob/metadata/{id})
//   TRY_PARAMS    JSON object of its path parameters ({"id": "7"})
//   CHROMIUM_BIN  the browser
//   SCREENSHOT_DIR  where to save screenshots of the page ("" for none):
//                 docs-top.png (the top, after loading) and docs-try.png (the
//                 operation run with "try it", its answer shown)
//
// It fails (exit 1, reasons on stderr) on any console error, uncaught page
// error, failed request or request to another origin; when an operation of
// /openapi.json is not on the page; or when "try it" does not show 200
// after sending the pasted token. The last stdout line is a JSON summary.
import { chromium } from "playwright-core";

const env = (name) => {
  const v = process.env[name];
  if (v === undefined) throw new Error(`${name} not set`);
  return v;
};
const base = new URL(env("BASE_URL"));
const token = env("TOKEN");
const tryMethod = env("TRY_METHOD").toLowerCase();
const tryPath = env("TRY_PATH");
const tryParams = JSON.parse(env("TRY_PARAMS"));
const shots = process.env.SCREENSHOT_DIR || "";

const problems = [];
const methods = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

const browser = await chromium.launch({
  executablePath: env("CHROMIUM_BIN"),
  headless: true,
  // Playwright starts every browser on a new, empty profile directory.
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
  timeout: 60_000,
});
let exitCode = 0;
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  // Nothing may leave the app's origin: such a request is refused and
  // counted (data: URLs never reach here).
  await context.route("**/*", (route) => {
    const url = new URL(route.request().url());
    if (url.origin !== base.origin) {
      problems.push(`request to another origin: ${route.request().method()} ${url.href}`);
      return route.abort("blockedbyclient");
    }
    return route.continue();
  });
  const page = await context.newPage();
  page.setDefaultTimeout(30_000);
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "assert") problems.push(`console ${m.type()}: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("requestfailed", (r) => {
    if (new URL(r.url()).origin === base.origin) problems.push(`request failed: ${r.method()} ${r.url()}: ${r.failure()?.errorText}`);
  });
  const apiCalls = [];
  page.on("request", (r) => {
    const u = new URL(r.url());
    if (u.origin === base.origin && !u.pathname.startsWith("/docs") && u.pathname !== "/openapi.json") {
      apiCalls.push({ method: r.method(), path: u.pathname, authorization: r.headers()["authorization"] ?? "" });
    }
  });

  const docResp = await context.request.get(new URL("/openapi.json", base).href);
  if (!docResp.ok()) throw new Error(`GET /openapi.json: ${docResp.status()}`);
  const doc = await docResp.json();
  const want = [];
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const m of methods) if (item[m]) want.push(`${m.toUpperCase()} ${path}`);
  }
  if (want.length === 0) throw new Error("/openapi.json has no operations");

  const resp = await page.goto(new URL("/docs", base).href, { waitUntil: "load" });
  if (resp.status() !== 200) throw new Error(`GET /docs: ${resp.status()}`);
  await page.locator(".opblock").first().waitFor();
  await page.waitForFunction((n) => document.querySelectorAll(".opblock").length >= n, want.length);
  if (shots) await page.screenshot({ path: `${shots}/docs-top.png` });

  // Every operation of the document is listed.
  const shown = await page.locator(".opblock").evaluateAll((els) =>
    els.map((el) => {
      const m = el.querySelector(".opblock-summary-method")?.textContent?.trim() ?? "";
      const p = el.querySelector("[data-path]")?.getAttribute("data-path") ?? "";
      return `${m.toUpperCase()} ${p}`;
    }),
  );
  const shownSet = new Set(shown);
  const missing = want.filter((op) => !shownSet.has(op));
  if (missing.length) problems.push(`operations of /openapi.json not on the page: ${missing.join(", ")}`);

  // Paste the token into the authorize dialog.
  await page.locator(".auth-wrapper button.authorize").click();
  const dialog = page.locator(".dialog-ux .modal-ux");
  await dialog.waitFor();
  await dialog.locator("#auth-bearer-value").first().fill(token);
  await dialog.locator(".auth-btn-wrapper button.authorize").first().click();
  await dialog.locator("h6", { hasText: "Authorized" }).first().waitFor();
  await dialog.locator("button.btn-done").first().click();
  await dialog.waitFor({ state: "detached" });

  // "Try it out" on the chosen operation.
  const op = page.locator(`.opblock-${tryMethod}`).filter({
    has: page.locator(`.opblock-summary [data-path="${tryPath}"]`),
  }).first();
  await op.locator(".opblock-summary").first().click();
  await op.locator("button.try-out__btn").click();
  for (const [name, value] of Object.entries(tryParams)) {
    await op.locator(`tr[data-param-name="${name}"] input`).fill(String(value));
  }
  await op.locator("button.execute").click();
  const status = op.locator(".live-responses-table .response .response-col_status").first();
  await status.waitFor();
  const shownStatus = (await status.textContent()).trim();
  if (shownStatus !== "200") {
    const body = await op.locator(".live-responses-table .response-col_description").first().textContent();
    problems.push(`try it on ${tryMethod.toUpperCase()} ${tryPath} shows ${shownStatus}: ${body.slice(0, 300)}`);
  }
  const sent = apiCalls.filter((c) => c.method === tryMethod.toUpperCase());
  if (sent.length !== 1 || sent[0].authorization !== `Bearer ${token}`) {
    problems.push(`try it sent ${JSON.stringify(sent.map((c) => ({ ...c, authorization: c.authorization ? c.authorization.slice(0, 12) + "…" : "" })))}, want one call with the pasted token`);
  }
  if (shots) {
    await op.evaluate((el) => el.scrollIntoView({ block: "start" }));
    await page.screenshot({ path: `${shots}/docs-try.png` });
  }
  console.log(JSON.stringify({ operations: want.length, shown: shown.length, tried: `${tryMethod.toUpperCase()} ${tryPath}`, status: shownStatus, problems: problems.length }));
} catch (e) {
  problems.push(`${e.stack ?? e}`);
} finally {
  await browser.close();
}
if (problems.length) {
  for (const p of problems) console.error(p);
  exitCode = 1;
}
process.exit(exitCode);
