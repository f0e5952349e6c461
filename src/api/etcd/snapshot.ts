/**
 * POST /v3/maintenance/snapshot, as etcd's gateway streams Maintenance.Snapshot: one
 * `{"result":{"header":..., "remaining_bytes":"N", "blob":"<base64>"}}` line per 32 KiB of the
 * member's snapshot (etcd's bbolt format, src/server/etcd-snapshot.ts), then a last line whose
 * blob is the SHA-256 of every byte sent. Built as it is sent: each line waits for the socket
 * to drain, and a client that goes away stops the build and releases the store's snapshot.
 * A failure once the stream has started ends it with a gateway `{"error": ...}` line.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { EtceteraError } from '../../errors.js';
import type { MemberApi } from '../../server/types.js';
import { encodeHeader } from '../../wire/etcd-json.js';
import { parseJson, readBody } from '../body.js';
import { sendError, streamChunk, streamErrorChunk } from '../respond.js';
import { decodeEmpty } from './decode.js';

export const SNAPSHOT_PATH = '/v3/maintenance/snapshot';
const CHUNK = 32 * 1024;

export async function serveSnapshot(
  req: IncomingMessage,
  res: ServerResponse,
  member: MemberApi,
  bodyLimit: number,
  bodyTimeoutMs?: number,
): Promise<void> {
  let snap: Awaited<ReturnType<NonNullable<MemberApi['maintenance']>['snapshot']>>;
  try {
    decodeEmpty(parseJson(await readBody(req, bodyLimit, bodyTimeoutMs)));
    if (member.maintenance === undefined)
      throw new EtceteraError('ERR_GRPC_UNIMPLEMENTED', { detail: 'this member has no snapshot' });
    snap = await member.maintenance.snapshot();
  } catch (err) {
    if (!res.destroyed) sendError(res, err, req.complete ? {} : { Connection: 'close' });
    return;
  }
  let gone = false;
  res.once('close', () => {
    gone = true;
  });
  const header = encodeHeader(snap.header);
  const digest = createHash('sha256');
  let sent = 0;
  const line = async (text: string) => {
    if (res.write(text)) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        res.off('drain', done);
        res.off('close', done);
        resolve();
      };
      res.once('drain', done);
      res.once('close', done);
    });
  };
  res.writeHead(200, { 'Content-Type': 'application/json' });
  try {
    for await (const chunk of snap.chunks) {
      for (let at = 0; at < chunk.length && !gone; at += CHUNK) {
        const blob = chunk.subarray(at, Math.min(chunk.length, at + CHUNK));
        sent += blob.length;
        digest.update(blob);
        await line(
          streamChunk({
            header,
            remaining_bytes: String(snap.size - sent),
            blob: Buffer.from(blob).toString('base64'),
          }),
        );
      }
      if (gone) break;
    }
    if (gone) return;
    await line(streamChunk({ header, blob: digest.digest().toString('base64') }));
    res.end();
  } catch (err) {
    if (!gone) res.end(streamErrorChunk(err).text);
  } finally {
    await snap.chunks.return(undefined);
  }
}
