package io.sandboxd.daemon.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.protobuf.ByteString;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.ListModulesReply;
import io.sandboxd.daemon.rpc.ListModulesRequest;
import io.sandboxd.daemon.rpc.ModuleInfo;
import io.sandboxd.daemon.rpc.PutModuleRequest;
import java.nio.file.Path;
import java.time.Instant;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** `sandboxctl modules put|list`: the modules the daemon holds by address. */
@Command(
    name = "modules",
    description = "Store a module on the daemon by its address, or list the modules it holds.",
    subcommands = {ModulesCommand.Put.class, ModulesCommand.ListHeld.class})
final class ModulesCommand extends CommandGroup {
  /** `modules put FILE`: prints the 64-hex address (submit it as `run b3:<address>`). */
  @Command(
      name = "put",
      description = "Validate and store a module; prints its 64-hex BLAKE3 address.")
  static final class Put extends DaemonAnswer {
    @Parameters(index = "0", paramLabel = "MODULE.wasm", description = "The module.")
    Path module;

    @Override
    String answer(DaemonClient c) throws Input.Unreadable {
      PutModuleRequest req =
          PutModuleRequest.newBuilder().setModule(ByteString.copyFrom(Input.bytes(module))).build();
      return c.stub().putModule(req).getAddress() + "\n";
    }
  }

  /** `modules list [--json]`. */
  @Command(name = "list", description = "List the modules the daemon holds.")
  static final class ListHeld extends DaemonCommand {
    @Option(
        names = "--json",
        description =
            "One JSON object: modules (address, bytes, stored_ms, compiled) and factory_cache"
                + " (hits, misses, entries, capacity).")
    boolean json;

    @Override
    int ask(DaemonClient c) {
      ListModulesReply r = c.stub().listModules(ListModulesRequest.getDefaultInstance());
      if (json) {
        ObjectNode o = CanonicalJson.mapper().createObjectNode();
        ArrayNode mods = o.putArray("modules");
        for (ModuleInfo m : r.getModulesList()) {
          mods.addObject()
              .put("address", m.getAddress())
              .put("bytes", m.getBytes())
              .put("stored_ms", m.getStoredMs())
              .put("compiled", m.getCompiled());
        }
        o.putObject("factory_cache")
            .put("hits", r.getFactoryCacheHits())
            .put("misses", r.getFactoryCacheMisses())
            .put("entries", r.getFactoryCacheEntries())
            .put("capacity", r.getFactoryCacheCapacity());
        JsonOutput.print(o);
        return 0;
      }
      System.out.printf("%-64s  %10s  %-24s  %s%n", "ADDRESS", "BYTES", "STORED", "COMPILED");
      for (ModuleInfo m : r.getModulesList()) {
        System.out.printf(
            "%-64s  %10d  %-24s  %s%n",
            m.getAddress(),
            m.getBytes(),
            Instant.ofEpochMilli(m.getStoredMs()),
            m.getCompiled() ? "yes" : "no");
      }
      return 0;
    }
  }
}
