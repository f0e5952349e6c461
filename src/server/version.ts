/** Versions a member reports: etcetera's own, and the etcd version whose API it answers as. */
export const ETCETERA_VERSION = '0.1.0';
/**
 * etcd's server version in status (gRPC and JSON) and /version. etcd 3.4's API is the
 * reference; the patch level is one kube-apiserver accepts for its consistent reads from the
 * watch cache (it requires etcd 3.4.31+ or 3.5.13+, read from Maintenance.Status).
 */
export const ETCD_VERSION = '3.4.34';
export const ETCD_CLUSTER_VERSION = '3.4.0';
