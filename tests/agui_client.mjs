// Drives reactgraph's POST /agui with the official AG-UI client (@ag-ui/client's HttpAgent),
// as a front end would. Used by tests/integration/test_agui_client.py.
//
// Usage: node agui_client.mjs '<json>' where the JSON holds
//   clientDir  a directory whose node_modules holds @ag-ui/client
//   url        the endpoint (http://127.0.0.1:PORT/agui)
//   threadId, runId, messages (AG-UI messages), token (optional bearer key),
//   resume     (optional ResumeEntry list for a run paused on approval)
// Prints one JSON line per event the client received and applied ({"event": ...}), then
// {"result": ..., "messages": [...], "interrupts": [...]} or {"error": "..."}.
import { createRequire } from "node:module";
import { join } from "node:path";

const config = JSON.parse(process.argv[2]);
const require = createRequire(join(config.clientDir, "package.json"));
const { HttpAgent } = require("@ag-ui/client");

const print = (value) => process.stdout.write(JSON.stringify(value) + "\n");

const agent = new HttpAgent({
  url: config.url,
  threadId: config.threadId,
  initialMessages: config.messages,
  headers: config.token ? { Authorization: `Bearer ${config.token}` } : {},
});

try {
  const params = { runId: config.runId };
  if (config.resume) params.resume = config.resume;
  const { result } = await agent.runAgent(params, {
    onEvent({ event }) {
      print({ event });
    },
  });
  print({ result: result ?? null, messages: agent.messages, interrupts: agent.pendingInterrupts ?? [] });
} catch (error) {
  print({ error: String(error && error.message ? error.message : error), status: error?.status ?? null });
}
