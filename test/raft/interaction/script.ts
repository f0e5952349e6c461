/**
 * The script format of test/raft/testdata/*.txt:
 *
 *   # comments (kept on rewrite)
 *   command arg arg key=value
 *   ----
 *   expected output, one or more lines
 *   (a blank line ends the block)
 */
import type { Command } from './env.js';

export interface Block {
  readonly comments: string[];
  readonly line: number;
  readonly text: string;
  readonly command: Command;
  readonly expected: string;
}

export function parseCommand(text: string): Command {
  const [name = '', ...rest] = text.trim().split(/\s+/);
  const args: string[] = [];
  const opts = new Map<string, string>();
  for (const r of rest) {
    const eq = r.indexOf('=');
    if (eq > 0) opts.set(r.slice(0, eq), r.slice(eq + 1));
    else args.push(r);
  }
  return { name, args, opts };
}

export function parseScript(src: string): Block[] {
  const lines = src.split('\n');
  const blocks: Block[] = [];
  let comments: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!;
    if (l.trim() === '') continue;
    if (l.startsWith('#')) {
      comments.push(l);
      continue;
    }
    if (lines[i + 1] !== '----') throw new Error(`line ${i + 2}: expected ---- after "${l}"`);
    const out: string[] = [];
    let j = i + 2;
    while (j < lines.length && lines[j]!.trim() !== '') out.push(lines[j++]!);
    blocks.push({
      comments,
      line: i + 1,
      text: l,
      command: parseCommand(l),
      expected: out.join('\n'),
    });
    comments = [];
    i = j;
  }
  return blocks;
}

export function formatScript(
  blocks: ReadonlyArray<{ comments: string[]; text: string }>,
  outputs: string[],
): string {
  const parts = blocks.map((b, k) => [...b.comments, b.text, '----', outputs[k]!].join('\n'));
  return `${parts.join('\n\n')}\n`;
}
