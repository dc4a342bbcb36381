package io.sandboxd.enforcer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.JsonReader;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;

/**
 * Information-flow control (WIRE.md §3.3): which sources are untrusted, and which of their origin
 * labels each sink is opened to.
 */
public record FlowGrant(List<SourcePattern> untrusted, List<FlowOpening> open) {

  private static final Set<String> FIELDS = Set.of("untrusted", "open");
  private static final Set<String> OPEN_FIELDS = Set.of("sink", "origins");

  public FlowGrant {
    untrusted = List.copyOf(new TreeSet<>(untrusted));
    open = List.copyOf(new TreeSet<>(open));
  }

  static FlowGrant parse(JsonNode node, String path) {
    JsonReader f = JsonReader.of(node, path, FIELDS, GrantsException.FAULT);
    List<SourcePattern> untrusted =
        f.list("untrusted", GrantsException.element(SourcePattern::parse));
    Set<String> labels = new HashSet<>();
    untrusted.forEach(s -> labels.add(s.label()));
    List<FlowOpening> open =
        f.list(
            "open",
            (n, p) -> {
              JsonReader o = JsonReader.of(n, p, OPEN_FIELDS, GrantsException.FAULT);
              SinkPattern sink =
                  GrantsException.parsed(o.pathOf("sink"), o.string("sink"), SinkPattern::parse);
              List<String> origins =
                  o.list(
                      "origins",
                      (x, q) -> {
                        String label =
                            GrantsException.element(SourcePattern::parse).apply(x, q).label();
                        if (!labels.contains(label)) {
                          throw new GrantsException(
                              q, "origin " + label + " is not a pattern of flow.untrusted");
                        }
                        return label;
                      });
              return new FlowOpening(sink, origins);
            });
    return new FlowGrant(untrusted, open);
  }

  ObjectNode toJson() {
    ObjectNode o = CanonicalJson.mapper().createObjectNode();
    Grants.putTexts(o, "untrusted", untrusted, SourcePattern::label);
    ArrayNode op = o.putArray("open");
    for (FlowOpening x : open) {
      ObjectNode e = op.addObject();
      e.put("sink", x.sink().label());
      Grants.putTexts(e, "origins", x.origins(), Function.identity());
    }
    return o;
  }
}
