// What the tests share: the scripted mock LLM and a real `gantry serve
// --rome-addr` as processes (the binaries cargo built: GANTRY_BIN and
// GANTRY_MOCK_LLM, passed by crates/gantry-cli/tests/it/rome_conformance.rs),
// each test with its own pair in a temp dir.

import { spawn } from "node:child_process";
import { mkdtemp, mkdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

import { createRunner } from "../dist/index.js";

// Fails a wait that would otherwise hang the suite.
const HANG_GUARD_MS = 30_000;

function binary(name) {
  const path = process.env[name];
  if (!path) throw new Error(`${name} is not set: run the suite through cargo (crates/gantry-cli/tests/it/rome_conformance.rs)`);
  return path;
}

/** The first line of `stream` matching `pattern`, within the guard. */
function line(stream, pattern, what) {
  return new Promise((resolve, reject) => {
    const seen = [];
    const lines = createInterface({ input: stream });
    const timer = setTimeout(() => {
      lines.close();
      reject(new Error(`${what} did not start; it said: ${seen.join("\n")}`));
    }, HANG_GUARD_MS);
    lines.on("line", (text) => {
      seen.push(text);
      const match = text.match(pattern);
      if (match) {
        clearTimeout(timer);
        resolve(match);
      }
    });
    lines.on("close", () => {
      clearTimeout(timer);
      reject(new Error(`${what} exited; it said: ${seen.join("\n")}`));
    });
  });
}

function exited(proc) {
  return proc.exitCode !== null || proc.signalCode !== null
    ? Promise.resolve()
    : new Promise((resolve) => proc.once("exit", resolve));
}

/**
 * A mock LLM serving `steps` and a Gantry server whose config declares
 * `agents` (TOML after the provider), with `token` if given; the provider
 * is named `provider` and serves `gpt-4.1-mini`, the default `model`
 * (`provider/gpt-4.1-mini` unless given). `t.after` stops both.
 */
export async function gantry(t, { steps, agents = DEFAULT_AGENTS, token, provider = "mock", model } = {}) {
  const dir = await mkdtemp(join(tmpdir(), "gantry-rome-"));
  const home = join(dir, "home");
  const workspace = join(dir, "ws");
  await mkdir(home);
  await mkdir(workspace);
  await writeFile(join(dir, "script.json"), JSON.stringify({ steps }));
  const mock = spawn(binary("GANTRY_MOCK_LLM"), ["--script", join(dir, "script.json")], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const procs = [mock];
  t.after(async () => {
    for (const proc of procs) {
      if (proc === mock) proc.stdin.end();
      else proc.kill("SIGTERM");
      await exited(proc);
    }
    await rm(dir, { recursive: true, force: true });
  });
  const [, mockUrl] = await line(mock.stdout, /(http:\/\/\S+)/, "the mock LLM");
  const config = join(dir, "config.toml");
  await writeFile(
    config,
    [
      `default_model = "${model ?? `${provider}/gpt-4.1-mini`}"`,
      `[providers.${provider}]`,
      'kind = "openai-chat"',
      `base_url = "${mockUrl}"`,
      'api_key = "sk-test-secret-key-123456"',
      'models = ["gpt-4.1-mini"]',
      agents,
    ].join("\n"),
  );
  const args = ["--config", config, "serve", "--storage-backend", "memory", "--listen-addr", "127.0.0.1:0",
    "--rome-addr", "127.0.0.1:0", "--workspace", workspace];
  if (token !== undefined) {
    await writeFile(join(dir, "token"), token);
    args.push("--rome-token-file", join(dir, "token"));
  }
  const server = spawn(binary("GANTRY_BIN"), args, {
    stdio: ["ignore", "ignore", "pipe"],
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      // A bare home: no user config, skills or login profile leak in.
      HOME: home,
      XDG_CONFIG_HOME: join(home, ".config"),
      XDG_DATA_HOME: join(home, ".local", "share"),
    },
  });
  procs.unshift(server);
  const [, addr] = await line(server.stderr, /Rome agent runner on (\S+)/, "gantry serve");
  server.stderr.resume();
  const url = `http://${addr}`;
  return {
    url,
    workspace,
    runner: createRunner(token === undefined ? { url } : { url, token }),
    /** What the model was sent: [{path, headers, body}]. */
    async requests() {
      const res = await fetch(`${mockUrl.replace(/\/v1$/, "")}/_mock/requests`);
      return res.json();
    },
  };
}

export const DEFAULT_AGENTS = `
[agents.main]
instructions = "You are Rome's main agent."
`;

/** Every message of a run. */
export async function collect(messages) {
  const all = [];
  for await (const message of messages) all.push(message);
  return all;
}

/** A scripted text reply. */
export function text(text, extra = {}) {
  return { reply: { text, ...extra } };
}

/** The text of the user messages of a model request. */
export function userTexts(request) {
  return (request.body.messages ?? [])
    .filter((m) => m.role === "user")
    .map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)));
}
