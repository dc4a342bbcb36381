package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.protobuf.ByteString;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.GetRunRequest;
import io.sandboxd.daemon.rpc.ImportRunRequest;
import java.util.function.Consumer;

/** Durable-run bundles as the tests tamper with them and offer them to a node for import. */
final class Bundles {
  private Bundles() {}

  /** {@code bundle} with {@code change} made to its JSON, in canonical form again. */
  static byte[] edit(byte[] bundle, Consumer<ObjectNode> change) {
    ObjectNode o = (ObjectNode) CanonicalJson.parse(bundle);
    change.accept(o);
    return CanonicalJson.canonicalize(o);
  }

  /**
   * Imports {@code bundle} on {@code node}, which must refuse it as INVALID_ARGUMENT and hold
   * nothing of run {@code run} afterwards: the refusal.
   */
  static StatusRuntimeException refusedImport(DaemonClient node, byte[] bundle, String run) {
    StatusRuntimeException e =
        assertThrows(
            StatusRuntimeException.class,
            () ->
                node.stub()
                    .importRun(
                        ImportRunRequest.newBuilder()
                            .setBundle(ByteString.copyFrom(bundle))
                            .build()));
    assertEquals(Status.Code.INVALID_ARGUMENT, e.getStatus().getCode(), e.getMessage());
    assertEquals(
        Status.Code.NOT_FOUND,
        assertThrows(
                StatusRuntimeException.class,
                () -> node.stub().getRun(GetRunRequest.newBuilder().setRunId(run).build()))
            .getStatus()
            .getCode(),
        "nothing half-imported");
    return e;
  }
}
