// The ACP conformance suite: the official client library
// (`@agentclientprotocol/sdk`, pinned in .ci/run) drives `gantry acp` on
// the scripted model, every message both ways validated against the
// library's JSON schema. Run by crates/gantry-cli/tests/it/acp_conformance.rs
// with GANTRY_BIN and ACP_NODE_MODULES set; prints one line per check and
// exits non-zero on the first failure.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { acp, startAgent, startMockLlm, until, writeScript } from "./harness.mjs";

const root = fs.mkdtempSync(path.join(os.tmpdir(), "acp-conformance-"));
const dataDir = path.join(root, "data");
fs.mkdirSync(path.join(root, "work"));
const work = fs.realpathSync(path.join(root, "work"));
const mcpServer = path.join(path.dirname(new URL(import.meta.url).pathname), "mcp_server.mjs");
let passed = 0;
const results = [];

async function check(name, body) {
  await body();
  passed += 1;
  results.push(name);
  console.log(`ok - ${name}`);
}

/** A client that records updates and answers permissions with `choose`. */
function recordingClient(state) {
  return acp
    .client({ name: "gantry-conformance" })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      state.updates.push(params);
    })
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
      state.permissions.push(params);
      return state.choose(params);
    })
    .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
      state.fsReads.push(params);
      const text = fs.readFileSync(params.path, "utf8");
      // The editor's buffer: unsaved changes the disk does not have.
      return { content: text.replace("on disk", "in the editor buffer") };
    })
    .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
      state.fsWrites.push(params);
      fs.writeFileSync(params.path, params.content);
      return {};
    })
    .onRequest(acp.methods.client.terminal.create, ({ params }) => state.terminals.create(params))
    .onRequest(acp.methods.client.terminal.output, ({ params }) => state.terminals.output(params))
    .onRequest(acp.methods.client.terminal.waitForExit, ({ params }) => state.terminals.wait(params))
    .onRequest(acp.methods.client.terminal.kill, ({ params }) => state.terminals.kill(params))
    .onRequest(acp.methods.client.terminal.release, ({ params }) => state.terminals.release(params))
    .onRequest(acp.methods.client.elicitation.create, ({ params }) => {
      state.elicitations.push(params);
      return state.elicit(params);
    });
}

function newState(choose = () => ({ outcome: { outcome: "cancelled" } })) {
  return {
    updates: [],
    permissions: [],
    fsReads: [],
    fsWrites: [],
    elicitations: [],
    choose,
    elicit: () => ({ action: "decline" }),
    terminals: fakeTerminals(),
  };
}

/** Terminals the client runs itself (a real shell per terminal). */
function fakeTerminals() {
  const list = new Map();
  const created = [];
  return {
    created,
    list,
    async create(params) {
      const { spawn } = await import("node:child_process");
      const id = `term-${list.size + 1}`;
      const proc = spawn(params.command, params.args ?? [], { cwd: params.cwd, env: process.env });
      const t = { output: "", exit: null, liveReads: [] };
      proc.stdout.on("data", (d) => (t.output += d));
      proc.stderr.on("data", (d) => (t.output += d));
      t.done = new Promise((resolve) =>
        proc.on("exit", (code, signal) => {
          t.exit = { exitCode: code, signal };
          resolve(t.exit);
        }),
      );
      t.proc = proc;
      list.set(id, t);
      created.push(params);
      return { terminalId: id };
    },
    output({ terminalId }) {
      const t = list.get(terminalId);
      // Read while the command still runs (it waits for a line on stdin
      // until then): what Gantry streams as the command's output deltas.
      if (t.exit === null && t.output) {
        t.liveReads.push(t.output);
        t.proc.stdin.end("\n");
      }
      return { output: t.output, truncated: false, exitStatus: t.exit };
    },
    async wait({ terminalId }) {
      return await list.get(terminalId).done;
    },
    kill({ terminalId }) {
      list.get(terminalId).proc.kill("SIGKILL");
      return {};
    },
    release({ terminalId }) {
      list.get(terminalId).released = true;
      return {};
    },
  };
}

const updatesOf = (state, kind) => state.updates.map((u) => u.update).filter((u) => u.sessionUpdate === kind);
const text = (state, kind) => updatesOf(state, kind).map((u) => u.content.text).join("");

