package io.sandboxd.enforcer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.JsonReader;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/** Subprocess execution: the exec switch, the program allowlist and the concurrency bound. */
public record ProcessGrant(boolean exec, List<ProgramRef> programs, long maxProcesses) {

  private static final Set<String> FIELDS = Set.of("exec", "programs", "max_processes");

  public ProcessGrant {
    programs = List.copyOf(new TreeSet<>(programs));
    if (maxProcesses < 0 || maxProcesses > JsonReader.MAX_U32) {
      throw new IllegalArgumentException("max_processes " + maxProcesses + " is not a u32");
    }
  }

  static ProcessGrant parse(JsonNode node, String path) {
    JsonReader f = JsonReader.of(node, path, FIELDS, GrantsException.FAULT);
    return new ProcessGrant(
        f.bool("exec", false),
        f.list("programs", GrantsException.element(ProgramRef::new)),
        f.u32("max_processes", 0));
  }

  ObjectNode toJson() {
    ObjectNode o = CanonicalJson.mapper().createObjectNode();
    o.put("exec", exec);
    Grants.putTexts(o, "programs", programs, ProgramRef::text);
    o.put("max_processes", maxProcesses);
    return o;
  }
}
