/** Types for hpack.js (the package ships none): only its representation-level decoder. */
declare module 'hpack.js' {
  interface OffsetBuffer {
    size: number;
    peekUInt8(): number;
  }
  interface Decoder {
    buffer: OffsetBuffer;
    push(chunk: Buffer): void;
    isEmpty(): boolean;
    decodeBit(): number;
    /** An integer whose prefix is the rest of the current octet. */
    decodeInt(): number;
    /** A string literal: a Buffer (plain) or an array of octets (Huffman-decoded). */
    decodeStr(): Buffer | number[];
  }
  const hpack: { decoder: { create(): Decoder } };
  export default hpack;
}
