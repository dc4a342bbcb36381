package io.sandboxd.enforcer;

/** Where data a run reads comes from; the flow grant decides whether it taints the run. */
public sealed interface FlowSource
    permits FlowSource.StorageRead,
        FlowSource.KvRead,
        FlowSource.ExecOutput,
        FlowSource.NetResponse {

  /** A storage read of a normalized path. */
  record StorageRead(StoragePath path) implements FlowSource {}

  /** A kv get of a key. */
  record KvRead(Bytes key) implements FlowSource {}

  /** The output of a program the run executed. */
  record ExecOutput(ExecRequest program) implements FlowSource {}

  /** The response of an egress call. */
  record NetResponse(Endpoint endpoint) implements FlowSource {}
}
