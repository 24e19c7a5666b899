// The Node peers of the benchmark suite: Puppeteer (puppeteer-core, over its pipe or a websocket) and
// chrome-remote-interface (a websocket), each driving a Chromium of its own the way its docs say.
//
// It speaks the suite's scenario protocol (benchmarks/clients/node_peers.py): one JSON object per line
// on stdin, one reply per line on stdout. Timing is process.hrtime.bigint() inside this process, CPU is
// process.cpuUsage() (this process, every thread), so the pipe to Python is never inside a measurement.
//
//   {"op": "start", "lib": "puppeteer"|"cri", "transport": "pipe"|"websocket", "chromium": path, "args": [...]}
//   {"op": "setup", "scenario": {...}, "url": "http://...", "small_url": "http://..."}   pages and sessions
//   {"op": "run", "scenario": {...}, "size": N}   -> {"latencies_us", "ops", "elapsed_ns", "cpu_ns", "events"}
//   {"op": "teardown"} / {"op": "stop"}
// Every reply is {"ok": true, ...} or {"error": "what happened"}.

import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

const BATCH = 64;
const EVALUATE = "1+1";
const clock = () => process.hrtime.bigint();
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const cpuNs = (since) => {
  const used = process.cpuUsage(since);
  return (used.user + used.system) * 1000;
};

// The websocket browsers this process started and has not stopped. They run detached (a process group of
// their own, so that stopping one stops its renderers), so nothing stops them when this process dies: the
// "exit" handler below does, whatever the way out (a signal, a broken stdout, an uncaught error). Killed
// outright (SIGKILL), this process leaves each its lifeline (see launchWebSocket).
const running = new Set();

function kill(launched) {
  try {
    process.kill(-launched.child.pid, "SIGKILL");
  } catch {}
  running.delete(launched);
}

function removeProfile(launched) {
  try {
    rmSync(launched.profile, { recursive: true, force: true });
  } catch {} // a dying browser still writing: the harness removes this process's TMPDIR
}

function killNow(launched) {
  kill(launched);
  removeProfile(launched);
}

process.on("exit", () => {
  const all = [...running];
  for (const launched of all) kill(launched); // all killed first: a removal that fails stops nothing
  for (const launched of all) removeProfile(launched);
});
// Signals end the process through process.exit(), so that the "exit" handlers run (Puppeteer's own
// handler stops the browsers it launched).
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(signal, () => process.exit(1));
process.stdout.on("error", () => process.exit(1)); // the harness is gone: EPIPE

// A Chromium listening on port 0 of 127.0.0.1 with a fresh profile: {child, profile, wsUrl}.
async function launchWebSocket(chromium, args) {
  const profile = mkdtempSync(join(tmpdir(), "cdp-bench-node-"));
  // --remote-debugging-pipe is the lifeline, as for the suite's own websocket browsers: never used, its
  // fds 3 and 4 close when this process dies, however it dies, and Chromium exits then.
  const child = spawn(
    chromium,
    [...args, "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "--remote-debugging-pipe",
      `--user-data-dir=${profile}`, "about:blank"],
    { detached: true, stdio: ["ignore", "ignore", "ignore", "pipe", "pipe"] },
  );
  const launched = { child, profile, wsUrl: null };
  running.add(launched);
  const deadline = Date.now() + 30_000;
  let lines = [];
  while (lines.length < 2) {
    if (Date.now() > deadline) {
      killNow(launched);
      throw new Error("Chromium did not open its debugging port");
    }
    try {
      lines = readFileSync(join(profile, "DevToolsActivePort"), "utf8").split("\n").filter(Boolean);
    } catch {
      await sleep(50);
    }
  }
  launched.wsUrl = `ws://127.0.0.1:${lines[0]}${lines[1]}`;
  return launched;
}

async function stopWebSocket(launched) {
  try {
    process.kill(-launched.child.pid, "SIGTERM");
  } catch {}
  await sleep(200);
  killNow(launched);
}

