// A minimal MCP server over stdio (newline-delimited JSON-RPC), no
// dependencies: one tool, `echo`, that answers its `text` reversed, so a
// test can tell the server really ran it. The ACP client gives it to
// `session/new`; Gantry starts it and offers its tool to the model.
import { createInterface } from "node:readline";

const send = (msg) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...msg }) + "\n");

createInterface({ input: process.stdin }).on("line", (line) => {
  if (!line.trim()) return;
  const msg = JSON.parse(line);
  if (msg.id === undefined) return; // notifications need no answer
  switch (msg.method) {
    case "initialize":
      return send({
        id: msg.id,
        result: {
          protocolVersion: msg.params.protocolVersion,
          capabilities: { tools: {} },
          serverInfo: { name: "acp-conformance", version: "1.0.0" },
        },
      });
    case "tools/list":
      return send({
        id: msg.id,
        result: {
          tools: [
            {
              name: "echo",
              description: "Answers the text reversed.",
              inputSchema: {
                type: "object",
                properties: { text: { type: "string" } },
                required: ["text"],
              },
            },
          ],
        },
      });
    case "tools/call": {
      const text = String(msg.params.arguments?.text ?? "");
      return send({
        id: msg.id,
        result: { content: [{ type: "text", text: [...text].reverse().join("") }] },
      });
    }
    case "ping":
      return send({ id: msg.id, result: {} });
    default:
      return send({ id: msg.id, error: { code: -32601, message: `no method ${msg.method}` } });
  }
});
