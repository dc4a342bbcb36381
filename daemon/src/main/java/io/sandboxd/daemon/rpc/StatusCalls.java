package io.sandboxd.daemon.rpc;

/** The node's status and an on-demand check of its whole store. */
final class StatusCalls {
  // Null for a service built without node status (tests).
  private final SandboxdService.Operations ops;

  StatusCalls(SandboxdService.Operations ops) {
    this.ops = ops;
  }

  StatusReply status() {
    return operations().status().status();
  }

  VerifyStoreReply verifyStore() {
    return operations().status().verifyStore();
  }

  private SandboxdService.Operations operations() {
    if (ops == null) {
      throw new IllegalStateException("this service was built without node status");
    }
    return ops;
  }
}
