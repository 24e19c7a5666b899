// The Node peers of the benchmark suite: Puppeteer (puppeteer-core, over its pipe or a websocket) and
// chrome-remote-interface (a websocket), each driving a Chromium of its own the way its docs say.
//
// It speaks the suite's scenario protocol (benchmarks/clients/node_peers.py): one JSON object per line
// on stdin, one reply per line on stdout. Timing is process.hrtime.bigint() inside this process, CPU is
// process.cpuUsage() (this process, every thread), so the pipe to Python is never inside a measurement.
//
//   {"op": "start", "lib": "puppeteer"|"cri", "transport": "pipe"|"websocket", "chromium": path, "args": [...]}
//   {"op": "setup", "scenario": {...}, "url": "http://..."}   pages and sessions the scenario needs
//   {"op": "run", "scenario": {...}, "size": N}               -> {"latencies_us", "ops", "elapsed_ns", "cpu_ns"}
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

function readyExpression(url) {
  return `location.href === ${JSON.stringify(url)} && document.readyState === 'complete'`;
}

// -- Puppeteer: browser.target().createCDPSession() and page.createCDPSession(), raw CDP -------------

class PuppeteerDriver {
  async start(msg) {
    const puppeteer = (await import("puppeteer-core")).default;
    this.browser = await puppeteer.launch({
      executablePath: msg.chromium,
      pipe: msg.transport === "pipe",
      // The suite's flags exactly (its own headless flag included), so only the client differs.
      ignoreDefaultArgs: true,
      args: [...msg.args, "about:blank"],
      protocolTimeout: 300_000,
    });
    this.browserSession = await this.browser.target().createCDPSession();
    const version = await this.browserSession.send("Browser.getVersion");
    return version.product;
  }
  async browserCall() {
    return this.browserSession.send("Browser.getVersion");
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
  onConsole(p, handler) {
    p.session.on("Runtime.consoleAPICalled", handler);
    return () => p.session.off("Runtime.consoleAPICalled", handler);
  }
  async stop() {
    if (this.browser) await this.browser.close();
  }
}

// -- chrome-remote-interface: CDP({target}) on the browser endpoint, flattened sessions ---------------

class CriDriver {
  async start(msg) {
    if (msg.transport !== "websocket") throw new Error("chrome-remote-interface speaks only websocket");
    const CDP = (await import("chrome-remote-interface")).default;
    this.profile = mkdtempSync(join(tmpdir(), "cdp-bench-cri-"));
    this.child = spawn(
      msg.chromium,
      [...msg.args, "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
        `--user-data-dir=${this.profile}`, "about:blank"],
      { detached: true, stdio: "ignore" },
    );
    const deadline = Date.now() + 30_000;
    let lines = [];
    while (lines.length < 2) {
      if (Date.now() > deadline) throw new Error("Chromium did not open its debugging port");
      try {
        lines = readFileSync(join(this.profile, "DevToolsActivePort"), "utf8").split("\n").filter(Boolean);
      } catch {
        await sleep(50);
      }
    }
    this.client = await CDP({ target: `ws://127.0.0.1:${lines[0]}${lines[1]}` });
    const version = await this.client.send("Browser.getVersion");
    return version.product;
  }
  async browserCall() {
    return this.client.send("Browser.getVersion");
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
  onConsole(p, handler) {
    const listener = (params, sessionId) => {
      if (sessionId === p.sessionId) handler(params);
    };
    this.client.on("Runtime.consoleAPICalled", listener);
    return () => this.client.removeListener("Runtime.consoleAPICalled", listener);
  }
  async stop() {
    if (this.client) await this.client.close();
    if (this.child) {
      try {
        process.kill(-this.child.pid, "SIGTERM");
      } catch {}
      await sleep(200);
      try {
        process.kill(-this.child.pid, "SIGKILL");
      } catch {}
    }
    if (this.profile) rmSync(this.profile, { recursive: true, force: true });
  }
}

// -- the scenarios, written once over the drivers -----------------------------------------------------

let driver = null;
let pages = [];

async function setup(scenario, url) {
  const target = scenario.big_page ? url : "about:blank";
  pages = await Promise.all(Array.from({ length: scenario.pages }, () => driver.newPage(target)));
  if (scenario.kind === "events") for (const p of pages) await driver.send(p, "Runtime.enable", {});
}

async function run(scenario, size) {
  const lat = [];
  const cpu0 = process.cpuUsage();
  const begin = clock();
  let ops = size;
  let nbytes = null;
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
    const off = driver.onConsole(pages[0], () => {
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
  } else {
    throw new Error(`not runnable: ${scenario.name}`);
  }
  const elapsed = Number(clock() - begin);
  const cpu = process.cpuUsage(cpu0);
  return { latencies_us: lat, ops, elapsed_ns: elapsed, cpu_ns: (cpu.user + cpu.system) * 1000, nbytes };
}

async function handle(msg) {
  switch (msg.op) {
    case "start":
      driver = msg.lib === "cri" ? new CriDriver() : new PuppeteerDriver();
      return { product: await driver.start(msg) };
    case "setup":
      await setup(msg.scenario, msg.url);
      return {};
    case "run":
      return run(msg.scenario, msg.size);
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
for await (const line of lines) {
  if (!line.trim()) continue;
  const msg = JSON.parse(line);
  let reply;
  try {
    reply = { ok: true, ...(await handle(msg)) };
  } catch (err) {
    reply = { error: `${err && err.name}: ${err && err.message}` };
  }
  process.stdout.write(JSON.stringify(reply) + "\n");
  if (msg.op === "stop") break;
}
process.exit(0);