function readyExpression(url) {
  return `location.href === ${JSON.stringify(url)} && document.readyState === 'complete'`;
}

// -- Puppeteer: browser.target().createCDPSession() and page.createCDPSession(), raw CDP -------------

class PuppeteerDriver {
  launchOptions(msg) {
    return {
      executablePath: msg.chromium,
      pipe: msg.transport === "pipe",
      // The suite's flags exactly (its own headless flag included), so only the client differs.
      ignoreDefaultArgs: true,
      args: [...msg.args, "about:blank"],
      protocolTimeout: 300_000,
    };
  }
  async start(msg) {
    this.puppeteer = (await import("puppeteer-core")).default;
    this.msg = msg;
    this.browser = await this.puppeteer.launch(this.launchOptions(msg));
    this.browserSession = await this.browser.target().createCDPSession();
    const version = await this.browserSession.send("Browser.getVersion");
    return version.product;
  }
  async browserCall() {
    return this.browserSession.send("Browser.getVersion");
  }
  async browserSend(method, params) {
    return this.browserSession.send(method, params);
  }
  // launch({pipe: true}) for the pipe; for the websocket, connect({browserWSEndpoint}) to a browser
  // launched untimed, like every websocket client's cold start. -> [wall ns, CPU ns] of the timed part.
  async coldStart() {
    const launched = this.msg.transport === "pipe" ? null : await launchWebSocket(this.msg.chromium, this.msg.args);
    let browser = null;
    try {
      const cpu0 = process.cpuUsage();
      const t0 = clock();
      browser = launched
        ? await this.puppeteer.connect({ browserWSEndpoint: launched.wsUrl, protocolTimeout: 300_000 })
        : await this.puppeteer.launch(this.launchOptions(this.msg));
      const session = await browser.target().createCDPSession();
      await session.send("Browser.getVersion");
      return [Number(clock() - t0), cpuNs(cpu0)];
    } finally {
      if (browser) await (launched ? browser.disconnect() : browser.close());
      if (launched) await stopWebSocket(launched);
    }
  }
  async newPage(url) {
    const page = await this.browser.newPage();
    if (url !== "about:blank") await page.goto(url, { waitUntil: "load" });
    const session = await page.createCDPSession();
    return { page, session };
  }
  async closePage(p) {
    await p.session.detach();
    await p.page.close();
  }
  async send(p, method, params) {
    return p.session.send(method, params);
  }
  onEvent(p, method, handler) {
    p.session.on(method, handler);
    return () => p.session.off(method, handler);
  }
  async stop() {
    if (this.browser) await this.browser.close();
  }
}

// -- chrome-remote-interface: CDP({target}) on the browser endpoint, flattened sessions ---------------

class CriDriver {
  async start(msg) {
    if (msg.transport !== "websocket") throw new Error("chrome-remote-interface speaks only websocket");
    this.CDP = (await import("chrome-remote-interface")).default;
    this.msg = msg;
    this.launched = await launchWebSocket(msg.chromium, msg.args);
    this.client = await this.CDP({ target: this.launched.wsUrl });
    const version = await this.client.send("Browser.getVersion");
    return version.product;
  }
  async browserCall() {
    return this.client.send("Browser.getVersion");
  }
  async browserSend(method, params) {
    return this.client.send(method, params);
  }
  async coldStart() {
    const launched = await launchWebSocket(this.msg.chromium, this.msg.args);
    let client = null;
    try {
      const cpu0 = process.cpuUsage();
      const t0 = clock();
      client = await this.CDP({ target: launched.wsUrl });
      await client.send("Browser.getVersion");
      return [Number(clock() - t0), cpuNs(cpu0)];
    } finally {
      if (client) await client.close();
      await stopWebSocket(launched);
    }
  }
  async newPage(url) {
    const { targetId } = await this.client.send("Target.createTarget", { url });
    const { sessionId } = await this.client.send("Target.attachToTarget", { targetId, flatten: true });
    const deadline = Date.now() + 30_000;
    for (;;) {
      const res = await this.client.send(
        "Runtime.evaluate", { expression: readyExpression(url), returnByValue: true }, sessionId);
      if (res.result.value === true) return { targetId, sessionId };
      if (Date.now() > deadline) throw new Error(`page did not load: ${url}`);
      await sleep(20);
    }
  }
  async closePage(p) {
    await this.client.send("Target.closeTarget", { targetId: p.targetId });
  }
  async send(p, method, params) {
    return this.client.send(method, params, p.sessionId);
  }
  onEvent(p, method, handler) {
    const listener = (params, sessionId) => {
      if (sessionId === p.sessionId) handler(params);
    };
    this.client.on(method, listener);
    return () => this.client.removeListener(method, listener);
  }
  async stop() {
    if (this.client) await this.client.close();
    if (this.launched) await stopWebSocket(this.launched);
  }
}

