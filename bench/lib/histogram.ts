/**
 * Latency histograms for benchmarks that record in several processes: each process records
 * microseconds into its own hdr histogram, ships it as compressed base64 over IPC, and the
 * parent adds them up before reading percentiles (percentiles of the union, not averages of
 * percentiles).
 */
import * as hdr from 'hdr-histogram-js';

/** Microseconds, 1 µs to 10 minutes at 3 significant digits. */
export function latencyHistogram(): hdr.Histogram {
  return hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 600_000_000,
    numberOfSignificantValueDigits: 3,
  });
}

export function encodeHistogram(h: hdr.Histogram): string {
  return hdr.encodeIntoCompressedBase64(h);
}

/** The sum of encoded histograms (an empty one when there are none). */
export function mergeHistograms(encoded: readonly string[]): hdr.Histogram {
  const total = latencyHistogram();
  for (const e of encoded) total.add(hdr.decodeFromCompressedBase64(e));
  return total;
}

/** Percentiles in milliseconds. */
export interface LatencySummaryMs {
  count: number;
  p50: number;
  p99: number;
  p999: number;
  max: number;
}

export function summarizeMs(h: hdr.Histogram): LatencySummaryMs {
  const ms = (us: number) => Math.round(us) / 1000;
  return {
    count: h.totalCount,
    p50: ms(h.getValueAtPercentile(50)),
    p99: ms(h.getValueAtPercentile(99)),
    p999: ms(h.getValueAtPercentile(99.9)),
    max: ms(h.maxValue),
  };
}

/** Records a value, clamped into the histogram's range (a bad stamp must not throw mid-run). */
export function recordClamped(h: hdr.Histogram, us: number): void {
  h.recordValue(Math.min(Math.max(us, 1), 600_000_000));
}
