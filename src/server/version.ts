/** Versions a member reports: etcetera's own, and the etcd version whose API it answers as. */
export const ETCETERA_VERSION = '0.1.0';
/** etcd's server version in status and /version (etcd 3.4's API is the reference). */
export const ETCD_VERSION = '3.4.23';
export const ETCD_CLUSTER_VERSION = '3.4.0';
