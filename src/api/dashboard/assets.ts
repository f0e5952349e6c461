/**
 * The dashboard's static files: the page, its script and style (`assets/` beside this module;
 * the build copies them next to the compiled code) and uPlot's browser build, read from the
 * `uplot` package the member depends on. Nothing comes from a CDN. Files are read once and
 * kept in memory; only the names in ASSETS are ever served.
 */
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const own = (name: string) => fileURLToPath(new URL(`./assets/${name}`, import.meta.url));
const fromPackage = (spec: string) => createRequire(import.meta.url).resolve(spec);

/** Served name → [content type, where the file is]. */
const ASSETS: Record<string, readonly [string, () => string]> = {
  'index.html': ['text/html; charset=utf-8', () => own('index.html')],
  'dashboard.js': ['text/javascript; charset=utf-8', () => own('dashboard.js')],
  'plots.js': ['text/javascript; charset=utf-8', () => own('plots.js')],
  'dashboard.css': ['text/css; charset=utf-8', () => own('dashboard.css')],
  'uPlot.iife.min.js': [
    'text/javascript; charset=utf-8',
    () => fromPackage('uplot/dist/uPlot.iife.min.js'),
  ],
  'uPlot.min.css': ['text/css; charset=utf-8', () => fromPackage('uplot/dist/uPlot.min.css')],
};

const cache = new Map<string, Promise<Buffer>>();

/** An asset's bytes and content type, or undefined for a name that is not one. */
export async function asset(name: string): Promise<{ type: string; body: Buffer } | undefined> {
  const entry = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
  if (entry === undefined) return undefined;
  let body = cache.get(name);
  if (body === undefined) {
    body = readFile(entry[1]());
    cache.set(name, body);
    body.catch(() => cache.delete(name));
  }
  return { type: entry[0], body: await body };
}

/**
 * What a self-contained HTML page needs to draw the dashboard's plots without a server:
 * uPlot's style and script and the shared plotting code (plots.js), inlined. The fan-out
 * benchmark's report uses it (read synchronously: a report is written once).
 */
export function inlinePlotting(): string {
  const text = (name: string) => readFileSync(ASSETS[name]![1](), 'utf8');
  // A script's text must not close its own element.
  const safe = (s: string) => s.replace(/<\/(script)/gi, '<\\/$1');
  return [
    `<style>${text('uPlot.min.css')}</style>`,
    `<script>${safe(text('uPlot.iife.min.js'))}</script>`,
    `<script>${safe(text('plots.js'))}</script>`,
  ].join('\n');
}