async function finish(agent, label) {
  const code = await agent.exited;
  assert.equal(code, 0, `${label}: gantry acp exited ${code}: ${agent.stderr()}`);
  assert.deepEqual(agent.validator.failures, [], `${label}: messages that do not match the schema`);
  assert.ok(agent.validator.count > 0);
}

// ---- First process: a session with tools, permissions, a plan, cancel.
const firstScript = writeScript(root, "first.json", [
  {
    reply: {
      reasoning: "Look first.",
      text: "Running a command.",
      tool_calls: [{ name: "shell", arguments: { command: "echo hello from the shell" } }],
    },
  },
  { reply: { tool_calls: [{ name: "write_file", arguments: { path: "notes.md", content: "one\ntwo\n" } }] } },
  { reply: { tool_calls: [{ name: "mcp__conf__echo", arguments: { text: "ping" } }] } },
  {
    reply: {
      tool_calls: [
        {
          name: "todo_write",
          arguments: {
            todos: [
              { id: "1", content: "write notes", status: "completed", priority: "high" },
              { id: "2", content: "review", status: "in_progress" },
            ],
          },
        },
      ],
    },
  },
  { reply: { text: "All done: notes written." } },
  // Second prompt: a command the client rejects.
  { reply: { tool_calls: [{ name: "shell", arguments: { command: "rm -rf ./notes.md" } }] } },
  { reply: { text: "Left it alone." } },
  // Third prompt (full-auto): a long command, cancelled.
  { reply: { tool_calls: [{ name: "shell", arguments: { command: "echo $$ > pid.txt; exec sleep 60" } }] } },
]);

