// An ACP client on the official TypeScript SDK that advertises `terminal`: it runs each
// terminal/create command for real (as an editor's terminal does), sends one prompt,
// allows what is asked, waits for the terminals to be released, and prints what it saw.
//
//   ACP_SDK=<the package folder> node ts_terminal_client.mjs <cwd> <command> [args...]
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";
import path from "node:path";

const sdk = await import(pathToFileURL(path.join(process.env.ACP_SDK, "dist/v1/stable/acp.js")).href);
const [cwd, command, ...args] = process.argv.slice(2);
const agent = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"], env: process.env });
const stream = sdk.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));

const updates = [];
const terminals = {};
const released = [];
const app = sdk
  .client({ name: "ts-tests" })
  .onNotification(sdk.methods.client.session.update, ({ params }) => {
    updates.push(params.update);
  })
  .onRequest(sdk.methods.client.session.requestPermission, ({ params }) => {
    const allow = params.options.find((o) => o.kind === "allow_once");
    return { outcome: { outcome: "selected", optionId: allow.optionId } };
  })
  .onRequest(sdk.methods.client.terminal.create, ({ params }) => {
    const id = `ts-term-${Object.keys(terminals).length + 1}`;
    const child = spawn(params.command, params.args ?? [], { cwd: params.cwd, stdio: ["ignore", "pipe", "pipe"] });
    const t = { command: params.command, args: params.args ?? [], output: "", exitCode: null, child };
    t.exited = new Promise((resolve) => child.on("exit", (c) => { t.exitCode = c; resolve(c); }));
    child.stdout.on("data", (d) => { t.output += d.toString(); });
    child.stderr.on("data", (d) => { t.output += d.toString(); });
    terminals[id] = t;
    return { terminalId: id };
  })
  .onRequest(sdk.methods.client.terminal.output, ({ params }) => {
    const t = terminals[params.terminalId];
    return { output: t.output, truncated: false, exitStatus: t.exitCode === null ? null : { exitCode: t.exitCode } };
  })
  .onRequest(sdk.methods.client.terminal.waitForExit, async ({ params }) => {
    return { exitCode: await terminals[params.terminalId].exited };
  })
  .onRequest(sdk.methods.client.terminal.kill, ({ params }) => {
    terminals[params.terminalId].child.kill();
    return {};
  })
  .onRequest(sdk.methods.client.terminal.release, ({ params }) => {
    released.push(params.terminalId);
    return {};
  });

const result = await app.connectWith(stream, async (ctx) => {
  await ctx.request(sdk.methods.agent.initialize, {
    protocolVersion: sdk.PROTOCOL_VERSION ?? 1,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: true },
    clientInfo: { name: "ts-tests", version: "1" },
  });
  const session = await ctx.request(sdk.methods.agent.session.new, { cwd, mcpServers: [] });
  const answer = await ctx.request(sdk.methods.agent.session.prompt, {
    sessionId: session.sessionId,
    prompt: [{ type: "text", text: "run it" }],
  });
  for (let i = 0; i < 300 && released.length < Object.keys(terminals).length; i++) {
    await new Promise((r) => setTimeout(r, 100));
  }
  return { answer };
});
agent.stdin.end();
const code = await new Promise((resolve) => agent.on("exit", (c) => resolve(c)));
const shown = Object.fromEntries(
  Object.entries(terminals).map(([id, t]) => [id, { command: t.command, args: t.args, output: t.output, exitCode: t.exitCode }]),
);
process.stdout.write(JSON.stringify({ ...result, updates, terminals: shown, released, exitCode: code }) + "\n");
