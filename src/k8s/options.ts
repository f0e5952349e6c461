/**
 * Checks of the write query parameters (fieldManager, force, dryRun, fieldValidation) as
 * kube-apiserver makes them before touching the object. A failure is the 422 Kubernetes
 * sends: `PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required
 * for apply patch` (CreateOptions / UpdateOptions for the other verbs).
 */
import { invalidObject } from './errors.js';
import {
  type FieldError,
  forbidden,
  invalid,
  notSupported,
  required,
  tooLong,
} from './field-errors.js';

export const FIELD_MANAGER_MAX_LENGTH = 128;

export type PatchKind = 'json' | 'merge' | 'strategic' | 'apply';

export interface WriteOptions {
  fieldManager?: string | undefined;
  /** The `force` query parameter as sent (only apply may carry it). */
  force?: string | boolean | undefined;
  /** Every `dryRun` value sent. */
  dryRun?: readonly string[] | undefined;
  fieldValidation?: string | undefined;
}

function fieldManagerErrors(m: string | undefined): FieldError[] {
  if (m === undefined) return [];
  const errs: FieldError[] = [];
  if (Buffer.byteLength(m) > FIELD_MANAGER_MAX_LENGTH)
    errs.push(tooLong('fieldManager', FIELD_MANAGER_MAX_LENGTH));
  let i = 0;
  for (const ch of m) {
    const cp = ch.codePointAt(0) ?? 0;
    if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) {
      const hex = cp.toString(16).toUpperCase().padStart(4, '0');
      errs.push(invalid('fieldManager', m, `invalid character U+${hex} (at position ${i})`));
    }
    i += Buffer.byteLength(ch);
  }
  return errs;
}

function commonErrors(o: WriteOptions): FieldError[] {
  const errs = fieldManagerErrors(o.fieldManager);
  const dry = o.dryRun ?? [];
  if (dry.some((d) => d !== 'All')) errs.push(notSupported('dryRun', [...dry], ['All']));
  const fv = o.fieldValidation;
  if (fv !== undefined && !['', 'Ignore', 'Strict', 'Warn'].includes(fv)) {
    errs.push(notSupported('fieldValidation', fv, ['', 'Ignore', 'Strict', 'Warn']));
  }
  return errs;
}

export function validatePatchOptions(kind: PatchKind, o: WriteOptions): void {
  const errs: FieldError[] = [];
  if (kind === 'apply') {
    if (!o.fieldManager) errs.push(required('fieldManager', 'is required for apply patch'));
  } else if (o.force !== undefined) {
    errs.push(forbidden('force', 'may not be specified for non-apply patch'));
  }
  errs.push(...commonErrors(o));
  if (errs.length > 0) throw invalidObject('meta.k8s.io', 'PatchOptions', '', errs);
}

export function validateCreateOptions(o: WriteOptions): void {
  const errs = commonErrors(o);
  if (errs.length > 0) throw invalidObject('meta.k8s.io', 'CreateOptions', '', errs);
}

export function validateUpdateOptions(o: WriteOptions): void {
  const errs = commonErrors(o);
  if (errs.length > 0) throw invalidObject('meta.k8s.io', 'UpdateOptions', '', errs);
}
