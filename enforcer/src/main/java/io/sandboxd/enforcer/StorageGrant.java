package io.sandboxd.enforcer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.JsonReader;
import java.util.List;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeSet;

/**
 * Allow-globs per path mode and the optional sustained-I/O ceilings (ops/s, bytes/s), which are
 * serialized only when set.
 */
public record StorageGrant(
    List<Glob> read,
    List<Glob> write,
    List<Glob> delete,
    OptionalLong maxIops,
    OptionalLong maxReadBps) {

  private static final Set<String> FIELDS =
      Set.of("read", "write", "delete", "max_iops", "max_read_bps");

  public StorageGrant {
    read = List.copyOf(new TreeSet<>(read));
    write = List.copyOf(new TreeSet<>(write));
    delete = List.copyOf(new TreeSet<>(delete));
  }

  /** No paths in any mode, no ceilings. */
  public static StorageGrant empty() {
    return new StorageGrant(
        List.of(), List.of(), List.of(), OptionalLong.empty(), OptionalLong.empty());
  }

  /** The globs for {@code mode}. */
  public List<Glob> globs(PathMode mode) {
    return switch (mode) {
      case READ -> read;
      case WRITE -> write;
      case DELETE -> delete;
    };
  }

  static StorageGrant parse(JsonNode node, String path) {
    JsonReader f = JsonReader.of(node, path, FIELDS, GrantsException.FAULT);
    return new StorageGrant(
        f.list("read", GrantsException.element(Glob::parse)),
        f.list("write", GrantsException.element(Glob::parse)),
        f.list("delete", GrantsException.element(Glob::parse)),
        optional(f.optionalInteger("max_iops", 0, JsonReader.MAX_U64).orElse(null)),
        optional(f.optionalInteger("max_read_bps", 0, JsonReader.MAX_U64).orElse(null)));
  }

  private static OptionalLong optional(Long v) {
    return v == null ? OptionalLong.empty() : OptionalLong.of(v);
  }

  ObjectNode toJson() {
    ObjectNode o = CanonicalJson.mapper().createObjectNode();
    Grants.putTexts(o, "read", read, Glob::text);
    Grants.putTexts(o, "write", write, Glob::text);
    Grants.putTexts(o, "delete", delete, Glob::text);
    maxIops.ifPresent(v -> o.put("max_iops", v));
    maxReadBps.ifPresent(v -> o.put("max_read_bps", v));
    return o;
  }
}
