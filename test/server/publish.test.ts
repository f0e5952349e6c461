/**
 * A member answers clients only once its own publish is applied: three members as child
 * processes, member/list polled on every member from the first moment its client port
 * accepts a connection; in every answer, the answering member's own entry has its client
 * URLs (a client that discovers endpoints from the member list always finds this one).
 */
import { join } from 'node:path';
import t from 'tap';
import { ProcCluster } from './procs/cluster.js';
import { compileCli } from './procs/compile.js';
import { post } from './procs/http.js';

interface Listed {
  ID?: string;
  name?: string;
  clientURLs?: string[];
}

t.test('no member answers before its publish is applied', async (t) => {
  const cli = await compileCli();
  const c = await ProcCluster.launch(cli, join(t.testdir(), 'data'), ['a', 'b', 'c']);
  t.teardown(async () => {
    if (!t.passing()) t.comment(c.logs());
    await c.close();
  });
  const answers = new Map<string, number>();
  const bad: string[] = [];
  const deadline = Date.now() + 60_000;
  await Promise.all(
    [...c.members.values()].map(async (m) => {
      let answered = 0;
      while (answered < 5 && Date.now() < deadline) {
        const a = await post(m.client, '/v3/cluster/member/list', {}, 10_000);
        if (a.status === 0) {
          await new Promise((r) => setTimeout(r, 5)); // the port is not open yet
          continue;
        }
        if (a.status !== 200) {
          bad.push(`${m.name}: status ${a.status} ${JSON.stringify(a.body)}`);
          continue;
        }
        answered++;
        const self = (a.body.header as { member_id?: string }).member_id;
        const members = (a.body.members as Listed[] | undefined) ?? [];
        const mine = members.find((x) => x.ID === self);
        if (mine === undefined || (mine.clientURLs ?? []).length === 0)
          bad.push(`${m.name} answered without its own client URLs: ${JSON.stringify(members)}`);
        else if (!mine.clientURLs!.includes(m.client))
          bad.push(`${m.name} lists itself at ${mine.clientURLs!.join(',')}`);
      }
      answers.set(m.name, answered);
    }),
  );
  t.same(bad, [], 'every answer lists its own member with client URLs');
  for (const m of c.members.values()) t.equal(answers.get(m.name), 5, `${m.name} answered`);
});
