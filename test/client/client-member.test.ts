/** The client suite (suite.ts) against a real member (src/server) on loopback, over gRPC and JSON. */
import t from 'tap';
import { startMember } from '../api/servers.js';
import { clientSuite } from './suite.js';

t.test('over gRPC', async (t) => {
  clientSuite(t, (dir) => startMember(dir), { transport: 'grpc' });
});

t.test('over the JSON API', async (t) => {
  clientSuite(t, (dir) => startMember(dir), { transport: 'json' });
});