// -- the scenarios, written once over the drivers -----------------------------------------------------

let driver = null;
let pages = [];
let smallUrl = null;

async function setup(scenario, url) {
  const target = scenario.big_page ? url : "about:blank";
  pages = await Promise.all(Array.from({ length: scenario.pages }, () => driver.newPage(target)));
  const enable = { events: "Runtime.enable", flood: "Runtime.enable", navigate: "Page.enable" }[scenario.kind];
  if (enable) for (const p of pages) await driver.send(p, enable, {});
}

async function sequential(size, lat) {
  for (let i = 0; i < size; i++) {
    const t0 = clock();
    await driver.send(pages[0], "Runtime.evaluate", { expression: EVALUATE });
    lat.push(Number(clock() - t0) / 1000);
  }
}

async function run(scenario, size, smallUrl) {
  const lat = [];
  const cpu0 = process.cpuUsage();
  const begin = clock();
  let ops = size;
  let nbytes = null;
  let events = null;
  let cpu = null; // set by the scenarios with untimed work: CPU over the timed part only
  let elapsed = null;
  const kind = scenario.kind;
  if (kind === "browser_roundtrip" || kind === "page_roundtrip") {
    for (let i = 0; i < size; i++) {
      const t0 = clock();
      if (kind === "browser_roundtrip") await driver.browserCall();
      else await driver.send(pages[0], "Runtime.evaluate", { expression: EVALUATE });
      lat.push(Number(clock() - t0) / 1000);
    }
  } else if (kind === "batch") {
    const per = BATCH / pages.length;
    for (let i = 0; i < size; i++) {
      const t0 = clock();
      const calls = [];
      for (const p of pages) for (let j = 0; j < per; j++) calls.push(driver.send(p, "Runtime.evaluate", { expression: EVALUATE }));
      await Promise.all(calls);
      lat.push(Number(clock() - t0) / 1000);
    }
    ops = size * BATCH;
  } else if (kind === "decode") {
    for (let i = 0; i < size; i++) {
      const t0 = clock();
      await driver.send(pages[0], scenario.method, scenario.params);
      lat.push(Number(clock() - t0) / 1000);
    }
  } else if (kind === "events") {
    let seen = 0;
    let done;
    const finished = new Promise((resolve) => (done = resolve));
    const off = driver.onEvent(pages[0], "Runtime.consoleAPICalled", () => {
      seen += 1;
      if (seen === size) done(clock());
    });
    const t0 = clock();
    const reply = driver.send(pages[0], "Runtime.evaluate", {
      expression: `for (let i = 0; i < ${size}; i++) console.log(i); ${size}`,
    });
    const end = await finished;
    await reply;
    off();
    lat.push(Number(end - t0) / 1000);
  } else if (kind === "fanout") {
    await Promise.all(pages.map(async (p) => {
      for (let i = 0; i < size; i++) {
        const t0 = clock();
        await driver.send(p, "Runtime.evaluate", { expression: EVALUATE });
        lat.push(Number(clock() - t0) / 1000);
      }
    }));
    ops = size * pages.length;
  } else if (kind === "coldstart") {
    cpu = 0;
    for (let i = 0; i < size; i++) {
      const [wall, used] = await driver.coldStart();
      lat.push(wall / 1000);
      cpu += used;
    }
    elapsed = lat.reduce((a, b) => a + b, 0) * 1000;
  } else if (kind === "navigate") {
    for (let i = 0; i < size; i++) {
      const t0 = clock();
      let off;
      const loaded = new Promise((resolve) => (off = driver.onEvent(pages[0], "Page.loadEventFired", resolve)));
      const result = await driver.send(pages[0], "Page.navigate", { url: smallUrl });
      if (result.errorText) throw new Error(`Page.navigate: ${result.errorText}`);
      await loaded;
      off();
      lat.push(Number(clock() - t0) / 1000);
    }
  } else if (kind === "attach") {
    const targets = [];
    const c0 = process.cpuUsage();
    const t0 = clock();
    await Promise.all(Array.from({ length: size }, async () => {
      const { targetId } = await driver.browserSend("Target.createTarget", { url: "about:blank" });
      targets.push(targetId);
      await driver.browserSend("Target.attachToTarget", { targetId, flatten: true });
    }));
    elapsed = Number(clock() - t0);
    cpu = cpuNs(c0);
    lat.push(elapsed / 1000);
    await Promise.all(targets.map((targetId) => driver.browserSend("Target.closeTarget", { targetId })));
  } else if (kind === "flood") {
    let seen = 0;
    let first;
    const started = new Promise((resolve) => (first = resolve));
    const off = driver.onEvent(pages[0], "Runtime.consoleAPICalled", () => {
      seen += 1;
      if (seen === 1) first();
    });
    try {
      await driver.send(pages[0], "Runtime.evaluate", { expression: scenario.flood_start });
      await started;
      const before = seen;
      const c0 = process.cpuUsage();
      const t0 = clock();
      await sequential(size, lat);
      elapsed = Number(clock() - t0);
      cpu = cpuNs(c0);
      events = seen - before;
      await driver.send(pages[0], "Runtime.evaluate", { expression: scenario.flood_stop });
    } finally {
      off();
    }
  } else {
    throw new Error(`not runnable: ${scenario.name}`);
  }
  if (elapsed === null) elapsed = Number(clock() - begin);
  if (cpu === null) cpu = cpuNs(cpu0);
  return { latencies_us: lat, ops, elapsed_ns: Math.round(elapsed), cpu_ns: cpu, nbytes, events };
}

