#!/usr/bin/env node
import { Command, CommanderError } from "commander";
import { addCheckCommand } from "./check-command.js";
import { fail, messageOf } from "./fail.js";
import { packageVersion } from "./package-version.js";
import { addPruneCommand } from "./prune-command.js";
import { addEraseCommand } from "./erase-command.js";
import { addServeCommand } from "./serve-command.js";

const program = new Command("tidemark")
  .description("Agent runs whose Stop, disconnect and resume are honest.")
  .version(packageVersion(), "-V, --version", "print the version")
  // Set before the commands are added, which inherit it: a usage error exits 2, never 1 (check's "violation found").
  .exitOverride();
addServeCommand(program);
addCheckCommand(program);
addPruneCommand(program);
addEraseCommand(program);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  // Commander has printed its own message (or the help, or the version).
  if (error instanceof CommanderError) process.exit(error.exitCode === 0 ? 0 : 2);
  fail(messageOf(error));
}