const first = startAgent({ dataDir, script: firstScript, cwd: work });
const state = newState((params) => {
  // The command and the MCP tool once, the file edit for the session, the rm never.
  const kinds = Object.fromEntries(params.options.map((o) => [o.kind, o.optionId]));
  const title = params.toolCall.title ?? "";
  if (title.startsWith("rm ")) return { outcome: { outcome: "selected", optionId: kinds.reject_once } };
  if (params.toolCall.kind === "edit") return { outcome: { outcome: "selected", optionId: kinds.allow_always } };
  return { outcome: { outcome: "selected", optionId: kinds.allow_once } };
});
let sessionId;
await recordingClient(state).connectWith(first.stream, async (ctx) => {
  await check("initialize answers version 1 with loadSession and prompt capabilities", async () => {
    const init = await ctx.request(acp.methods.agent.initialize, {
      protocolVersion: 7,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
    });
    assert.equal(init.protocolVersion, 1);
    assert.equal(init.agentCapabilities.loadSession, true);
    assert.equal(init.agentCapabilities.promptCapabilities.embeddedContext, true);
    assert.equal(init.agentInfo.name, "gantry");
  });

  await check("session/new connects the client's stdio MCP server and offers modes", async () => {
    const created = await ctx.request(acp.methods.agent.session.new, {
      cwd: work,
      mcpServers: [{ name: "conf", command: process.execPath, args: [mcpServer], env: [{ name: "X", value: "1" }] }],
    });
    sessionId = created.sessionId;
    assert.ok(sessionId);
    assert.equal(created.modes.currentModeId, "ask");
    assert.deepEqual(
      created.modes.availableModes.map((m) => m.id),
      ["ask", "accept-edits", "full-auto", "read-only"],
    );
    assert.ok(created.configOptions.some((o) => o.id === "model" && o.category === "model"));
  });

  await check("a prompt streams chunks, tool calls, permissions, a diff, the plan and usage", async () => {
    const answer = await ctx.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [
        { type: "text", text: "Write the notes." },
        { type: "resource_link", name: "README", uri: `file://${work}/README` },
        { type: "resource", resource: { uri: `file://${work}/ctx.txt`, text: "some context" } },
      ],
    });
    assert.equal(answer.stopReason, "end_turn");
    assert.equal(text(state, "agent_thought_chunk"), "Look first.");
    assert.match(text(state, "agent_message_chunk"), /Running a command\.All done: notes written\./);
    for (const u of updatesOf(state, "agent_message_chunk")) assert.equal(typeof u.content, "object");
    const calls = updatesOf(state, "tool_call");
    const kinds = calls.map((c) => c.kind);
    assert.deepEqual(kinds, ["execute", "edit", "other", "think"]);
    // Asked first: announced as pending, then run.
    assert.deepEqual(calls.slice(0, 3).map((c) => c.status), ["pending", "pending", "pending"]);
    assert.equal(state.permissions.length, 3);
    for (const p of state.permissions) {
      assert.deepEqual(
        p.options.map((o) => o.kind),
        ["allow_once", "allow_always", "reject_once", "reject_always"],
      );
    }
    const edit = calls[1];
    assert.deepEqual(edit.locations, [{ path: path.join(work, "notes.md") }]);
    assert.deepEqual(edit.rawInput, { path: "notes.md", content: "one\ntwo\n" });
    const updates = updatesOf(state, "tool_call_update");
    const final = (id) => updates.filter((u) => u.toolCallId === id && u.status).at(-1);
    assert.equal(final(calls[0].toolCallId).status, "completed");
    assert.match(final(calls[0].toolCallId).content[0].content.text, /hello from the shell/);
    const diff = final(edit.toolCallId).content[0];
    assert.deepEqual(diff, { type: "diff", path: path.join(work, "notes.md"), oldText: null, newText: "one\ntwo" });
    assert.equal(fs.readFileSync(path.join(work, "notes.md"), "utf8"), "one\ntwo\n");
    // The MCP server really ran the tool: its answer is the text reversed.
    assert.equal(final(calls[2].toolCallId).content[0].content.text, "gnip");
    const plan = updatesOf(state, "plan").at(-1);
    assert.deepEqual(plan.entries, [
      { content: "write notes", priority: "high", status: "completed" },
      { content: "review", priority: "medium", status: "in_progress" },
    ]);
    const usage = updatesOf(state, "usage_update").at(-1);
    assert.ok(usage.used > 0);
  });

  await check("a rejected permission fails the call and the turn goes on", async () => {
    state.updates.length = 0;
    const answer = await ctx.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "Clean up." }],
    });
    assert.equal(answer.stopReason, "end_turn");
    const call = updatesOf(state, "tool_call")[0];
    assert.equal(call.title, "rm -rf ./notes.md");
    const last = updatesOf(state, "tool_call_update").filter((u) => u.toolCallId === call.toolCallId).at(-1);
    assert.equal(last.status, "failed");
    assert.ok(fs.existsSync(path.join(work, "notes.md")), "the rejected command did not run");
    assert.equal(text(state, "agent_message_chunk"), "Left it alone.");
  });

  await check("set_mode and set_config_option change the session", async () => {
    await ctx.request(acp.methods.agent.session.setMode, { sessionId, modeId: "full-auto" });
    const options = await ctx.request(acp.methods.agent.session.setConfigOption, {
      sessionId,
      configId: "reasoning",
      value: "high",
    });
    assert.equal(options.configOptions.find((o) => o.id === "reasoning").currentValue, "high");
  });

  await check("session/cancel kills the running command and the prompt answers cancelled", async () => {
    state.updates.length = 0;
    const asked = state.permissions.length;
    const prompt = ctx.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "Wait a minute." }],
    });
    const pidFile = path.join(work, "pid.txt");
    await until(() => fs.existsSync(pidFile) && fs.readFileSync(pidFile, "utf8").trim(), "the command to start");
    const pid = Number(fs.readFileSync(pidFile, "utf8").trim());
    await ctx.notify(acp.methods.agent.session.cancel, { sessionId });
    const answer = await prompt;
    assert.equal(answer.stopReason, "cancelled");
    assert.equal(state.permissions.length, asked, "full-auto asks nothing");
    await until(() => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true;
      }
    }, "the cancelled command's process to be gone");
  });

  await check("session/list lists the session with its workspace and title", async () => {
    const list = await ctx.request(acp.methods.agent.session.list, {});
    const mine = list.sessions.find((s) => s.sessionId === sessionId);
    assert.equal(mine.cwd, work);
    assert.equal(mine.title, "Write the notes.");
    assert.ok(!Number.isNaN(Date.parse(mine.updatedAt)));
  });
});
first.child.stdin.end();
await finish(first, "first process");

