package io.sandboxd.daemon.rpc;

/** The node's status and an on-demand check of its whole store. */
final class StatusCalls {
  private final SandboxdService.Operations ops;

  StatusCalls(SandboxdService.Operations ops) {
    this.ops = ops;
  }

  StatusReply status() {
    return ops.status().status();
  }

  VerifyStoreReply verifyStore() {
    return ops.status().verifyStore();
  }
}
