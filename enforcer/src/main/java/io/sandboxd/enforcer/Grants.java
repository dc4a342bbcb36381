package io.sandboxd.enforcer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.CanonicalJsonException;
import io.sandboxd.attest.JsonReader;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;

/**
 * The complete grant set of a unit (capabilities.md; WIRE.md §2.1): five mandatory parts and the
 * optional process, browser, display and flow parts, which are omitted from the canonical form when
 * absent so older grants keep their grants_id.
 */
public record Grants(
    ComputeGrant compute,
    StorageGrant storage,
    NetworkGrant network,
    KvGrant kv,
    HostGrant host,
    Optional<ProcessGrant> process,
    Optional<BrowserGrant> browser,
    Optional<DisplayGrant> display,
    Optional<FlowGrant> flow) {

  private static final Set<String> FIELDS =
      Set.of(
          "compute", "storage", "network", "kv", "host", "process", "browser", "display", "flow");

  public Grants {
    Objects.requireNonNull(compute, "compute");
    Objects.requireNonNull(storage, "storage");
    Objects.requireNonNull(network, "network");
    Objects.requireNonNull(kv, "kv");
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(process, "process");
    Objects.requireNonNull(browser, "browser");
    Objects.requireNonNull(display, "display");
    Objects.requireNonNull(flow, "flow");
  }

  /** The default, empty grant set: nothing but Cpu dispatch. */
  public static Grants empty() {
    return new Grants(
        ComputeGrant.empty(),
        StorageGrant.empty(),
        NetworkGrant.empty(),
        KvGrant.empty(),
        HostGrant.empty(),
        Optional.empty(),
        Optional.empty(),
        Optional.empty(),
        Optional.empty());
  }

  /** Parses a grant document strictly from UTF-8 JSON; errors name the JSON path at fault. */
  public static Grants parse(byte[] utf8) {
    JsonNode node;
    try {
      node = CanonicalJson.parse(utf8);
    } catch (CanonicalJsonException e) {
      throw new GrantsException("$", e.getMessage(), e);
    }
    return parse(node);
  }

  /**
   * Reads a grant tree strictly: unknown fields, wrong types, negative, fractional or too large
   * numbers and malformed endpoints, origins, globs and patterns are refused with the JSON path; an
   * absent or {@code null} field reads as its deny-by-default value.
   */
  public static Grants parse(JsonNode json) {
    JsonReader f = JsonReader.of(json, "$", FIELDS, GrantsException.FAULT);
    return new Grants(
        f.optional("compute")
            .map(n -> ComputeGrant.parse(n, "$.compute"))
            .orElse(ComputeGrant.empty()),
        f.optional("storage")
            .map(n -> StorageGrant.parse(n, "$.storage"))
            .orElse(StorageGrant.empty()),
        f.optional("network")
            .map(n -> NetworkGrant.parse(n, "$.network"))
            .orElse(NetworkGrant.empty()),
        f.optional("kv").map(n -> KvGrant.parse(n, "$.kv")).orElse(KvGrant.empty()),
        f.optional("host").map(n -> HostGrant.parse(n, "$.host")).orElse(HostGrant.empty()),
        f.optional("process").map(n -> ProcessGrant.parse(n, "$.process")),
        f.optional("browser").map(n -> BrowserGrant.parse(n, "$.browser")),
        f.optional("display").map(n -> DisplayGrant.parse(n, "$.display")),
        f.optional("flow").map(n -> FlowGrant.parse(n, "$.flow")));
  }

  /** The WIRE.md §2.2 tree: set-valued lists sorted and de-duplicated, unset parts omitted. */
  public JsonNode canonicalTree() {
    ObjectNode o = CanonicalJson.mapper().createObjectNode();
    o.set("compute", compute.toJson());
    o.set("storage", storage.toJson());
    o.set("network", network.toJson());
    o.set("kv", kv.toJson());
    o.set("host", host.toJson());
    process.ifPresent(p -> o.set("process", p.toJson()));
    browser.ifPresent(b -> o.set("browser", b.toJson()));
    display.ifPresent(d -> o.set("display", d.toJson()));
    flow.ifPresent(x -> o.set("flow", x.toJson()));
    return o;
  }

  /**
   * Writes a set-valued part as {@code field}: a JSON array of each item's text, in the order
   * {@code items} keeps (the parts store their lists canonical already).
   */
  static <T> void putTexts(
      ObjectNode o, String field, Collection<T> items, Function<? super T, String> text) {
    ArrayNode a = o.putArray(field);
    items.forEach(x -> a.add(text.apply(x)));
  }

  /** JCS bytes of {@link #canonicalTree()}. */
  public byte[] canonicalBytes() {
    return CanonicalJson.canonicalize(canonicalTree());
  }

  /** BLAKE3-256 of the canonical bytes, 64 lowercase hex, no prefix (Q1). */
  public String grantsId() {
    return canonical().id();
  }

  /** The canonical text and grants_id, from one canonicalization: for callers that keep both. */
  public Canonical canonical() {
    byte[] bytes = canonicalBytes();
    return new Canonical(new String(bytes, StandardCharsets.UTF_8), Blake3.hex(bytes));
  }

  /** A grant set's JCS text and its grants_id (BLAKE3 of that text's UTF-8 bytes). */
  public record Canonical(String text, String id) {}
}