// ---- Second process, same data dir: load replays the history first.
const second = startAgent({ dataDir, script: writeScript(root, "second.json", []), cwd: work });
const replayed = newState();
await recordingClient(replayed).connectWith(second.stream, async (ctx) => {
  await ctx.request(acp.methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
  await check("session/load in a fresh process replays the history before it answers", async () => {
    const loaded = await ctx.request(acp.methods.agent.session.load, { sessionId, cwd: work, mcpServers: [] });
    // Everything arrived before the answer: nothing comes after it.
    const before = replayed.updates.length;
    assert.ok(before > 0);
    assert.equal(loaded.modes.currentModeId, "full-auto");
    assert.deepEqual(
      updatesOf(replayed, "user_message_chunk").map((u) => u.content.text.split("\n")[0]),
      ["Write the notes.", "Clean up.", "Wait a minute."],
    );
    assert.match(text(replayed, "agent_message_chunk"), /All done: notes written\./);
    assert.equal(text(replayed, "agent_thought_chunk"), "Look first.");
    const calls = updatesOf(replayed, "tool_call");
    assert.deepEqual(calls.map((c) => c.kind), ["execute", "edit", "other", "think", "execute", "execute"]);
    const finals = updatesOf(replayed, "tool_call_update");
    for (const call of calls) {
      assert.ok(finals.some((u) => u.toolCallId === call.toolCallId && u.status), `final update of ${call.toolCallId}`);
    }
    const list = await ctx.request(acp.methods.agent.session.list, { cwd: work });
    assert.ok(list.sessions.some((s) => s.sessionId === sessionId));
    assert.equal(replayed.updates.length, before);
  });

  await check("errors: unknown session, unknown method, bad params; _ notifications ignored", async () => {
    const code = async (p) => {
      try {
        await p;
      } catch (e) {
        return e.code;
      }
      return "no error";
    };
    assert.equal(
      await code(ctx.request(acp.methods.agent.session.prompt, { sessionId: "nope", prompt: [{ type: "text", text: "x" }] })),
      -32002,
    );
    assert.equal(await code(ctx.request("gantry/unknown", {})), -32601);
    // Malformed on purpose: the validator lets these through.
    const invalid = { conformanceInvalid: true };
    assert.equal(await code(ctx.request(acp.methods.agent.session.setMode, { sessionId, _meta: invalid })), -32602);
    assert.equal(await code(ctx.request(acp.methods.agent.session.setMode, { sessionId, modeId: "yolo" })), -32602);
    await ctx.notify("_gantry/whatever", { x: 1 });
    // Still answering after the extension notification.
    const list = await ctx.request(acp.methods.agent.session.list, {});
    assert.ok(list.sessions.length >= 1);
  });
});
second.child.stdin.end();
await finish(second, "second process");

// ---- Third process: a client that offers fs and terminals serves the tools.
fs.writeFileSync(path.join(work, "draft.md"), "text on disk\n");
const thirdScript = writeScript(root, "third.json", [
  { reply: { tool_calls: [{ name: "read_file", arguments: { path: "draft.md" } }] } },
  {
    reply: {
      tool_calls: [
        { name: "edit_file", arguments: { path: "draft.md", old_string: "editor buffer", new_string: "editor buffer, edited" } },
      ],
    },
  },
  { reply: { tool_calls: [{ name: "write_file", arguments: { path: "fresh.txt", content: "new\n" } }] } },
  { reply: { tool_calls: [{ name: "shell", arguments: { command: "echo from the terminal; read line; exit 3" } }] } },
  { reply: { text: "Delegated." } },
]);
const third = startAgent({ dataDir, script: thirdScript, cwd: work, env: { CONFORMANCE_API_KEY: "sk-conformance-secret" } });
const editor = newState();
await recordingClient(editor).connectWith(third.stream, async (ctx) => {
  await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: 1,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true },
  });
  const { sessionId: id } = await ctx.request(acp.methods.agent.session.new, { cwd: work, mcpServers: [] });
  await ctx.request(acp.methods.agent.session.setMode, { sessionId: id, modeId: "full-auto" });
  const answer = await ctx.request(acp.methods.agent.session.prompt, {
    sessionId: id,
    prompt: [{ type: "text", text: "Use the editor." }],
  });
  assert.equal(answer.stopReason, "end_turn");
  const calls = updatesOf(editor, "tool_call");
  const updates = updatesOf(editor, "tool_call_update");
  const final = (call) => updates.filter((u) => u.toolCallId === call.toolCallId && u.status).at(-1);

  await check("file tools read and write through fs/read_text_file and fs/write_text_file", async () => {
    const draft = path.join(work, "draft.md");
    assert.ok(editor.fsReads.some((r) => r.path === draft && r.sessionId === id));
    // The model read the editor's buffer, not the disk.
    assert.match(final(calls[0]).rawOutput, /text in the editor buffer/);
    const written = editor.fsWrites.find((w) => w.path === draft);
    assert.equal(written.content, "text in the editor buffer, edited\n");
    const diff = final(calls[1]).content[0];
    assert.equal(diff.type, "diff");
    assert.equal(diff.oldText, "text in the editor buffer");
    assert.equal(diff.newText, "text in the editor buffer, edited");
    const fresh = editor.fsWrites.find((w) => w.path === path.join(work, "fresh.txt"));
    assert.equal(fresh.content, "new\n");
    assert.equal(final(calls[2]).content[0].oldText, null);
  });

  await check("shell commands run in the client's terminals", async () => {
    const created = editor.terminals.created;
    assert.equal(created.length, 1);
    assert.equal(created[0].command, "bash");
    assert.deepEqual(created[0].args, ["-c", "echo from the terminal; read line; exit 3"]);
    assert.equal(created[0].cwd, work);
    const shell = calls[3];
    assert.equal(shell.kind, "execute");
    const shown = updates.find((u) => u.toolCallId === shell.toolCallId && u.content?.[0]?.type === "terminal");
    assert.equal(shown.content[0].terminalId, "term-1");
    const done = final(shell);
    // A non-zero exit is a failed call, as for a local command.
    assert.equal(done.status, "failed");
    assert.deepEqual(done.content, [{ type: "terminal", terminalId: "term-1" }]);
    assert.match(done.rawOutput, /Exit code: 3/);
    assert.match(done.rawOutput, /from the terminal/);
    assert.ok(editor.terminals.list.get("term-1").released, "the terminal was released");
    // No secret of Gantry's environment goes to the editor.
    for (const v of created[0].env ?? []) assert.doesNotMatch(v.value, /sk-conformance-secret/);
  });

  await check("a running command's output is read live, before it exits", async () => {
    // The command only exits once its output was read while it ran.
    const live = editor.terminals.list.get("term-1").liveReads;
    assert.ok(live.length > 0, "terminal/output was asked while the command ran");
    assert.match(live[0], /^from the terminal\n/);
  });
});
third.child.stdin.end();
await finish(third, "third process");

