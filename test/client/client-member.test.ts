/** The client suite (suite.ts) against a real member (src/server) on loopback. */
import t from 'tap';
import { startMember } from '../api/servers.js';
import { clientSuite } from './suite.js';

clientSuite(t, (dir) => startMember(dir), { transport: 'json' });
