/**
 * Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`), as kubectl's
 * one-line generators send them (`kubectl create namespace|configmap|secret|deployment|
 * service ...`): the magic `k8s\0`, then a runtime.Unknown whose
 * typeMeta names the kind and whose raw bytes are the object in the k8s.io/api schema.
 *
 * Only the kinds and fields those generators fill are known here (the field numbers are the
 * ones of Kubernetes' generated.proto); fields not in the table are skipped. Answers stay JSON.
 */
import { badRequest, unsupportedMediaType } from './status.js';

type Scalar = 'string' | 'bytes' | 'int32' | 'int64' | 'bool' | 'time' | 'intOrString' | 'quantity';
interface Field {
  name: string;
  type: Scalar | { msg: string };
  repeated?: boolean;
  /** A map<string, V>: entries are messages {key = 1, value = 2}. */
  map?: Scalar;
  /**
   * A pointer field in Go (*int32, *bool): present means set, so a zero value is kept. Other
   * scalar fields are always written by Go's marshaller, and a zero there means "unset"
   * (JSON's omitempty leaves it out), so it is dropped.
   */
  keepZero?: boolean;
}
type Schema = Record<number, Field>;

const S = (name: string): Field => ({ name, type: 'string' });
const I32 = (name: string, keepZero = false): Field => ({ name, type: 'int32', keepZero });
const I64 = (name: string, keepZero = false): Field => ({ name, type: 'int64', keepZero });
const B = (name: string, keepZero = false): Field => ({ name, type: 'bool', keepZero });
const M = (name: string, msg: string, repeated = false): Field => ({
  name,
  type: { msg },
  repeated,
});
const STRS = (name: string): Field => ({ name, type: 'string', repeated: true });
const MAP = (name: string, value: Scalar = 'string'): Field => ({
  name,
  type: 'string',
  map: value,
});