// ---- Fourth process: a model server of its own (the scripted model as a
// process), so the suite sees what reached the model: images, then a refusal.
const mock = await startMockLlm(
  writeScript(root, "fourth.json", [
    { reply: { text: "A single pixel." } },
    { reply: { text: "I can't help with that.", finish_reason: "content_filter" } },
  ]),
);
const fourth = startAgent({
  dataDir,
  cwd: work,
  model: ["--model", "vision-model", "--base-url", mock.url],
  env: { OPENAI_API_KEY: "sk-conformance-key" },
});
const viewer = newState();
await recordingClient(viewer).connectWith(fourth.stream, async (ctx) => {
  const init = await ctx.request(acp.methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
  const { sessionId: id } = await ctx.request(acp.methods.agent.session.new, { cwd: work, mcpServers: [] });
  const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";

  await check("image blocks reach the model as images (initialize advertises image)", async () => {
    assert.equal(init.agentCapabilities.promptCapabilities.image, true);
    const answer = await ctx.request(acp.methods.agent.session.prompt, {
      sessionId: id,
      prompt: [
        { type: "text", text: "What is this?" },
        { type: "image", mimeType: "image/png", data: PNG },
      ],
    });
    assert.equal(answer.stopReason, "end_turn");
    const received = await mock.requests();
    assert.deepEqual(received[0].images, [{ media_type: "image/png", data: PNG }]);
  });

  await check("a client without elicitation is not offered request_user_input", async () => {
    const received = await mock.requests();
    const tools = (received[0].body.tools ?? []).map((t) => t.function.name);
    assert.ok(tools.includes("shell"), `tools offered: ${tools}`);
    assert.ok(!tools.includes("request_user_input"), `tools offered: ${tools}`);
  });

  await check("a refusal by the model answers stopReason refusal", async () => {
    viewer.updates.length = 0;
    const answer = await ctx.request(acp.methods.agent.session.prompt, {
      sessionId: id,
      prompt: [{ type: "text", text: "Do something you should not." }],
    });
    assert.equal(answer.stopReason, "refusal");
    assert.equal(text(viewer, "agent_message_chunk"), "I can't help with that.");
  });
});
fourth.child.stdin.end();
await finish(fourth, "fourth process");
mock.stop();

// ---- Fifth process: a client that renders form elicitations answers the
// model's questions; the scripted model (a process) shows what it was told.
const asking = await startMockLlm(
  writeScript(root, "fifth.json", [
    {
      reply: {
        tool_calls: [
          {
            name: "request_user_input",
            arguments: {
              questions: [
                {
                  id: "db",
                  header: "Database",
                  question: "Which database should the service use?",
                  options: [
                    { label: "PostgreSQL", description: "a server" },
                    { label: "SQLite", description: "a file" },
                  ],
                  allow_free_text: true,
                },
                {
                  id: "targets",
                  header: "Targets",
                  question: "Where must it run?",
                  options: [
                    { label: "Linux", description: "servers" },
                    { label: "macOS", description: "laptops" },
                  ],
                  multi_select: true,
                },
              ],
            },
          },
        ],
      },
    },
    { reply: { text: "SQLite on Linux and macOS." } },
  ]),
);
const fifth = startAgent({
  dataDir,
  cwd: work,
  model: ["--model", "asking-model", "--base-url", asking.url],
  env: { OPENAI_API_KEY: "sk-conformance-key" },
});
const user = newState();
user.elicit = () => ({
  action: "accept",
  content: { db: "SQLite", "db.other": "with WAL", targets: ["Linux", "macOS"] },
});
await recordingClient(user).connectWith(fifth.stream, async (ctx) => {
  await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: 1,
    clientCapabilities: { elicitation: { form: {} } },
  });
  const { sessionId: id } = await ctx.request(acp.methods.agent.session.new, { cwd: work, mcpServers: [] });

  await check("the model's questions are a form elicitation and its answers reach the model", async () => {
    const answer = await ctx.request(acp.methods.agent.session.prompt, {
      sessionId: id,
      prompt: [{ type: "text", text: "Set up the service." }],
    });
    assert.equal(answer.stopReason, "end_turn");
    assert.equal(user.elicitations.length, 1);
    const asked = user.elicitations[0];
    assert.equal(asked.sessionId, id);
    assert.equal(asked.mode, "form");
    const call = updatesOf(user, "tool_call")[0];
    assert.equal(asked.toolCallId, call.toolCallId, "tied to the announced call");
    const fields = asked.requestedSchema.properties;
    assert.deepEqual(fields.db.oneOf.map((o) => o.const), ["PostgreSQL", "SQLite"]);
    assert.equal(fields.targets.type, "array");
    assert.equal(fields["db.other"].type, "string");
    const received = await asking.requests();
    const tools = received[0].body.tools.map((t) => t.function.name);
    assert.ok(tools.includes("request_user_input"), `tools offered: ${tools}`);
    const told = JSON.parse(received[1].body.messages.findLast((m) => m.role === "tool").content);
    assert.equal(told.status, "answered");
    assert.deepEqual(told.answers[0].selected, ["SQLite"]);
    assert.equal(told.answers[0].text, "with WAL");
    assert.deepEqual(told.answers[1].selected, ["Linux", "macOS"]);
    assert.equal(text(user, "agent_message_chunk"), "SQLite on Linux and macOS.");
  });
});
fifth.child.stdin.end();
await finish(fifth, "fifth process");
asking.stop();

console.log(`${passed} passed`);
fs.rmSync(root, { recursive: true, force: true });
