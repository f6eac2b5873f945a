// An ACP client on the official TypeScript SDK (@agentclientprotocol/sdk): starts the
// agent command it is given (tron acp, as Zed does), creates a session, sends one prompt,
// allows the permission asked, and prints what it saw as one JSON object.
//
//   ACP_SDK=<the package folder> node ts_client.mjs <cwd> <command> [args...]
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";
import path from "node:path";

const sdk = await import(pathToFileURL(path.join(process.env.ACP_SDK, "dist/v1/stable/acp.js")).href);
const [cwd, command, ...args] = process.argv.slice(2);
const agent = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"], env: process.env });
const stream = sdk.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));

const updates = [];
const permissions = [];
const app = sdk
  .client({ name: "ts-tests" })
  .onNotification(sdk.methods.client.session.update, ({ params }) => {
    updates.push(params.update);
  })
  .onRequest(sdk.methods.client.session.requestPermission, ({ params }) => {
    permissions.push(params);
    const allow = params.options.find((o) => o.kind === "allow_once");
    return { outcome: { outcome: "selected", optionId: allow.optionId } };
  });

const result = await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request(sdk.methods.agent.initialize, {
    protocolVersion: sdk.PROTOCOL_VERSION ?? 1,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false } },
    clientInfo: { name: "ts-tests", version: "1" },
  });
  const session = await ctx.request(sdk.methods.agent.session.new, { cwd, mcpServers: [] });
  const answer = await ctx.request(sdk.methods.agent.session.prompt, {
    sessionId: session.sessionId,
    prompt: [{ type: "text", text: "write the file" }],
  });
  const listed = await ctx.request(sdk.methods.agent.session.list, { cwd });
  return { init, session, answer, listed };
});
agent.stdin.end();
const code = await new Promise((resolve) => agent.on("exit", (c) => resolve(c)));
process.stdout.write(JSON.stringify({ ...result, updates, permissions, exitCode: code }) + "\n");
