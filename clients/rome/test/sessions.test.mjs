// Sessions: continued by channel thread key and by id, forks, one turn
// at a time per session, sessions side by side.

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { collect, gantry, text, userTexts } from "./harness.mjs";

const start = (messages) => messages.find((m) => m.type === "turn_start");
const answer = (messages) => messages.find((m) => m.type === "result")?.content;
const touch = (file) => ({ reply: { tool_calls: [{ name: "shell", arguments: { command: `touch ${file}` } }] } });

test("the same key continues its session, a sessionId resumes it, no key starts afresh", async (t) => {
  const { runner, requests } = await gantry(t, {
    steps: [text("one"), text("two"), text("three"), text("four")],
  });
  const first = await collect(runner.run({ agentName: "main", prompt: "remember 42", channelThreadKey: "tg:7" }));
  const second = await collect(runner.run({ agentName: "main", prompt: "what number?", channelThreadKey: "tg:7" }));
  const session = start(first).sessionId;
  assert.equal(start(second).sessionId, session);
  assert.deepEqual(userTexts((await requests())[1]), ["remember 42", "what number?"]);

  const byId = await collect(runner.run({ agentName: "main", prompt: "and now?", sessionId: session }));
  assert.equal(start(byId).sessionId, session);
  assert.equal(answer(byId), "three");
  assert.deepEqual(userTexts((await requests())[2]), ["remember 42", "what number?", "and now?"]);

  const fresh = await collect(runner.run({ agentName: "main", prompt: "hello" }));
  assert.notEqual(start(fresh).sessionId, session);
  assert.deepEqual(userTexts((await requests())[3]), ["hello"]);
});

test("a fork continues the source's conversation in a new session, without session_init", async (t) => {
  const { runner, requests, workspace } = await gantry(t, {
    steps: [text("noted"), touch("forked.txt"), text("recap: 42")],
  });
  const source = await collect(runner.run({ agentName: "main", prompt: "remember 42", channelThreadKey: "tg:9" }));
  const sessionId = start(source).sessionId;
  const fork = await collect(
    runner.runForked({ agentName: "main", sourceSessionId: sessionId, prompt: "recap", channelThreadKey: "tg:9" }),
  );
  const types = fork.map((m) => m.type);
  assert.equal(types[0], "turn_start");
  assert.notEqual(start(fork).sessionId, sessionId);
  assert.ok(!types.includes("session_init"));
  assert.deepEqual(types.slice(-2), ["result", "turn_end"]);
  assert.equal(answer(fork), "recap: 42");
  assert.deepEqual(userTexts((await requests())[1]), ["remember 42", "recap"]);
  // Isolated (the default): the fork may only answer; its tool call is refused.
  const result = fork.find((m) => m.type === "tool_result");
  assert.match(JSON.stringify(result.output), /denied/);
  assert.equal(existsSync(join(workspace, "forked.txt")), false);

  // The source must exist under the same agent and key.
  await assert.rejects(
    collect(runner.runForked({ agentName: "main", sourceSessionId: sessionId, prompt: "x", channelThreadKey: "tg:other" })),
    (e) => e.status === 404 && /channel thread key `tg:other`/.test(e.message),
  );
  await assert.rejects(
    collect(runner.runForked({ agentName: "main", sourceSessionId: "nope", prompt: "x", channelThreadKey: "tg:9" })),
    (e) => e.status === 404 && /session `nope` not found/.test(e.message),
  );
});

test("an exact fork keeps the source's tools", async (t) => {
  const { runner, workspace } = await gantry(t, { steps: [text("noted"), touch("exact.txt"), text("done")] });
  const source = await collect(runner.run({ agentName: "main", prompt: "remember 42", channelThreadKey: "tg:3" }));
  const fork = await collect(
    runner.runForked({
      agentName: "main",
      sourceSessionId: start(source).sessionId,
      prompt: "go on",
      channelThreadKey: "tg:3",
      mode: "exact",
      label: "follow-up",
    }),
  );
  assert.equal(answer(fork), "done");
  assert.equal(existsSync(join(workspace, "exact.txt")), true);
});

test("two sessions run side by side; a busy session's next run waits its turn", async (t) => {
  const slow = { chunk_size: 2, delay_ms: 20 };
  const { runner, requests } = await gantry(t, {
    steps: [text("alpha alpha", slow), text("bravo bravo", slow), text("charlie", slow)],
  });
  const order = [];
  const run = async (key, prompt) => {
    const messages = [];
    for await (const m of runner.run({ agentName: "main", prompt, channelThreadKey: key })) {
      order.push(`${prompt}:${m.type}`);
      messages.push(m);
    }
    return messages;
  };
  const [a, b, a2] = await Promise.all([run("A", "a1"), run("B", "b1"), run("A", "a2")]);
  assert.notEqual(start(a).sessionId, start(b).sessionId);
  assert.equal(start(a).sessionId, start(a2).sessionId);
  for (const messages of [a, b, a2]) {
    assert.deepEqual(messages.at(-1).type, "turn_end");
    assert.equal(messages.at(-1).status, "completed");
  }
  const answers = [answer(a), answer(b), answer(a2)].sort();
  assert.deepEqual(answers, ["alpha alpha", "bravo bravo", "charlie"]);
  // One turn at a time on session A, whichever of its runs went first: the
  // second one's model request holds the first one's whole exchange. (The
  // order lines arrive in on two connections says nothing: each stream is
  // buffered on its own.)
  const second = (await requests()).find((r) => userTexts(r).length === 2);
  assert.ok(second, "a run of session A saw the other's turn");
  const firstAnswer = userTexts(second)[0] === "a1" ? answer(a) : answer(a2);
  assert.ok(JSON.stringify(second.body.messages).includes(firstAnswer), order.join(" "));
});
