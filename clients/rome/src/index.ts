/**
 * Rome OS's `AgentRunnerInterface` backed by a Gantry server
 * (`gantry serve --rome-addr HOST:PORT`): each run is one HTTP request
 * whose answer streams Rome's `AgentMessage`s, one JSON object per line.
 * Node's built-in `fetch` only; `@rome-os/app-runtime` gives the types.
 */

import type {
  AgentMessage,
  AgentRunnerInterface,
  ForkRunParams,
  RunParams,
} from "@rome-os/app-runtime";

/** Where the Gantry server is and how to authenticate; every field may be
 * left out. */
export interface RunnerOptions {
  /** The server's base URL; else `GANTRY_ROME_URL`, else
   * `http://127.0.0.1:8788` (`gantry serve --rome-addr`'s usual address). */
  url?: string;
  /** The bearer token of `--rome-token-file`; else `GANTRY_ROME_TOKEN`, if set. */
  token?: string;
}

/** Where a runner goes when its options name no URL. */
export const DEFAULT_URL = "http://127.0.0.1:8788";

/** A variable of the environment, unless unset or empty. */
function fromEnv(name: string): string | undefined {
  const value = process.env[name];
  return value === undefined || value === "" ? undefined : value;
}

/** What a run may carry beyond Rome's parameters. */
export interface Interruptible {
  /** Aborting it interrupts the turn: the stream then ends with
   * `turn_end` status `interrupted`. */
  signal?: AbortSignal;
}

/** A run's parameters, with an optional `signal`. */
export type GantryRunParams = RunParams & Interruptible;

/** A fork's parameters, with an optional `signal`. */
export type GantryForkRunParams = ForkRunParams & Interruptible;

/** Rome's runner over a Gantry server: all four members. */
export interface GantryRunner extends AgentRunnerInterface {
  run(params: GantryRunParams): AsyncIterable<AgentMessage>;
  runForked(params: GantryForkRunParams): AsyncIterable<AgentMessage>;
  hasAgent(name: string): Promise<boolean>;
  hasAction(agentName: string, actionName: string): Promise<boolean>;
}

/** The server refused a request (an unknown agent or session, a bad
 * request, a wrong token): `status` is the HTTP status. */
export class GantryRunnerError extends Error {
  readonly status: number;

  constructor(message: string, status: number) {
    super(message);
    this.name = "GantryRunnerError";
    this.status = status;
  }
}

/** A runner for the Gantry server at `options.url` (see `RunnerOptions`
 * for what a missing option becomes). */
export function createRunner(options: RunnerOptions = {}): GantryRunner {
  const url = options.url ?? fromEnv("GANTRY_ROME_URL") ?? DEFAULT_URL;
  const token = options.token ?? fromEnv("GANTRY_ROME_TOKEN");
  const base = url.replace(/\/+$/, "");
  const headers = (json: boolean): Record<string, string> => {
    const h: Record<string, string> = {};
    if (json) h["content-type"] = "application/json";
    if (token !== undefined) h["authorization"] = `Bearer ${token}`;
    return h;
  };

  const interrupt = async (turnId: string): Promise<void> => {
    const res = await fetch(`${base}/v1/rome/turns/${encodeURIComponent(turnId)}/interrupt`, {
      method: "POST",
      headers: headers(false),
    });
    // A turn that ended meanwhile is not running any more: nothing to do.
    await res.body?.cancel();
  };

  async function* stream(
    path: string,
    body: object,
    signal: AbortSignal | undefined,
  ): AsyncGenerator<AgentMessage> {
    signal?.throwIfAborted();
    const connection = new AbortController();
    const res = await fetch(`${base}${path}`, {
      method: "POST",
      headers: headers(true),
      body: JSON.stringify(body),
      signal: connection.signal,
    });
    if (!res.ok || res.body === null) {
      throw await refusal(res, path);
    }
    let turnId: string | undefined;
    let ended = false;
    let stopping: Promise<void> | undefined;
    // Interrupts once the turn is known; the server then ends it and
    // streams its `turn_end`.
    const stop = (): void => {
      if (stopping === undefined && turnId !== undefined && !ended) {
        stopping = interrupt(turnId).catch(() => connection.abort());
      }
    };
    let stopWanted = false;
    const onAbort = (): void => {
      stopWanted = true;
      stop();
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      for await (const message of messages(res.body)) {
        if (message.type === "turn_start") {
          turnId = message.turnId;
          if (stopWanted) stop();
        }
        if (message.type === "turn_end") ended = true;
        yield message;
        if (ended) break;
      }
    } finally {
      signal?.removeEventListener("abort", onAbort);
      if (!ended) {
        // Left early (`break`, `return()`, a throw): the turn stops too.
        stop();
        await stopping;
      }
      connection.abort();
    }
  }

  return {
    run(params: GantryRunParams): AsyncIterable<AgentMessage> {
      const { signal, ...run } = params;
      return stream("/v1/rome/run", run, signal);
    },

    runForked(params: GantryForkRunParams): AsyncIterable<AgentMessage> {
      const { signal, ...fork } = params;
      return stream("/v1/rome/fork", fork, signal);
    },

    async hasAgent(name: string): Promise<boolean> {
      const res = await fetch(`${base}/v1/rome/agents/${encodeURIComponent(name)}`, {
        headers: headers(false),
      });
      if (res.status === 404) {
        await res.body?.cancel();
        return false;
      }
      if (!res.ok) throw await refusal(res, "hasAgent");
      await res.body?.cancel();
      return true;
    },

    async hasAction(agentName: string, actionName: string): Promise<boolean> {
      const path = `/v1/rome/agents/${encodeURIComponent(agentName)}/actions/${encodeURIComponent(actionName)}`;
      const res = await fetch(`${base}${path}`, { headers: headers(false) });
      if (res.status === 404) {
        await res.body?.cancel();
        return false;
      }
      if (!res.ok) throw await refusal(res, "hasAction");
      const answer = (await res.json()) as { allowed?: unknown };
      return answer.allowed === true;
    },
  };
}

/** The error a refused request is thrown as, with the server's reason. */
async function refusal(res: Response, what: string): Promise<GantryRunnerError> {
  const text = await res.text().catch(() => "");
  let reason = text;
  try {
    const parsed = JSON.parse(text) as { error?: unknown };
    if (typeof parsed.error === "string") reason = parsed.error;
  } catch {
    // Not JSON (axum's body errors are text): the text says it.
  }
  return new GantryRunnerError(`gantry ${what}: ${res.status}: ${reason || res.statusText}`, res.status);
}

/** The NDJSON body as messages; blank lines (the server's heartbeat) skipped. */
async function* messages(body: ReadableStream<Uint8Array>): AsyncGenerator<AgentMessage> {
  const decoder = new TextDecoder();
  let pending = "";
  for await (const chunk of body) {
    pending += decoder.decode(chunk, { stream: true });
    let newline: number;
    while ((newline = pending.indexOf("\n")) >= 0) {
      const line = pending.slice(0, newline).trim();
      pending = pending.slice(newline + 1);
      if (line !== "") yield JSON.parse(line) as AgentMessage;
    }
  }
  const rest = (pending + decoder.decode()).trim();
  if (rest !== "") yield JSON.parse(rest) as AgentMessage;
}
