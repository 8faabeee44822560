// Interrupts (leaving the loop, an AbortSignal), the agent questions and
// the token.

import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";

import { DEFAULT_URL, createRunner } from "../dist/index.js";
import { collect, gantry, text, userTexts } from "./harness.mjs";

// A reply slow enough to be stopped mid-stream (about 10 s if not).
const SLOW = text("x".repeat(500), { chunk_size: 1, delay_ms: 20 });

test("leaving the loop interrupts the turn; the session's next run goes on at once", async (t) => {
  const { runner, requests } = await gantry(t, { steps: [SLOW, text("next")] });
  let session;
  for await (const m of runner.run({ agentName: "main", prompt: "long", channelThreadKey: "k" })) {
    if (m.type === "turn_start") session = m.sessionId;
    if (m.type === "text_delta") break;
  }
  const next = await collect(runner.run({ agentName: "main", prompt: "short", channelThreadKey: "k" }));
  assert.equal(next[0].sessionId, session);
  assert.equal(next.at(-2).content, "next");
  assert.equal(next.at(-1).status, "completed");
  assert.deepEqual(userTexts((await requests())[1]).slice(0, 1), ["long"]);
});

test("an AbortSignal interrupts the turn, which ends with turn_end interrupted", async (t) => {
  const { runner } = await gantry(t, { steps: [SLOW] });
  const stop = new AbortController();
  const messages = [];
  for await (const m of runner.run({ agentName: "main", prompt: "long", signal: stop.signal })) {
    messages.push(m);
    if (m.type === "text_delta") stop.abort();
  }
  const types = messages.map((m) => m.type);
  assert.equal(types.at(-1), "turn_end");
  assert.equal(messages.at(-1).status, "interrupted");
  assert.ok(!types.includes("result"), "a stopped turn has no result");
  assert.equal(messages.at(-1).turnId, messages[0].turnId);
});

test("hasAgent and hasAction answer from the agents and their allowed tools", async (t) => {
  const { runner } = await gantry(t, {
    steps: [],
    agents: `
[agents.main]
instructions = "Main."
[agents.reader]
allowed_tools = ["read_file", "Grep"]
`,
  });
  assert.equal(await runner.hasAgent("main"), true);
  assert.equal(await runner.hasAgent("nobody"), false);
  assert.equal(await runner.hasAction("main", "shell"), true);
  assert.equal(await runner.hasAction("main", "no_such_tool"), false);
  assert.equal(await runner.hasAction("reader", "read_file"), true);
  assert.equal(await runner.hasAction("reader", "grep"), true);
  assert.equal(await runner.hasAction("reader", "shell"), false);
  assert.equal(await runner.hasAction("nobody", "read_file"), false);
  await assert.rejects(collect(runner.run({ agentName: "nobody", prompt: "hi" })), (e) => e.status === 404);
});

test("hasAction answers for the skills a session of the agent finds", async (t) => {
  const { runner, workspace } = await gantry(t, {
    steps: [],
    agents: `
[agents.main]
instructions = "Main."
[agents.reader]
allowed_tools = ["read_file"]
[agents.deployer]
allowed_tools = ["Skill(deploy)"]
`,
  });
  const skill = join(workspace, ".gantry", "skills", "deploy");
  await mkdir(skill, { recursive: true });
  await writeFile(join(skill, "SKILL.md"), "---\nname: deploy\ndescription: Deploys the app.\n---\nRun make deploy.\n");
  assert.equal(await runner.hasAction("main", "deploy"), true);
  assert.equal(await runner.hasAction("main", "undeploy"), false);
  assert.equal(await runner.hasAction("deployer", "deploy"), true);
  assert.equal(await runner.hasAction("reader", "deploy"), false, "its allowed tools do not include skills");
});

test("with a token file, calls without the token are refused", async (t) => {
  const { runner, url } = await gantry(t, { steps: [text("ok")], token: "rome-secret" });
  const anonymous = createRunner({ url });
  await assert.rejects(anonymous.hasAgent("main"), (e) => e.status === 401);
  await assert.rejects(collect(anonymous.run({ agentName: "main", prompt: "hi" })), (e) => e.status === 401);
  assert.equal(await runner.hasAgent("main"), true);
  const messages = await collect(runner.run({ agentName: "main", prompt: "hi" }));
  assert.equal(messages.at(-2).content, "ok");
});

test("createRunner() without options finds the server in GANTRY_ROME_URL and GANTRY_ROME_TOKEN", async (t) => {
  const { url } = await gantry(t, { steps: [], token: "rome-secret-token" });
  const saved = [process.env.GANTRY_ROME_URL, process.env.GANTRY_ROME_TOKEN];
  t.after(() => {
    for (const [name, value] of [["GANTRY_ROME_URL", saved[0]], ["GANTRY_ROME_TOKEN", saved[1]]]) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });
  process.env.GANTRY_ROME_URL = url;
  process.env.GANTRY_ROME_TOKEN = "rome-secret-token";
  assert.equal(await createRunner().hasAgent("main"), true);
  // Options given win over the environment.
  await assert.rejects(createRunner({ token: "wrong" }).hasAgent("main"), (e) => e.status === 401);
  delete process.env.GANTRY_ROME_URL;
  delete process.env.GANTRY_ROME_TOKEN;
  assert.equal(DEFAULT_URL, "http://127.0.0.1:8788");
});

