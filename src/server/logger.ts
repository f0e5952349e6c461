/**
 * The member's logger: pino, JSON lines on stdout (or a given stream), one line per event
 * that matters to an operator (started, elected, member added or removed, compaction, slow
 * apply, stopped). Every line carries the member's name.
 */
import { type Logger, pino } from 'pino';
import type { LogLevel } from './config.js';

export type { Logger } from 'pino';

export interface LoggerOptions {
  level: LogLevel;
  name: string;
  /** Where lines go. Default: stdout. */
  destination?: NodeJS.WritableStream;
}

export function createLogger(o: LoggerOptions): Logger {
  const options = {
    level: o.level,
    base: { member: o.name },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return o.destination === undefined
    ? pino(options)
    : pino(options, o.destination as unknown as pino.DestinationStream);
}

/** A logger that drops everything (embedding and tests). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