async function handle(msg) {
  switch (msg.op) {
    case "start":
      driver = msg.lib === "cri" ? new CriDriver() : new PuppeteerDriver();
      return { product: await driver.start(msg) };
    case "setup":
      await setup(msg.scenario, msg.url);
      smallUrl = msg.small_url;
      return {};
    case "run":
      return run(msg.scenario, msg.size, smallUrl);
    case "teardown":
      for (const p of pages) await driver.closePage(p);
      pages = [];
      return {};
    case "stop":
      if (driver) await driver.stop();
      driver = null;
      return { max_rss_kib: process.resourceUsage().maxRSS };
    default:
      throw new Error(`unknown op ${msg.op}`);
  }
}

const lines = createInterface({ input: process.stdin });
let busy = false;
// stdin closed (the harness died or gave up on a request): in the middle of a request, which may never
// end, exit now; else stop the driver below, within 10 s.
lines.on("close", () => {
  if (busy) process.exit(1);
  setTimeout(() => process.exit(1), 10_000).unref();
});
for await (const line of lines) {
  if (!line.trim()) continue;
  const msg = JSON.parse(line);
  let reply;
  busy = true;
  try {
    reply = { ok: true, ...(await handle(msg)) };
  } catch (err) {
    reply = { error: `${err && err.name}: ${err && err.message}` };
  } finally {
    busy = false;
  }
  process.stdout.write(JSON.stringify(reply) + "\n");
  if (msg.op === "stop") break;
}
// stdin closed without a "stop" (the harness was interrupted or died): its browser is detached and
// outlives this process unless it is stopped here.
if (driver) await driver.stop();
process.exit(0);
