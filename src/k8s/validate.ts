/**
 * Validation of an object about to be stored: its metadata (names, labels, annotations,
 * finalizers, owner references; names.ts) and its kind's own rules (built-in checks or a
 * CRD's schema). Any error is one 422 Invalid with a cause per field.
 */
import { invalidObject } from './errors.js';
import type { FieldError } from './field-errors.js';
import {
  type NameValidator,
  nameIsDns1035Label,
  nameIsDnsLabel,
  nameIsDnsSubdomain,
  validateObjectMeta,
} from './names.js';
import type { KubeObject, NameRule, ResourceInfo } from './types.js';

const NAME_RULES: Record<NameRule, NameValidator> = {
  subdomain: nameIsDnsSubdomain,
  label: nameIsDnsLabel,
  dns1035: nameIsDns1035Label,
};

export function nameValidator(info: ResourceInfo): NameValidator {
  return NAME_RULES[info.nameRule];
}

/** The field errors of an object (empty when it may be stored). */
export function objectErrors(
  info: ResourceInfo,
  obj: KubeObject,
  old: KubeObject | undefined,
): FieldError[] {
  const errs = validateObjectMeta(obj.metadata as Record<string, unknown>, {
    namespaced: info.scope === 'Namespaced',
    name: nameValidator(info),
  });
  if (info.validate) errs.push(...info.validate(obj, old));
  return errs;
}

/** Throws 422 Invalid when the object may not be stored. */
export function validateObject(
  info: ResourceInfo,
  obj: KubeObject,
  old: KubeObject | undefined,
): void {
  const errs = objectErrors(info, obj, old);
  if (errs.length > 0) throw invalidObject(info.group, info.kind, obj.metadata.name ?? '', errs);
}
