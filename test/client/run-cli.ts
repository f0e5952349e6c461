/**
 * Runs an `etcetera` client command in this process, as the CLI would, and collects what it
 * prints: the one helper the CLI tests share.
 */
import { runClientCommand } from '../../src/cli/client.js';

export interface CliRun {
  code: number;
  out: string;
  err: string;
}

export async function runCli(args: readonly string[], stdin = ''): Promise<CliRun> {
  let out = '';
  let err = '';
  const code = await runClientCommand([...args], {
    stdout: (s) => {
      out += s;
    },
    stderr: (s) => {
      err += s;
    },
    readStdin: async () => stdin,
  });
  return { code, out, err };
}
