/**
 * The body of etcd's HTTP watch stream: concatenated JSON values, split as they arrive.
 */
import { StringDecoder } from 'node:string_decoder';
import { EtceteraError } from '../../../errors.js';

/**
 * Splits a byte stream into top-level JSON values (objects, or `null`), as the gateway reads a
 * client-streaming body: whitespace between them, nothing else. Each value is bounded by
 * `maxBytes` (ERR_REQUEST_TOO_LARGE).
 */
export class JsonSplitter {
  private readonly decoder = new StringDecoder('utf8');
  private buf = '';
  private depth = 0;
  private inString = false;
  private escaped = false;
  private scanned = 0;

  constructor(private readonly maxBytes: number) {}

  /** Whether the input so far ends between values. */
  atBoundary(): boolean {
    return this.depth === 0 && this.buf.trim() === '';
  }

  push(chunk: Buffer): string[] {
    this.buf += this.decoder.write(chunk);
    const out: string[] = [];
    let start = 0;
    let i = this.scanned;
    for (; i < this.buf.length; i++) {
      const ch = this.buf[i]!;
      if (this.depth > 0) {
        if (this.inString) {
          if (this.escaped) this.escaped = false;
          else if (ch === '\\') this.escaped = true;
          else if (ch === '"') this.inString = false;
        } else if (ch === '"') this.inString = true;
        else if (ch === '{' || ch === '[') this.depth++;
        else if ((ch === '}' || ch === ']') && --this.depth === 0) {
          out.push(this.buf.slice(start, i + 1));
          start = i + 1;
        }
        continue;
      }
      // Between values: whitespace, the next object, or `null` (an empty request).
      if (ch === ' ' || ch === '\n' || ch === '\r' || ch === '\t') start = i + 1;
      else if (ch === '{') {
        start = i;
        this.depth = 1;
      } else if (this.buf.startsWith('null', i)) {
        out.push('null');
        i += 3;
        start = i + 1;
      } else if ('null'.startsWith(this.buf.slice(i)))
        break; // the rest may come next chunk
      else {
        throw new EtceteraError('ERR_MALFORMED_JSON', {
          detail: `invalid character ${JSON.stringify(ch)} looking for beginning of value`,
        });
      }
    }
    this.buf = this.buf.slice(start);
    this.scanned = this.depth > 0 ? i - start : 0;
    if (Buffer.byteLength(this.buf) > this.maxBytes)
      throw new EtceteraError('ERR_REQUEST_TOO_LARGE');
    return out;
  }
}
