// The stream contract: one turn's messages, in Rome's order, against a
// real `gantry serve --rome-addr` and the scripted model.

import assert from "node:assert/strict";
import { test } from "node:test";

import { collect, gantry, text } from "./harness.mjs";

test("a tool turn streams its messages in order, each tool call paired with its result", async (t) => {
  const { runner, workspace } = await gantry(t, {
    steps: [
      { reply: { tool_calls: [{ id: "call_echo", name: "shell", arguments: { command: "echo hi" } }] } },
      text("It printed hi.", { chunk_size: 4 }),
    ],
  });
  const messages = await collect(runner.run({ agentName: "main", prompt: "say hi", channelThreadKey: "tg:1" }));
  const types = messages.map((m) => m.type);

  assert.equal(types[0], "turn_start");
  assert.equal(types[1], "session_init");
  assert.equal(types.filter((x) => x === "turn_start").length, 1);
  assert.equal(types.at(-1), "turn_end");
  assert.equal(types.at(-2), "result", "the result comes right before turn_end");
  assert.equal(types.filter((x) => x === "result" || x === "error").length, 1);

  const [start, init] = messages;
  assert.equal(start.userPrompt, "say hi");
  assert.equal(init.sessionId, start.sessionId);
  assert.equal(init.turnId, start.turnId);
  assert.equal(init.systemPrompt, "You are Rome's main agent.");
  assert.equal(init.projectPath, workspace);

  const use = messages.find((m) => m.type === "tool_use");
  const result = messages.find((m) => m.type === "tool_result");
  assert.deepEqual([use.id, use.tool, use.input], ["call_echo", "shell", { command: "echo hi" }]);
  assert.equal(result.toolUseId, use.id);
  assert.match(String(result.output), /hi/);
  assert.ok(types.indexOf("tool_use") < types.indexOf("tool_result"));
  assert.ok(!Number.isNaN(Date.parse(use.startedAt)) && !Number.isNaN(Date.parse(result.endedAt)));

  const deltas = messages.filter((m) => m.type === "text_delta");
  const whole = messages.find((m) => m.type === "text");
  assert.ok(deltas.length > 1, "the answer streams");
  assert.equal(deltas.map((d) => d.content).join(""), whole.content);
  assert.ok(types.lastIndexOf("text_delta") < types.indexOf("text"));

  const end = messages.at(-1);
  const answer = messages.at(-2);
  assert.equal(answer.content, "It printed hi.");
  assert.equal(answer.accounting.provider, "mock");
  assert.equal(answer.accounting.model, "gpt-4.1-mini");
  assert.ok(answer.accounting.usage.inputTokens > 0 && answer.accounting.usage.outputTokens > 0);
  assert.equal(answer.accounting.usage.cacheReadTokens, 0);
  assert.deepEqual([end.turnId, end.status], [start.turnId, "completed"]);
  assert.ok(end.durationMs >= 0);
});

test("an agent with an output schema answers with structured output", async (t) => {
  const { runner } = await gantry(t, {
    agents: `
[agents.triage]
instructions = "Label the issue."
[agents.triage.output_schema]
type = "object"
required = ["label"]
properties = { label = { type = "string", enum = ["bug", "feature"] } }
`,
    steps: [{ reply: { tool_calls: [{ name: "submit_output", arguments: { label: "bug" } }] } }],
  });
  const messages = await collect(runner.run({ agentName: "triage", prompt: "It crashes on start." }));
  const types = messages.map((m) => m.type);
  const structured = messages.find((m) => m.type === "structured_output");
  assert.deepEqual(structured.payload, { label: "bug" });
  const result = messages.at(-2);
  assert.equal(result.type, "result");
  assert.deepEqual(JSON.parse(result.content), { label: "bug" });
  assert.ok(types.indexOf("structured_output") < types.indexOf("result"));
  // The engine's own submission tool is no tool use of the agent.
  assert.ok(!types.includes("tool_use") && !types.includes("tool_result"), types.join());
  assert.equal(messages.at(-1).status, "completed");
});

test("an agent with an output schema may answer with the JSON as text", async (t) => {
  const { runner } = await gantry(t, {
    agents: `
[agents.triage]
instructions = "Label the issue."
[agents.triage.output_schema]
type = "object"
required = ["label"]
properties = { label = { type = "string", enum = ["bug", "feature"] } }
`,
    steps: [text('{"label": "feature"}')],
  });
  const messages = await collect(runner.run({ agentName: "triage", prompt: "Add dark mode." }));
  const structured = messages.find((m) => m.type === "structured_output");
  assert.deepEqual(structured.payload, { label: "feature" });
  const result = messages.at(-2);
  assert.equal(result.type, "result");
  assert.deepEqual(JSON.parse(result.content), { label: "feature" });
  assert.equal(messages.at(-1).status, "completed");
});

test("a model failure ends the turn with an error, then turn_end status error", async (t) => {
  const { runner } = await gantry(t, {
    steps: [{ error: { status: 400, body: { error: { message: "bad request: context too long" } } } }],
  });
  const messages = await collect(runner.run({ agentName: "main", prompt: "hi" }));
  const [error, end] = messages.slice(-2);
  assert.equal(error.type, "error");
  assert.match(error.error, /context too long|400/);
  assert.equal(error.accounting.provider, "mock");
  assert.deepEqual([end.type, end.status], ["turn_end", "error"]);
});

test("accounting names the provider that served the turn, also for a model named without one", async (t) => {
  const { runner } = await gantry(t, { steps: [text("hi")], provider: "openai", model: "gpt-4.1-mini" });
  const messages = await collect(runner.run({ agentName: "main", prompt: "hi" }));
  const answer = messages.at(-2);
  assert.equal(answer.type, "result");
  assert.deepEqual([answer.accounting.provider, answer.accounting.model], ["openai", "gpt-4.1-mini"]);
});

