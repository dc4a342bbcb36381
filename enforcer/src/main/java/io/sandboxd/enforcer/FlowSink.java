package io.sandboxd.enforcer;

/** Where a run may send what it has read; a sink call is checked against the run's taint. */
public sealed interface FlowSink permits FlowSink.Egress, FlowSink.Exec {

  /** An outbound connection. */
  record Egress(Endpoint endpoint) implements FlowSink {}

  /** A subprocess. */
  record Exec(ExecRequest program) implements FlowSink {}
}
