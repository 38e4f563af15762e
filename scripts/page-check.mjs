// Drive headless Chromium over the DevTools protocol against a running job's page (GET /):
// load it, construct a synopsis and a continuous query through its form, wait until the page
// lists the synopsis and charts answers for it, take a screenshot, and check what it shows.
// No package needed: Node's own fetch and WebSocket (node >= 22, or 20 with
// --experimental-websocket). scripts/page-check.sh starts the job and Chromium and runs this.
//
// usage: node page-check.mjs DEVTOOLS_PORT PAGE_URL SCREENSHOT.png

import { writeFileSync } from "node:fs";

const [devtoolsPort, pageUrl, shot] = process.argv.slice(2);
if (!devtoolsPort || !pageUrl || !shot) {
  console.error("usage: node page-check.mjs DEVTOOLS_PORT PAGE_URL SCREENSHOT.png");
  process.exit(2);
}
if (typeof WebSocket === "undefined") {
  console.error("page-check: this node has no WebSocket (node >= 22, or node 20 with --experimental-websocket)");
  process.exit(2);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const fail = (why) => { console.error("page-check: FAIL: " + why); process.exit(1); };

// The page target Chromium opened (it was started on about:blank).
async function pageTarget() {
  for (let i = 0; i < 100; i++) {
    try {
      const list = await (await fetch(`http://127.0.0.1:${devtoolsPort}/json/list`)).json();
      const page = list.find((t) => t.type === "page");
      if (page) return page.webSocketDebuggerUrl;
    } catch (e) { /* not up yet */ }
    await sleep(100);
  }
  fail("Chromium's DevTools endpoint did not come up");
}

const ws = new WebSocket(await pageTarget());
await new Promise((ok, err) => { ws.onopen = ok; ws.onerror = () => err(new Error("DevTools socket")); });
let next = 1;
const pending = new Map();
const loaded = [];
ws.onmessage = (m) => {
  const msg = JSON.parse(m.data);
  if (msg.id && pending.has(msg.id)) {
    const { ok, err } = pending.get(msg.id);
    pending.delete(msg.id);
    if (msg.error) err(new Error(JSON.stringify(msg.error))); else ok(msg.result);
  } else if (msg.method === "Page.loadEventFired") {
    loaded.forEach((f) => f());
  }
};
const send = (method, params = {}) => new Promise((ok, err) => {
  const id = next++;
  pending.set(id, { ok, err });
  ws.send(JSON.stringify({ id, method, params }));
});
// Evaluate an expression in the page; its value (JSON-able).
async function page(expression) {
  const r = await send("Runtime.evaluate", { expression, awaitPromise: true, returnByValue: true });
  if (r.exceptionDetails) throw new Error(r.exceptionDetails.text + " in " + expression);
  return r.result.value;
}
async function until(what, expression, seconds) {
  for (let i = 0; i < seconds * 10; i++) {
    const v = await page(expression);
    if (v) return v;
    await sleep(100);
  }
  fail(`${what}: not within ${seconds} s`);
}

await send("Page.enable");
await send("Runtime.enable");
await send("Emulation.setDeviceMetricsOverride", { width: 1400, height: 1000, deviceScaleFactor: 1, mobile: false });
const load = new Promise((ok) => loaded.push(ok));
await send("Page.navigate", { url: pageUrl });
await load;
console.log("page-check: loaded " + pageUrl);
await until("the synopses table", `document.querySelector("#synopses tbody td") !== null`, 10);

// Construct through the form: choose the HyperLogLog example, type it into the textarea as a
// user would (the example's text), and submit with the button.
const body = [
  { requestID: "page-check", streamID: "EURTRY", synopsisID: 2, dataSetKey: "Forex", param: ["HyperLogLog", "price", "NotQueryable", 0.02] },
  { requestID: "page-check-q", streamID: "EURTRY", synopsisID: 2, dataSetKey: "Forex", param: ["distinct", "price", "Queryable", "Continues"] },
].map((r) => JSON.stringify(r)).join("\n");
await page(`document.getElementById("request-body").focus(); document.getElementById("request-body").select(); true`);
await send("Input.insertText", { text: body });
const typed = await page(`document.getElementById("request-body").value`);
if (typed !== body) fail("the textarea holds " + JSON.stringify(typed));
await page(`document.getElementById("send").click(); true`);
const status = await until("the form's reply", `document.getElementById("reply").dataset.status || ""`, 30);
const reply = await page(`document.getElementById("reply").textContent`);
console.log("page-check: the form's reply: " + reply.replace(/\n/g, " | "));
if (status !== "200" || !reply.includes(`"accepted":"construct"`) || !reply.includes(`"accepted":"query"`)) {
  fail("the job did not accept the form's requests");
}

// A second body through the form: the Count-Min example, picked from the list and sent.
await page(`(() => { const pick = document.getElementById("example"); pick.value = "cm";
  pick.dispatchEvent(new Event("change")); document.getElementById("reply").dataset.status = "";
  document.getElementById("send").click(); return true; })()`);
await until("the reply to the Count-Min example", `document.getElementById("reply").dataset.status === "200"`, 30);
if (!(await page(`document.getElementById("reply").textContent`)).includes(`"kind":"CountMin","streamID":"EURTRY"`)) {
  fail("the Count-Min example was not accepted");
}

// The page lists it (the row's request id is the form's) and charts its answers.
const row = await until("a table row for the synopsis constructed through the form",
  `[...document.querySelectorAll("#synopses tbody tr")].map((tr) => tr.textContent)
     .find((t) => t.includes("HyperLogLog") && t.includes("Forex / EURTRY")) || ""`, 30);
console.log("page-check: table row: " + row);
const points = await until("two charts, each with at least 10 windows of the form's queries",
  `(() => { const n = [...document.querySelectorAll(".chart svg[data-points]")].map((s) => Number(s.dataset.points));
            return n.length === 2 && n.every((k) => k >= 10) ? n.join(" and ") : ""; })()`, 90);
console.log(`page-check: charts of ${points} windows`);
const rate = await until("an ingest rate", `(() => { const t = document.getElementById("rate").textContent;
  return t.endsWith("/s") ? t : ""; })()`, 10);
console.log("page-check: ingest rate " + rate + ", window lag " + await page(`document.getElementById("lag").textContent`));
const external = await page(`performance.getEntriesByType("resource").map((e) => e.name)
  .filter((u) => !u.startsWith(location.origin + "/"))`);
if (external.length) fail("the page loaded from elsewhere: " + external.join(", "));

await sleep(300); // let the last refresh paint
const { data } = await send("Page.captureScreenshot", { format: "png", captureBeyondViewport: true });
writeFileSync(shot, Buffer.from(data, "base64"));
console.log("page-check: screenshot " + shot);
ws.close();
process.exit(0);
