// A Rome host's use of the runner: type-checked against each supported
// @rome-os/app-runtime (check/tsconfig.*.json map the package to one).
import type {
  AgentMessage,
  AgentRunnerInterface,
  ForkRunParams,
  RunParams,
} from "@rome-os/app-runtime";
import { createRunner, type GantryRunner } from "@gantry/rome-runner";

const runner: GantryRunner = createRunner({ url: "http://127.0.0.1:8788", token: "t" });
// What a host hands to apps as `agentRunner`.
const agentRunner: AgentRunnerInterface = runner;

export async function reply(params: RunParams): Promise<string> {
  let answer = "";
  for await (const message of agentRunner.run(params)) {
    const m: AgentMessage = message;
    if (m.type === "text_delta") answer += m.content;
    if (m.type === "result") return m.content;
    if (m.type === "error") throw new Error(m.error);
  }
  return answer;
}

export async function recap(params: ForkRunParams): Promise<void> {
  if (agentRunner.runForked === undefined) return;
  for await (const message of agentRunner.runForked(params)) {
    if (message.type === "turn_end") console.log(message.status, message.durationMs);
  }
}

export async function routed(agent: string): Promise<boolean> {
  const has = agentRunner.hasAgent ? await agentRunner.hasAgent(agent) : true;
  const can = agentRunner.hasAction ? await agentRunner.hasAction(agent, "shell") : false;
  return has && can;
}

export function stoppable(params: RunParams): AsyncIterable<AgentMessage> {
  return runner.run({ ...params, signal: AbortSignal.timeout(1000) });
}
