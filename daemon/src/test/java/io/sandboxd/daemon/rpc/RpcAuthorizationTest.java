package io.sandboxd.daemon.rpc;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.grpc.MethodDescriptor;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** The authorization table: every method of both services opts in, nothing else is listed. */
class RpcAuthorizationTest {
  @Test
  void everyMethodOfBothServicesDeclaresItsPermissionAndNoOtherIsListed() {
    Set<String> methods =
        Stream.concat(
                SandboxdGrpc.getServiceDescriptor().getMethods().stream(),
                JcpGrpc.getServiceDescriptor().getMethods().stream())
            .map(MethodDescriptor::getFullMethodName)
            .collect(Collectors.toCollection(TreeSet::new));
    // A new RPC without an entry would be refused to everyone: this names it so it gets one.
    assertEquals(methods, new TreeSet<>(RpcAuthorization.NEEDS.keySet()));
  }

  @Test
  void callsOnARunAreThoseWhoseRequestNamesOne() {
    for (var e : RpcAuthorization.NEEDS.entrySet()) {
      if (e.getValue().onRun()) {
        String request = e.getKey().substring(e.getKey().indexOf('/') + 1);
        assertEquals(
            true,
            Stream.concat(
                    SandboxdGrpc.getServiceDescriptor().getMethods().stream(),
                    JcpGrpc.getServiceDescriptor().getMethods().stream())
                .filter(m -> m.getFullMethodName().equals(e.getKey()))
                .anyMatch(
                    m ->
                        ((io.grpc.protobuf.ProtoMethodDescriptorSupplier) m.getSchemaDescriptor())
                                .getMethodDescriptor()
                                .getInputType()
                                .findFieldByName("run_id")
                            != null),
            request + " acts on a run but its request names none");
      }
    }
  }
}