const MESSAGES: Record<string, Schema> = {
  ObjectMeta: {
    1: S('name'),
    2: S('generateName'),
    3: S('namespace'),
    5: S('uid'),
    6: S('resourceVersion'),
    7: I64('generation'),
    8: { name: 'creationTimestamp', type: 'time' },
    11: MAP('labels'),
    12: MAP('annotations'),
    13: M('ownerReferences', 'OwnerReference', true),
    14: STRS('finalizers'),
  },
  OwnerReference: {
    5: S('apiVersion'),
    1: S('kind'),
    3: S('name'),
    4: S('uid'),
    6: B('controller', true),
    7: B('blockOwnerDeletion', true),
  },
  LabelSelector: {
    1: MAP('matchLabels'),
    2: M('matchExpressions', 'LabelSelectorRequirement', true),
  },
  LabelSelectorRequirement: { 1: S('key'), 2: S('operator'), 3: STRS('values') },
  Namespace: {
    1: M('metadata', 'ObjectMeta'),
    2: M('spec', 'NamespaceSpec'),
    3: M('status', 'NamespaceStatus'),
  },
  NamespaceSpec: { 1: STRS('finalizers') },
  NamespaceStatus: { 1: S('phase') },
  ConfigMap: {
    1: M('metadata', 'ObjectMeta'),
    4: B('immutable', true),
    2: MAP('data'),
    3: MAP('binaryData', 'bytes'),
  },
  Secret: {
    1: M('metadata', 'ObjectMeta'),
    5: B('immutable', true),
    2: MAP('data', 'bytes'),
    4: MAP('stringData'),
    3: S('type'),
  },
  Service: {
    1: M('metadata', 'ObjectMeta'),
    2: M('spec', 'ServiceSpec'),
    3: M('status', 'ServiceStatus'),
  },
  ServiceSpec: {
    1: M('ports', 'ServicePort', true),
    2: MAP('selector'),
    3: S('clusterIP'),
    18: STRS('clusterIPs'),
    4: S('type'),
    5: STRS('externalIPs'),
    7: S('sessionAffinity'),
    10: S('externalName'),
    11: S('externalTrafficPolicy'),
    17: S('ipFamilyPolicy'),
    19: STRS('ipFamilies'),
    22: S('internalTrafficPolicy'),
  },
  ServicePort: {
    1: S('name'),
    2: S('protocol'),
    6: S('appProtocol'),
    3: I32('port'),
    4: { name: 'targetPort', type: 'intOrString' },
    5: I32('nodePort'),
  },
  ServiceStatus: { 1: M('loadBalancer', 'Empty') },
  Empty: {},
  Deployment: {
    1: M('metadata', 'ObjectMeta'),
    2: M('spec', 'DeploymentSpec'),
    3: M('status', 'Empty'),
  },
  DeploymentSpec: {
    1: I32('replicas', true),
    2: M('selector', 'LabelSelector'),
    3: M('template', 'PodTemplateSpec'),
    4: M('strategy', 'DeploymentStrategy'),
    5: I32('minReadySeconds'),
    6: I32('revisionHistoryLimit', true),
    7: B('paused'),
    9: I32('progressDeadlineSeconds', true),
  },
  DeploymentStrategy: { 1: S('type'), 2: M('rollingUpdate', 'RollingUpdateDeployment') },
  RollingUpdateDeployment: {
    1: { name: 'maxUnavailable', type: 'intOrString' },
    2: { name: 'maxSurge', type: 'intOrString' },
  },
  PodTemplateSpec: { 1: M('metadata', 'ObjectMeta'), 2: M('spec', 'PodSpec') },
  PodSpec: {
    20: M('initContainers', 'Container', true),
    2: M('containers', 'Container', true),
    3: S('restartPolicy'),
    4: I64('terminationGracePeriodSeconds', true),
    6: S('dnsPolicy'),
    7: MAP('nodeSelector'),
    8: S('serviceAccountName'),
    10: S('nodeName'),
    11: B('hostNetwork'),
    19: S('schedulerName'),
  },
  Container: {
    1: S('name'),
    2: S('image'),
    3: STRS('command'),
    4: STRS('args'),
    5: S('workingDir'),
    6: M('ports', 'ContainerPort', true),
    7: M('env', 'EnvVar', true),
    8: M('resources', 'ResourceRequirements'),
    13: S('terminationMessagePath'),
    20: S('terminationMessagePolicy'),
    14: S('imagePullPolicy'),
    16: B('stdin'),
    17: B('stdinOnce'),
    18: B('tty'),
  },
  ContainerPort: {
    1: S('name'),
    2: I32('hostPort'),
    3: I32('containerPort'),
    4: S('protocol'),
    5: S('hostIP'),
  },
  EnvVar: { 1: S('name'), 2: S('value') },
  ResourceRequirements: { 1: MAP('limits', 'quantity'), 2: MAP('requests', 'quantity') },
  QuantityMsg: { 1: S('string') },
  TimeMsg: { 1: I64('seconds', true), 2: I32('nanos', true) },
  IntOrStringMsg: { 1: I64('type', true), 2: I32('intVal', true), 3: S('strVal') },
  // rbac.authorization.k8s.io/v1 (kubectl create role|clusterrole|rolebinding|clusterrolebinding)
  Role: { 1: M('metadata', 'ObjectMeta'), 2: M('rules', 'PolicyRule', true) },
  ClusterRole: {
    1: M('metadata', 'ObjectMeta'),
    2: M('rules', 'PolicyRule', true),
    3: M('aggregationRule', 'AggregationRule'),
  },
  PolicyRule: {
    1: STRS('verbs'),
    2: STRS('apiGroups'),
    3: STRS('resources'),
    4: STRS('resourceNames'),
    5: STRS('nonResourceURLs'),
  },
  AggregationRule: { 1: M('clusterRoleSelectors', 'LabelSelector', true) },
  RoleBinding: {
    1: M('metadata', 'ObjectMeta'),
    2: M('subjects', 'Subject', true),
    3: M('roleRef', 'RoleRef'),
  },
  Subject: { 1: S('kind'), 2: S('apiGroup'), 3: S('name'), 4: S('namespace') },
  RoleRef: { 1: S('apiGroup'), 2: S('kind'), 3: S('name') },
  // authorization.k8s.io/v1 and authentication.k8s.io/v1 (kubectl auth can-i | whoami)
  SelfSubjectAccessReview: {
    1: M('metadata', 'ObjectMeta'),
    2: M('spec', 'SelfSubjectAccessReviewSpec'),
  },
  SelfSubjectAccessReviewSpec: {
    1: M('resourceAttributes', 'ResourceAttributes'),
    2: M('nonResourceAttributes', 'NonResourceAttributes'),
  },
  ResourceAttributes: {
    1: S('namespace'),
    2: S('verb'),
    3: S('group'),
    4: S('version'),
    5: S('resource'),
    6: S('subresource'),
    7: S('name'),
  },
  NonResourceAttributes: { 1: S('path'), 2: S('verb') },
  SelfSubjectReview: { 1: M('metadata', 'ObjectMeta') },
  RuntimeUnknown: { 1: M('typeMeta', 'RuntimeTypeMeta'), 2: { name: 'raw', type: 'bytes' } },
  RuntimeTypeMeta: { 1: S('apiVersion'), 2: S('kind') },
};

