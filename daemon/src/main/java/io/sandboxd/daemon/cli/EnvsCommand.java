package io.sandboxd.daemon.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.EnvironmentInfo;
import io.sandboxd.daemon.rpc.ListEnvironmentsReply;
import io.sandboxd.daemon.rpc.ListEnvironmentsRequest;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * `sandboxctl envs`: the environments the daemon offers, each with its manifest address and whether
 * its image is pinned; {@code --json} adds the node-signed manifest envelope.
 */
@Command(name = "envs", description = "List the environments the daemon offers.")
final class EnvsCommand extends DaemonCommand {
  @Option(
      names = "--json",
      description = "One JSON array of {name, address, pinned, manifest (the signed envelope)}.")
  boolean json;

  @Override
  int ask(DaemonClient c) {
    ListEnvironmentsReply reply =
        c.stub().listEnvironments(ListEnvironmentsRequest.getDefaultInstance());
    if (json) {
      ArrayNode a = CanonicalJson.mapper().createArrayNode();
      for (EnvironmentInfo e : reply.getEnvironmentsList()) {
        ObjectNode o = a.addObject();
        o.put("name", e.getName());
        o.put("address", e.getAddress());
        o.put("pinned", e.getPinned());
        o.set("manifest", CanonicalJson.parse(e.getManifest()));
      }
      JsonOutput.print(a);
    } else {
      System.out.println("NAME\tADDRESS\tPINNED");
      for (EnvironmentInfo e : reply.getEnvironmentsList()) {
        System.out.println(
            e.getName()
                + "\tb3:"
                + e.getAddress()
                + "\t"
                + (e.getPinned() ? "pinned" : "unpinned"));
      }
    }
    return 0;
  }
}
