// Drive a QMP server with npm's qemu-qmp, an independently written client,
// through a scenario, and print what happened as JSON (for
// tests/functional/test_qmp_client.py).
//
//   node drive.mjs SCENARIO.json      (or the scenario on stdin)
//
// Scenario:
//   { "socket": "/path/qmp.sock",           unix socket of -qmp unix:...,server=on
//     "connect_timeout_ms": 30000,          the VMM may still be creating it
//     "step_timeout_ms": 30000,
//     "steps": [ { "execute": "stop", "arguments": {...},     arguments optional
//                  "events": ["STOP"],      wait for these (in any order)
//                  "close": true },         wait for the server to close
//                ... ] }
// Result:
//   { "greeting": {"version": ..., "capabilities": [...]},
//     "steps": [ { "execute": "stop", "return": {...} | "error": "desc",
//                  "events": ["STOP"], "closed": true }, ... ],
//     "failure": "why the scenario could not go on" }   only when it stopped
//
// The client (node_modules/qemu-qmp/index.js) negotiates capabilities itself,
// answers commands in order, loses the error class (only "desc" is kept) and
// emits each event as the lower-cased event name with the name as the only
// argument; events carry no data through it. A net.Socket emits "resume"
// too (when its stream starts flowing), without that argument: only a call
// whose argument is the event's own name is counted as the QMP event.
// It also expects of a server what QEMU does: the greeting whole in the
// first read (it parses that chunk alone), and no empty line ever (one
// makes it close the connection).

import { readFileSync } from "node:fs";
import QMP from "qemu-qmp";

// Every event the VMMs under test may send, to record unexpected ones too.
const KNOWN_EVENTS = [
  "SHUTDOWN", "POWERDOWN", "RESET", "STOP", "RESUME", "SUSPEND", "WAKEUP",
  "BLOCK_IO_ERROR", "NIC_RX_FILTER_CHANGED", "DEVICE_TRAY_MOVED", "RTC_CHANGE",
  "GUEST_PANICKED", "DEVICE_DELETED",
];

function readScenario() {
  const path = process.argv[2];
  return JSON.parse(readFileSync(path ?? 0, "utf8"));
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// One connection attempt: the connected client, or the connection error.
function connectOnce(socket) {
  return new Promise((resolve, reject) => {
    const qmp = new QMP();
    qmp.connect(socket, (err) => (err ? reject(err) : resolve(qmp)));
  });
}

async function connect(socket, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await connectOnce(socket);
    } catch (err) {
      if (Date.now() > deadline || !["ENOENT", "ECONNREFUSED"].includes(err.code)) {
        throw err;
      }
      await sleep(50);
    }
  }
}

// Events and the close, as they arrive, for the steps to wait on.
class Arrivals {
  constructor(qmp) {
    this.events = [];
    this.closed = false;
    this.waiters = new Set();
    for (const name of KNOWN_EVENTS) {
      qmp.on(name.toLowerCase(), (arg) => {
        if (arg === name) {
          this.events.push(name);
          this.notify();
        }
      });
    }
    qmp.on("close", () => {
      this.closed = true;
      this.notify();
    });
    // A reset connection: without a listener the socket's error would
    // end the driver before it reports.
    qmp.on("error", (err) => {
      this.socketError = err.message;
      this.notify();
    });
  }

  notify() {
    for (const waiter of this.waiters) {
      waiter();
    }
  }

  // Resolve once done() holds (checked at each arrival), or reject.
  until(done, timeoutMs, what) {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (done()) {
          finish();
          resolve();
        } else if (this.socketError) {
          finish();
          reject(new Error(`connection error: ${this.socketError}`));
        }
      };
      const timer = setTimeout(() => {
        finish();
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what()}`));
      }, timeoutMs);
      const finish = () => {
        clearTimeout(timer);
        this.waiters.delete(check);
      };
      this.waiters.add(check);
      check();
    });
  }
}

// Run step, filling result (which the caller already holds, so that what
// arrived is reported even when the step times out).
async function runStep(qmp, arrivals, step, result, timeoutMs) {
  const first = arrivals.events.length;
  let answered = false;
  qmp.execute(step.execute, step.arguments ?? null, (err, ret) => {
    if (err) {
      result.error = err.message;
    } else {
      result.return = ret;
    }
    answered = true;
    arrivals.notify();
  });
  const wanted = step.events ?? [];
  const seen = () => arrivals.events.slice(first);
  const missing = () => wanted.filter((name) => !seen().includes(name));
  try {
    await arrivals.until(
      () => answered && missing().length === 0 && (!step.close || arrivals.closed),
      timeoutMs,
      () => [answered ? null : "the answer", ...missing(),
             step.close && !arrivals.closed ? "the close" : null]
        .filter(Boolean).join(", "));
  } finally {
    result.events = seen();
    result.closed = arrivals.closed;
  }
}

async function main() {
  const scenario = readScenario();
  const out = { steps: [] };
  let qmp;
  try {
    qmp = await connect(scenario.socket, scenario.connect_timeout_ms ?? 30000);
    out.greeting = { version: qmp.version, capabilities: qmp.capabilities };
    const arrivals = new Arrivals(qmp);
    for (const step of scenario.steps) {
      const result = { execute: step.execute };
      out.steps.push(result);
      await runStep(qmp, arrivals, step, result, scenario.step_timeout_ms ?? 30000);
    }
  } catch (err) {
    out.failure = err.message;
  }
  qmp?.destroy();
  process.stdout.write(JSON.stringify(out) + "\n");
  process.exitCode = out.failure ? 1 : 0;
}

main();