/** The message of each kind (by apiVersion/kind) this decoder knows. */
const KINDS: Record<string, string> = {
  'v1/Namespace': 'Namespace',
  'v1/ConfigMap': 'ConfigMap',
  'v1/Secret': 'Secret',
  'v1/Service': 'Service',
  'apps/v1/Deployment': 'Deployment',
  'rbac.authorization.k8s.io/v1/Role': 'Role',
  'rbac.authorization.k8s.io/v1/ClusterRole': 'ClusterRole',
  'rbac.authorization.k8s.io/v1/RoleBinding': 'RoleBinding',
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': 'ClusterRoleBinding',
  'authorization.k8s.io/v1/SelfSubjectAccessReview': 'SelfSubjectAccessReview',
  'authentication.k8s.io/v1/SelfSubjectReview': 'SelfSubjectReview',
};

const MAGIC = [0x6b, 0x38, 0x73, 0x00];

class Reader {
  pos = 0;
  constructor(readonly buf: Uint8Array) {}

  get done(): boolean {
    return this.pos >= this.buf.length;
  }

  varint(): bigint {
    let result = 0n;
    let shift = 0n;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.buf.length) throw new Error('truncated varint');
      const b = this.buf[this.pos++] as number;
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
    }
    throw new Error('varint too long');
  }

  bytes(): Uint8Array {
    const len = Number(this.varint());
    if (len < 0 || this.pos + len > this.buf.length) throw new Error('truncated field');
    const out = this.buf.subarray(this.pos, this.pos + len);
    this.pos += len;
    return out;
  }

  skip(wire: number): void {
    if (wire === 0) this.varint();
    else if (wire === 1) this.pos += 8;
    else if (wire === 2) this.bytes();
    else if (wire === 5) this.pos += 4;
    else throw new Error(`unsupported wire type ${wire}`);
    if (this.pos > this.buf.length) throw new Error('truncated field');
  }
}

const text = new TextDecoder('utf-8', { fatal: true });

const VARINT_TYPES = new Set<Scalar>(['int32', 'int64', 'bool']);

