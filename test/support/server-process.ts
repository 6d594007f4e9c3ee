/** Runs `tidemark serve` (the built CLI) as a real child process. */
import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";

export const CLI = fileURLToPath(new URL("../../dist/cli/main.js", import.meta.url));

/** A free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.once("error", reject);
  });
}

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  /** Resolves with the exit code (or signal) once the process ended. */
  exited: Promise<number | string>;
}

/** Starts the CLI's `serve` and resolves once it says it is serving. */
export async function startServerProcess(options: {
  dbPath: string;
  port: number;
  env?: Record<string, string>;
  /** More `serve` arguments (e.g. `--role worker`). */
  args?: string[];
}): Promise<ServerProcess> {
  const args = [CLI, "serve", "--port", String(options.port), "--db", options.dbPath, ...(options.args ?? [])];
  const child = spawn(process.execPath, args, {
    env: { ...process.env, ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exited = new Promise<number | string>((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal ?? "unknown")));
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    let stdout = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      if (stdout.includes("Tidemark serving")) resolve();
    });
    void exited.then((code) => reject(new Error(`server exited (${code}) before serving: ${stderr.slice(-2000)}`)));
  });
  return { url: `http://127.0.0.1:${options.port}`, child, exited };
}

/** Runs the CLI with `args` to its end. */
export async function runCli(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ["ignore", "pipe", "pipe"], env });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number>((resolve) => child.once("exit", (exitCode) => resolve(exitCode ?? -1)));
  return { code, stdout, stderr };
}

/** Runs the CLI with `args` to its end in the directory `cwd` (where `serve` looks for `tidemark.config.*`). */
export async function runCliIn(cwd: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...args], { cwd, stdio: ["ignore", "pipe", "pipe"], env });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number>((resolve) => child.once("exit", (exitCode) => resolve(exitCode ?? -1)));
  return { code, stdout, stderr };
}
