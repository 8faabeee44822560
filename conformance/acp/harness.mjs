// What the ACP conformance suite shares: loading the pinned client
// library and its JSON schema from where .ci/run installs them, spawning
// `gantry acp`, and a tap on both directions of its stdio that validates
// every message against the schema the library ships
// (`schema/v1/schema.json`): the JSON-RPC envelope, then the params or
// result of each method by the `$defs` type ACP names for it.
import { spawn } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";

export const NODE_MODULES = process.env.ACP_NODE_MODULES;
export const GANTRY = process.env.GANTRY_BIN;
if (!NODE_MODULES || !GANTRY) throw new Error("set ACP_NODE_MODULES and GANTRY_BIN");

const SDK_DIR = path.join(NODE_MODULES, "@agentclientprotocol/sdk");
export const acp = await import(pathToFileURL(path.join(SDK_DIR, "dist/v1/stable/acp.js")).href);
const require = createRequire(path.join(NODE_MODULES, "noop.js"));
const Ajv2020 = require("ajv/dist/2020").default;
const schema = JSON.parse(fs.readFileSync(path.join(SDK_DIR, "schema/v1/schema.json"), "utf8"));

// The schema's custom keywords (`x-...`, `discriminator`) and formats
// (`uint32`, ...) are annotations here: strict mode off, formats unchecked.
const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
ajv.addSchema({ ...schema, $id: "acp" });
const envelope = ajv.getSchema("acp");

// Method -> [params type, result type] ($defs names), both directions.
const TYPES = {
  initialize: ["InitializeRequest", "InitializeResponse"],
  "session/new": ["NewSessionRequest", "NewSessionResponse"],
  "session/load": ["LoadSessionRequest", "LoadSessionResponse"],
  "session/list": ["ListSessionsRequest", "ListSessionsResponse"],
  "session/set_mode": ["SetSessionModeRequest", "SetSessionModeResponse"],
  "session/set_config_option": ["SetSessionConfigOptionRequest", "SetSessionConfigOptionResponse"],
  "session/prompt": ["PromptRequest", "PromptResponse"],
  "session/cancel": ["CancelNotification", null],
  "session/update": ["SessionNotification", null],
  "session/request_permission": ["RequestPermissionRequest", "RequestPermissionResponse"],
  "fs/read_text_file": ["ReadTextFileRequest", "ReadTextFileResponse"],
  "fs/write_text_file": ["WriteTextFileRequest", "WriteTextFileResponse"],
  "terminal/create": ["CreateTerminalRequest", "CreateTerminalResponse"],
  "terminal/output": ["TerminalOutputRequest", "TerminalOutputResponse"],
  "terminal/wait_for_exit": ["WaitForTerminalExitRequest", "WaitForTerminalExitResponse"],
  "terminal/release": ["ReleaseTerminalRequest", "ReleaseTerminalResponse"],
  "terminal/kill": ["KillTerminalRequest", "KillTerminalResponse"],
  "elicitation/create": ["CreateElicitationRequest", "CreateElicitationResponse"],
};
const typed = (name) => ajv.getSchema(`acp#/$defs/${name}`);

/** Validates every line of one connection; `failures` lists what did not. */
export class Validator {
  constructor() {
    this.failures = [];
    this.count = 0;
    // Requests waiting for answers, by direction of the request: id -> method.
    this.waiting = { in: new Map(), out: new Map() };
    this.lines = [];
  }

  fail(direction, line, what) {
    this.failures.push(`${direction} ${line.slice(0, 400)}\n    ${what}`);
  }