function scalar(type: Scalar, wire: number, r: Reader, depth: number): unknown {
  if (wire !== (VARINT_TYPES.has(type) ? 0 : 2)) throw new Error(`wire type ${wire} for a ${type}`);
  switch (type) {
    case 'string':
      return text.decode(r.bytes());
    case 'bytes':
      return Buffer.from(r.bytes()).toString('base64');
    case 'int32':
      return Number(BigInt.asIntN(32, r.varint()));
    case 'int64':
      return Number(BigInt.asIntN(64, r.varint()));
    case 'bool':
      return r.varint() !== 0n;
    case 'quantity':
      return (decode('QuantityMsg', r.bytes(), depth + 1) as { string?: string }).string ?? '0';
    case 'time': {
      const t = decode('TimeMsg', r.bytes(), depth + 1) as { seconds?: number };
      return t.seconds ? `${new Date(t.seconds * 1000).toISOString().slice(0, 19)}Z` : null;
    }
    case 'intOrString': {
      const v = decode('IntOrStringMsg', r.bytes(), depth + 1) as {
        type?: number;
        intVal?: number;
        strVal?: string;
      };
      return v.type === 1 ? (v.strVal ?? '') : (v.intVal ?? 0);
    }
  }
}

function mapEntry(bytes: Uint8Array, value: Scalar, depth: number): [string, unknown] {
  const r = new Reader(bytes);
  let key = '';
  let val: unknown = value === 'string' || value === 'bytes' ? '' : undefined;
  while (!r.done) {
    const tag = Number(r.varint());
    const num = tag >>> 3;
    const wire = tag & 7;
    if (num === 1 && wire === 2) key = text.decode(r.bytes());
    else if (num === 2) val = scalar(value, wire, r, depth);
    else r.skip(wire);
  }
  return [key, val];
}

function decode(message: string, bytes: Uint8Array, depth: number): Record<string, unknown> {
  if (depth > 32) throw new Error('nested too deep');
  const schema = MESSAGES[message] as Schema;
  const out: Record<string, unknown> = {};
  const r = new Reader(bytes);
  while (!r.done) {
    const tag = Number(r.varint());
    const num = tag >>> 3;
    const wire = tag & 7;
    const f = schema[num];
    if (!f) {
      r.skip(wire);
      continue;
    }
    if (f.map) {
      if (wire !== 2) throw new Error(`field ${f.name}: wrong wire type`);
      const [k, v] = mapEntry(r.bytes(), f.map, depth);
      const m = (out[f.name] ??= {}) as Record<string, unknown>;
      m[k] = v;
      continue;
    }
    const value =
      typeof f.type === 'object'
        ? decode(f.type.msg, wire === 2 ? r.bytes() : fail(f.name), depth + 1)
        : scalar(f.type, wire, r, depth);
    if (f.repeated) ((out[f.name] ??= []) as unknown[]).push(value);
    else if (value === null) continue;
    else if (!f.keepZero && (value === '' || value === 0 || value === false)) continue;
    else out[f.name] = value;
  }
  return out;
}

function fail(name: string): never {
  throw new Error(`field ${name}: wrong wire type`);
}

/** Decodes a protobuf body into the JSON object it stands for. */
export function decodeProtobufBody(body: Uint8Array): Record<string, unknown> {
  if (body.length < 4 || MAGIC.some((b, i) => body[i] !== b)) {
    throw badRequest('the protobuf body does not start with the Kubernetes magic number');
  }
  let envelope: { typeMeta?: { apiVersion?: string; kind?: string }; raw?: string };
  try {
    envelope = decode('RuntimeUnknown', body.subarray(4), 0) as typeof envelope;
  } catch (e) {
    throw badRequest(`the protobuf body could not be decoded: ${(e as Error).message}`);
  }
  const apiVersion = envelope.typeMeta?.apiVersion ?? '';
  const kind = envelope.typeMeta?.kind ?? '';
  const message = KINDS[`${apiVersion}/${kind}`];
  if (!message) {
    throw unsupportedMediaType(
      `application/json, application/yaml (protobuf is read for ${Object.keys(KINDS).join(', ')})`,
    );
  }
  try {
    const obj = decode(message, Buffer.from(envelope.raw ?? '', 'base64'), 0);
    return { apiVersion, kind, ...obj };
  } catch (e) {
    throw badRequest(`the protobuf body could not be decoded: ${(e as Error).message}`);
  }
}
