/** Types for snappyjs (the package ships none): only the function etcetera uses. */
declare module 'snappyjs' {
  /** Decompresses raw Snappy data (throws on malformed input). */
  export function uncompress(compressed: Uint8Array, maxLength?: number): Uint8Array;
}