  check(direction, line) {
    this.count += 1;
    this.lines.push([direction, line]);
    if (process.env.ACP_DEBUG) console.error(direction, line.slice(0, 300));
    let msg;
    try {
      msg = JSON.parse(line);
    } catch (e) {
      return this.fail(direction, line, `not JSON: ${e.message}`);
    }
    if (!envelope(msg)) return this.fail(direction, line, ajv.errorsText(envelope.errors));
    const other = direction === "in" ? "out" : "in";
    let name = null;
    let value = null;
    if (msg.method !== undefined) {
      if (msg.method.startsWith("_")) return; // extensions: free-form
      const types = TYPES[msg.method];
      if (!types) return; // unknown methods are the error cases' business
      if (msg.id !== undefined) this.waiting[direction].set(msg.id, msg.method);
      [name, value] = [types[0], msg.params];
    } else {
      const method = this.waiting[other].get(msg.id);
      this.waiting[other].delete(msg.id);
      if (msg.error) [name, value] = ["Error", msg.error];
      else if (method && TYPES[method]?.[1]) [name, value] = [TYPES[method][1], msg.result];
    }
    if (!name) return;
    // A request the suite sends malformed on purpose (its error case).
    if (msg.params?._meta?.conformanceInvalid) return;
    const validate = typed(name);
    if (!validate(value)) this.fail(direction, line, `${name}: ${ajv.errorsText(validate.errors)}`);
  }
}

/** Spawns `gantry acp` and connects the client library to it through the tap. */
export function startAgent({ dataDir, script, cwd, args = [], model = ["--model", `scripted:${script}`], env = {} }) {
  const child = spawn(
    GANTRY,
    ["--data-dir", dataDir, "acp", ...model, "--sandbox", "danger-full-access", ...args],
    { cwd, stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, GANTRY_NO_SHELL_SNAPSHOT: "true", ...env } },
  );
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const validator = new Validator();
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  const input = new ReadableStream({
    start(controller) {
      let buf = "";
      child.stdout.on("data", (chunk) => {
        buf += chunk;
        let i;
        while ((i = buf.indexOf("\n")) >= 0) {
          const line = buf.slice(0, i);
          buf = buf.slice(i + 1);
          if (!line.trim()) continue;
          validator.check("in", line);
          try {
            controller.enqueue(encoder.encode(line + "\n"));
          } catch {
            // The client library is done with the connection.
          }
        }
      });
      child.stdout.on("end", () => {
        try {
          controller.close();
        } catch {
          // Already closed by the client library.
        }
      });
    },
  });
  let pending = "";
  const output = new WritableStream({
    write(chunk) {
      pending += decoder.decode(chunk);
      let i;
      while ((i = pending.indexOf("\n")) >= 0) {
        const line = pending.slice(0, i);
        pending = pending.slice(i + 1);
        if (line.trim()) validator.check("out", line);
      }
      return new Promise((resolve) => child.stdin.write(chunk, resolve));
    },
    close() {
      child.stdin.end();
    },
  });
  const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
  // A write after the agent died must fail its request, not the process.
  child.stdin.on("error", () => {});
  child.on("exit", (code) => {
    if (code !== 0) console.error(`gantry acp exited ${code}:\n${stderr}`);
  });
  return {
    child,
    validator,
    stream: acp.ndJsonStream(output, input),
    stderr: () => stderr,
    exited,
  };
}

/** Writes a model script and returns its path. */
export function writeScript(dir, name, steps) {
  const file = path.join(dir, name);
  fs.writeFileSync(file, JSON.stringify({ steps }));
  return file;
}

/** Resolves once `test()` holds, checking every 20 ms, or fails after `ms`. */
export async function until(test, what, ms = 20000) {
  const end = Date.now() + ms;
  while (!test()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Starts the scripted model as a process (`gantry-mock-llm`, GANTRY_MOCK_LLM):
 * its base URL, what it received (`GET /_mock/requests`, each request with
 * the `images` its messages carried), and a stop.
 */
export async function startMockLlm(script) {
  const bin = process.env.GANTRY_MOCK_LLM;
  if (!bin) throw new Error("set GANTRY_MOCK_LLM");
  const child = spawn(bin, ["--script", script], { stdio: ["pipe", "pipe", "inherit"] });
  const url = await new Promise((resolve, reject) => {
    let buf = "";
    child.stdout.on("data", (d) => {
      buf += d;
      const i = buf.indexOf("\n");
      if (i >= 0) resolve(buf.slice(0, i).trim());
    });
    child.on("exit", (code) => reject(new Error(`gantry-mock-llm exited ${code}`)));
  });
  const root = url.replace(/\/v1$/, "");
  return {
    url,
    async requests() {
      const res = await fetch(`${root}/_mock/requests`);
      return await res.json();
    },
    stop() {
      child.stdin.end();
    },
  };
}
